// One error type for every refusal, rendered in the shape the interface promises (spec "Errors", CONTRACT
// section 2):
//   Shape A (portal, key and webhook management, operator API): {message, error, code?, data?}
//   Shape B (developer API /api/v2):                              {success:false, error, code?, reason?, data?}
// Handlers and services throw ApiError; nothing else builds an error body. A database that cannot be reached
// (db/unavailable.ts) is not a fault of ours: whatever meets it answers 503 with Retry-After, in either shape.
import { isDatabaseUnavailable } from './db/unavailable.ts';

export interface ApiErrorOptions {
  code?: string;
  reason?: string;
  data?: unknown;
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code?: string;
  readonly reason?: string;
  readonly data?: unknown;
  readonly headers?: Record<string, string>;

  constructor(status: number, message: string, options: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = options.code;
    this.reason = options.reason;
    this.data = options.data;
    this.headers = options.headers;
  }

  static badRequest(message: string, options?: ApiErrorOptions) {
    return new ApiError(400, message, options);
  }
  static unauthorized(message: string, code?: string) {
    return new ApiError(401, message, { code });
  }
  static forbidden(message = 'You do not have permission to do this', code = 'FORBIDDEN') {
    return new ApiError(403, message, { code });
  }
  static notFound(what = 'Resource') {
    return new ApiError(404, `${what} not found`);
  }
  static conflict(message: string, code?: string) {
    return new ApiError(409, message, { code });
  }
}

/** Seconds a client is asked to wait (Retry-After) when the database cannot be reached. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * The refusal an error outside our control stands for, if it is one: the database cannot be reached now
 * (a restart, a failover, every connection busy), so 503 with Retry-After rather than a 500.
 */
export function unavailableError(error: unknown): ApiError | undefined {
  if (!isDatabaseUnavailable(error)) return undefined;
  return new ApiError(503, 'The service is briefly unavailable; retry after the Retry-After seconds', {
    code: 'SERVICE_UNAVAILABLE',
    headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  });
}

export type ErrorShape = 'A' | 'B';

/** Shape B belongs to the developer API; every other path answers in Shape A. */
export function shapeForPath(url: string): ErrorShape {
  return url.startsWith('/api/v2/') || url === '/api/v2' ? 'B' : 'A';
}

// Spec, Shape A rule 3: on a 5xx only these codes survive; every other code and all data are withheld.
const CODES_KEPT_ON_5XX = new Set(['TOKEN_EXPIRED', 'TOKEN_INVALID', 'TOKEN_REVOKED', 'SESSION_EXPIRED']);
export const INTERNAL_ERROR_MESSAGE = 'Internal server error';

export interface RenderedError {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * Turns anything thrown into the status and body of its interface's shape. A database that cannot be reached
 * is a 503 with Retry-After (unavailableError); any other error that is not an ApiError (a bug's TypeError,
 * a closed database) is a 500 with generic text. The driver's message never leaves.
 */
export function renderError(error: unknown, shape: ErrorShape): RenderedError {
  const apiError = error instanceof ApiError ? error : unavailableError(error);
  const status = apiError?.status ?? 500;
  const headers = apiError?.headers ?? {};

  if (shape === 'A') {
    if (status >= 500) {
      const body: Record<string, unknown> = {
        message: INTERNAL_ERROR_MESSAGE,
        error: INTERNAL_ERROR_MESSAGE,
      };
      if (apiError?.code && CODES_KEPT_ON_5XX.has(apiError.code)) body.code = apiError.code;
      return { status, body, headers };
    }
    const message = apiError!.message;
    const body: Record<string, unknown> = { message, error: message };
    if (apiError!.code) body.code = apiError!.code;
    if (apiError!.data !== undefined) body.data = apiError!.data;
    return { status, body, headers };
  }

  // Shape B: a deliberate ApiError keeps its code even on a 5xx (503 TRIAL_LIMIT_REACHED tells the client
  // to back off and retry); only an unexpected failure is reduced to generic text.
  if (!apiError) return { status, body: { success: false, error: INTERNAL_ERROR_MESSAGE }, headers };
  const body: Record<string, unknown> = { success: false, error: apiError.message };
  if (apiError.code) body.code = apiError.code;
  if (apiError.reason) body.reason = apiError.reason;
  if (apiError.data !== undefined) body.data = apiError.data;
  return { status, body, headers };
}
