// The JSON body parser every route uses: Fastify's own (secure-json-parse, which refuses prototype
// poisoning), behind a linear scan that refuses nesting deeper than any request of ours needs. Everything
// after parsing that walks a body (the text check, validation, the handlers) may then recurse safely: a
// 32 KB body of 8,000 brackets once overflowed the stack of a recursive walk and answered 500.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

/** Deeper than any body our schemas describe (call flows nest steps in branches) with room to spare. */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The deepest nesting of objects and arrays in JSON text, counted once over its characters. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return deepest;
}

/** Replaces the app's JSON parser with the depth-bounded one (same options, same refusals otherwise). */
export function boundJsonDepth(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonDepth(body as string) > MAX_JSON_DEPTH) {
      done(ApiError.badRequest(`The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    parse(request, body as string, done);
  });
}
