// Typed errors. Every refusal the API answers becomes a CommsApiError of the class for its status, carrying
// the API's `code` and `reason` (developer API, Shape B) and how long to wait before trying again. Failures
// without an answer are CommsConnectionError (the request may or may not have arrived) or CommsTimeoutError.

export class CommsError extends Error {
  override name = 'CommsError';
}

export interface ApiErrorDetails {
  status: number;
  code?: string;
  reason?: string;
  data?: unknown;
  /** On 429, 503 and 409: seconds to wait before retrying (`Retry-After`, else `RateLimit-Reset`), when given. */
  retryAfter?: number;
  headers: Headers;
  /** The answer's body as sent (parsed JSON, or text when it was not JSON). */
  body: unknown;
}

export class CommsApiError extends CommsError {
  override name = 'CommsApiError';
  readonly status: number;
  /** The API's machine-readable code, e.g. `PAID_LIMIT_REACHED`; absent on plain validation failures. */
  readonly code?: string;
  /** Refines `code`, e.g. `lifetime` or `burst` on TRIAL_LIMIT_REACHED. */
  readonly reason?: string;
  /** Structured detail where the API gives it (contact import's `data.errors`). */
  readonly data?: unknown;
  readonly retryAfter?: number;
  readonly headers: Headers;
  readonly body: unknown;

  constructor(message: string, details: ApiErrorDetails) {
    super(message);
    this.status = details.status;
    this.code = details.code;
    this.reason = details.reason;
    this.data = details.data;
    this.retryAfter = details.retryAfter;
    this.headers = details.headers;
    this.body = details.body;
  }
}

export class BadRequestError extends CommsApiError {
  override name = 'BadRequestError';
}
export class AuthenticationError extends CommsApiError {
  override name = 'AuthenticationError';
}
export class PaymentRequiredError extends CommsApiError {
  override name = 'PaymentRequiredError';
}
export class PermissionDeniedError extends CommsApiError {
  override name = 'PermissionDeniedError';
}
export class NotFoundError extends CommsApiError {
  override name = 'NotFoundError';
}
export class ConflictError extends CommsApiError {
  override name = 'ConflictError';
}
export class UnprocessableEntityError extends CommsApiError {
  override name = 'UnprocessableEntityError';
}
export class RateLimitError extends CommsApiError {
  override name = 'RateLimitError';
}
export class InternalServerError extends CommsApiError {
  override name = 'InternalServerError';
}

const BY_STATUS: Record<number, typeof CommsApiError> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: PaymentRequiredError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

/** The error for a refusal, from its status, headers and body (either error shape). */
export function apiError(status: number, headers: Headers, body: unknown): CommsApiError {
  const fields = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const message = text(fields.message) ?? text(fields.error) ?? text(body) ?? `HTTP ${status}`;
  const ErrorClass = BY_STATUS[status] ?? (status >= 500 ? InternalServerError : CommsApiError);
  return new ErrorClass(message, {
    status,
    code: text(fields.code),
    reason: text(fields.reason),
    data: fields.data,
    retryAfter: status === 429 || status === 503 || status === 409 ? waitSeconds(headers) : undefined,
    headers,
    body,
  });
}

/** `Retry-After` (seconds or an HTTP date), else `RateLimit-Reset` (seconds), as seconds from now. */
export function waitSeconds(headers: Headers, now = Date.now()): number | undefined {
  const retryAfter = headers.get('retry-after');
  if (retryAfter !== null) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds;
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.max(0, (date - now) / 1000);
  }
  const reset = Number(headers.get('ratelimit-reset') ?? Number.NaN);
  return Number.isFinite(reset) && reset >= 0 ? reset : undefined;
}

/** No answer came: refused, reset or dropped. Whether the server acted is unknown. */
export class CommsConnectionError extends CommsError {
  override name = 'CommsConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** No answer within the request's timeout. */
export class CommsTimeoutError extends CommsConnectionError {
  override name = 'CommsTimeoutError';
}

/** A webhook whose signature, timestamp or headers do not check out. */
export class WebhookVerificationError extends CommsError {
  override name = 'WebhookVerificationError';
}
