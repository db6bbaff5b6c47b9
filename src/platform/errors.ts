// One error type for every refusal, rendered in the shape the interface promises (spec "Errors", CONTRACT
// section 2):
//   Shape A (portal, key and webhook management, operator API): {message, error, code?, data?}
//   Shape B (developer API /api/v2):                              {success:false, error, code?, reason?, data?}
// Handlers and services throw ApiError; nothing else builds an error body.

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
 * Turns anything thrown into the status and body of its interface's shape. An error that is not an
 * ApiError (a bug's TypeError, a lost database) is a 500 with generic text: its message never leaves.
 */
export function renderError(error: unknown, shape: ErrorShape): RenderedError {
  const apiError = error instanceof ApiError ? error : undefined;
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
