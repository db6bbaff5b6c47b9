// The console's one way to the server: the portal API (/v2/portal) and the management paths (/api/api-keys,
// /api/webhooks), signed in by the HttpOnly portal_token cookie. The browser's own Fetch Metadata (Sec-Fetch-Site:
// same-origin) is what lets its writes through the server's cross-site check (docs/auth.md). Errors arrive in Shape A ({message, error, code?, data?})
// and are thrown as ApiProblem with the server's message, which the pages show as it is.
//
// Two refusals are handled here once for every page:
//   401 TOKEN_EXPIRED          refresh the session once (POST /auth/token/refresh), then retry the call;
//                              any other 401, or a refresh that fails, signs the user out to /login.
//   403 MFA_STEP_UP_REQUIRED   ask the user for a two-factor code (the StepUpDialog), verify it, retry.

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T[];
  pagination: { page: number | null; limit: number; total: number | null; totalPages: number | null };
  next_cursor: string | null;
}

type Handlers = {
  /** The session is gone: show the sign-in page. */
  signedOut: () => void;
  /** Resolves with a code the user typed, or null when they cancelled. */
  askForCode: () => Promise<string | null>;
};

let handlers: Handlers = { signedOut: () => {}, askForCode: async () => null };
export function setApiHandlers(next: Handlers): void {
  handlers = next;
}

let refreshing: Promise<boolean> | null = null;
/** One refresh at a time however many calls found the token expired together. */
function refreshOnce(): Promise<boolean> {
  refreshing ??= send('POST', '/v2/portal/auth/token/refresh')
    .then((res) => res.ok)
    .catch(() => false)
    .finally(() => {
      setTimeout(() => {
        refreshing = null;
      }, 0);
    });
  return refreshing;
}

function send(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  return fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
}

async function problemOf(res: Response): Promise<ApiProblem> {
  let body: { message?: string; error?: string; code?: string; data?: unknown } = {};
  try {
    body = await res.json();
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  return new ApiProblem(res.status, body.message ?? body.error ?? `HTTP ${res.status}`, body.code, body.data);
}

export interface CallOptions {
  /** A sign-in page's own calls: a 401 is the answer to show, not a reason to sign out. */
  anonymous?: boolean;
}

/** Calls the server and returns the parsed JSON body (the whole envelope). */
export async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<T> {
  let res = await send(method, path, body);
  if (res.status === 401 && !options.anonymous) {
    const problem = await problemOf(res);
    if (problem.code === 'TOKEN_EXPIRED' && (await refreshOnce())) {
      res = await send(method, path, body);
    }
    if (res.status === 401) {
      handlers.signedOut();
      throw problem;
    }
  }
  if (res.status === 403) {
    const problem = await problemOf(res.clone());
    if (problem.code === 'MFA_STEP_UP_REQUIRED') {
      const code = await handlers.askForCode();
      if (code === null) throw problem;
      await call('POST', '/v2/portal/auth/2fa/verify', { code });
      res = await send(method, path, body);
    }
  }
  if (!res.ok) throw await problemOf(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** The `data` of a `{success:true, data}` answer. */
export async function data<T>(
  method: string,
  path: string,
  body?: unknown,
  options?: CallOptions,
): Promise<T> {
  return (await call<{ data: T }>(method, path, body, options)).data;
}

export const get = <T>(path: string) => data<T>('GET', path);
export const page = <T>(path: string) => call<Page<T>>('GET', path);

/** A query string from the defined values only. */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
