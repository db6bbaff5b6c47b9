// Which failures mean "the database cannot be reached right now" (a restart, a failover, a network cut, a
// full pool) rather than a fault of ours: a request that meets one is answered 503 with Retry-After
// (errors.ts) and /health reports the database unreachable. Everything here passes by itself: the pool opens
// new connections and the listening connection is made again (index.ts). An error we caused ourselves (a
// closed pool or PGlite at shutdown, a bad statement) is not one of these: it stays a 500.

// SQLSTATEs: class 08 (connection exception: cannot connect, connection lost) but 08P01 (a protocol
// violation is a bug); 57P01 admin_shutdown (a fast stop or restart ends every session), 57P02
// crash_shutdown, 57P03 cannot_connect_now (the server is starting or stopping), 53300 too_many_connections.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);

// The socket's own failures on the way to the server.
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

// node-postgres says these in words, without a code: the server went away mid-session, a connection could
// not be had within connectionTimeoutMillis (a server that does not answer, or every connection busy), or
// a held connection had already failed.
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/,
];

/** True when `error` says the database cannot be reached now and a retry shortly may well succeed. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_ERRNOS.has(code)) return true;
    if (code.startsWith('08') && code !== '08P01') return true;
  }
  // A connect to a name with several addresses fails with each of them at once (Node's AggregateError).
  if (Array.isArray(errors) && errors.length > 0 && errors.every(isDatabaseUnavailable)) return true;
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message));
}
