// CSV reading for contact import: a stream in, one string array per record out, never the whole file held
// as objects.
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { ApiError } from '../../platform/errors.ts';

/**
 * Parses CSV from a stream, record by record. The delimiter (comma, semicolon or tab) is sniffed from the
 * header line; a BOM and CRLF line ends are handled; quoted fields may hold delimiters and newlines.
 */
export async function* csvRows(stream: Readable): AsyncGenerator<string[]> {
  const iterator = stream[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headText = '';
  // Read until the first line is complete (or the stream ends) to choose the delimiter.
  while (!headText.includes('\n')) {
    const next = await iterator.next();
    if (next.done) break;
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    head.push(chunk);
    headText += chunk.toString('utf8');
    if (headText.length > 1_000_000) break;
  }
  const delimiter = sniffDelimiter(headText.split('\n')[0] ?? '');
  const parser = parse({
    bom: true,
    delimiter,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    max_record_size: 1_000_000,
  });
  const feed = (async () => {
    try {
      for (const chunk of head)
        if (!parser.write(chunk)) await new Promise((resolve) => parser.once('drain', resolve));
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        if (!parser.write(next.value)) await new Promise((resolve) => parser.once('drain', resolve));
      }
      parser.end();
    } catch (error) {
      parser.destroy(error as Error);
    }
  })();
  try {
    for await (const record of parser) yield record as string[];
  } catch (error) {
    throw ApiError.badRequest(`The CSV could not be read: ${(error as Error).message}`);
  }
  await feed;
}

function sniffDelimiter(headerLine: string): string {
  const counts = { ',': 0, ';': 0, '\t': 0 };
  let quoted = false;
  for (const char of headerLine) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && char in counts) counts[char as keyof typeof counts]++;
  }
  const [best] = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return best![1] > 0 ? best![0] : ',';
}
