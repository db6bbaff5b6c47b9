// The one logger. Logs are read by operators and shipped to log stores, so they must never carry a secret or
// a customer's data: an error is logged as its type, message, code and stack only (a database error's
// `detail`, `query`, `params`/`parameters`, `where` and any other property, which repeat statement values such
// as e-mails, hashes and phone numbers, are dropped), a request as its method, path and address (no query
// string, no headers, no body). Known secret field names are redacted wherever they appear, as a second net.
import { createRequire } from 'node:module';
import { type DestinationStream, type Logger, pino } from 'pino';

/** Field names that hold a secret or credential, redacted at any depth pino can reach. */
const SECRET_FIELDS = [
  'password',
  'newPassword',
  'currentPassword',
  'password_hash',
  'secret',
  'secret_sealed',
  'previous_secret_sealed',
  'key',
  'key_hash',
  'token',
  'tempToken',
  'authorization',
  'cookie',
  'x-api-key',
  'recoveryCodes',
];
const REDACT_PATHS = [
  ...SECRET_FIELDS.map((field) => `["${field}"]`),
  ...SECRET_FIELDS.map((field) => `*["${field}"]`),
  ...SECRET_FIELDS.map((field) => `*.*["${field}"]`),
  'req.headers',
  'res.headers',
];

/**
 * A database error's message quotes the offending value (`invalid input syntax for type integer: "…"`); only
 * quoted names that look like identifiers (constraints, columns, types) are kept.
 */
function withoutQuotedValues(message: string): string {
  return message.replace(/"([^"]*)"/g, (quoted, inner: string) =>
    /^[a-z_][a-z0-9_.]*$/.test(inner) ? quoted : '"[value]"',
  );
}

/** What of an error may be logged: never its attached values. */
export function serializeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error, message: 'non-error thrown' };
  const fromDatabase = 'severity' in error;
  const message = fromDatabase ? withoutQuotedValues(error.message) : error.message;
  const serialized: Record<string, unknown> = { type: error.name, message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') serialized.code = code;
  // The stack's first line repeats the message.
  if (error.stack) serialized.stack = fromDatabase ? withoutQuotedValues(error.stack) : error.stack;
  if (error.cause instanceof Error) serialized.cause = serializeError(error.cause);
  return serialized;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: {
        // Paths only: query strings carry phone numbers and other personal data (e.g. ?number=+1…).
        req: (request: { method?: string; url?: string; ip?: string }) => ({
          method: request.method,
          path: request.url?.split('?')[0],
          remoteAddress: request.ip,
        }),
        res: (reply: { statusCode?: number }) => ({ statusCode: reply.statusCode }),
        err: serializeError,
        error: serializeError,
      },
    },
    destination,
  );
}

/**
 * How logs are written: readable lines for a person at a terminal while developing, JSON lines for everything
 * else (a log shipper, a pipe, a file, systemd's journal, and production even on a terminal, where the lines
 * must read the same as in the log store).
 */
export function logFormat(stdout: { isTTY?: boolean }, appEnv: string): 'pretty' | 'json' {
  return stdout.isTTY === true && appEnv !== 'production' ? 'pretty' : 'json';
}

/**
 * Where the server's logger writes: `stdout` itself for JSON (undefined: pino's own fast destination), or
 * pino-pretty in this thread, writing to `stdout`, when logFormat says pretty. pino-pretty is loaded only then,
 * so a production start does not pay for it. Redaction and the serializers run before it, as for JSON.
 */
export function terminalDestination(
  stdout: NodeJS.WritableStream & { isTTY?: boolean },
  appEnv: string,
): DestinationStream | undefined {
  if (logFormat(stdout, appEnv) === 'json') return undefined;
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
  return pretty.build({
    destination: stdout,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
}
