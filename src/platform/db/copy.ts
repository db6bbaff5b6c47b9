// Rows written as PostgreSQL's COPY text format (https://www.postgresql.org/docs/15/sql-copy.html, "Text
// Format"), for `Database.copyIn`: one line per row, columns separated by tabs, NULL as `\N`. Within a value
// a backslash, a tab, a newline and a carriage return are backslash-escaped, which is all the format needs
// (an end-of-data marker `\.` cannot appear, since every backslash of a value is doubled). The text format
// rather than CSV because its escapes are per character, so a value never needs quoting or a second pass.

/** A value COPY can take as text; objects (jsonb) are the caller's to serialise, as `JSON.stringify`. */
export type CopyValue = string | number | bigint | boolean | Date | null;

/**
 * Refused values: PostgreSQL's text cannot hold NUL, and a string with a lone UTF-16 surrogate has no UTF-8
 * form (Node would send U+FFFD instead, silently changing the value).
 */
export class CopyValueError extends Error {
  override readonly name = 'CopyValueError';
}

// Everything COPY's text format reads specially, plus NUL (refused) and lone surrogates (checked apart).
const SPECIAL = /[\\\t\n\r\0\uD800-\uDFFF]/;
const SPECIAL_ALL = /[\\\t\n\r\0]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function escapeText(value: string): string {
  if (!SPECIAL.test(value)) return value;
  if (LONE_SURROGATE.test(value)) throw new CopyValueError('A value for COPY has a lone UTF-16 surrogate');
  return value.replace(SPECIAL_ALL, (character) => {
    const escaped = ESCAPES[character];
    if (escaped === undefined) throw new CopyValueError('A value for COPY contains a NUL character');
    return escaped;
  });
}

function copyField(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value === 'string') return escapeText(value);
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new CopyValueError('A date for COPY is invalid');
    return value.toISOString();
  }
  return String(value);
}

/** Characters of COPY text per chunk handed to the engine: bounded, and few enough chunks to be cheap. */
const CHUNK_CHARACTERS = 256 * 1024;

/**
 * The rows as COPY text, each row's values in the order of the statement's columns, in chunks of whole rows.
 * A refused value throws before the chunk that holds it is yielded; callers encode every chunk before they
 * start the COPY, so a refusal sends nothing.
 */
export function copyChunks(rows: readonly (readonly CopyValue[])[], columns: number): string[] {
  const chunks: string[] = [];
  let text = '';
  for (const row of rows) {
    if (row.length !== columns)
      throw new CopyValueError(`A row for COPY has ${row.length} of ${columns} values`);
    for (let i = 0; i < row.length; i++) text += (i === 0 ? '' : '\t') + copyField(row[i]!);
    text += '\n';
    if (text.length >= CHUNK_CHARACTERS) {
      chunks.push(text);
      text = '';
    }
  }
  if (text !== '') chunks.push(text);
  return chunks;
}

/** `COPY table (columns) FROM <source>`, every name quoted as an identifier. */
export function copyStatement(table: string, columns: readonly string[], source: string): string {
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const target = table.split('.').map(quote).join('.');
  return `COPY ${target} (${columns.map(quote).join(', ')}) FROM ${source}`;
}
