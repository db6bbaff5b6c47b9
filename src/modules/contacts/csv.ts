// CSV reading for contact import: a stream in, the records of each chunk out as one array, never the whole
// file held as objects. Records come in arrays rather than one at a time because an import reads a hundred
// thousand of them: a promise per record (the parser's async iterator) cost more than parsing the record.
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ApiError } from '../../platform/errors.ts';

/**
 * Parses CSV from a stream, yielding the records parsed from each chunk read (the header is the first record
 * of the first array). The delimiter (comma, semicolon or tab) is sniffed from the header line; a BOM and
 * CRLF line ends are handled; quoted fields may hold delimiters and newlines.
 */
export async function* csvRecords(stream: Readable): AsyncGenerator<string[][]> {
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
  // The parser is loaded with the first import, not at every start.
  const { parse } = await import('csv-parse');
  const parser = parse({
    bom: true,
    delimiter: sniffDelimiter(headText.split('\n')[0] ?? ''),
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    max_record_size: 1_000_000,
  });
  let records: string[][] = [];
  let failure: Error | undefined;
  parser.on('data', (record: string[]) => records.push(record));
  parser.on('error', (error: Error) => {
    failure ??= error;
  });
  const ended = finished(parser);
  ended.catch(() => {}); // a failure is read from `failure`
  const unreadable = (error: unknown) =>
    ApiError.badRequest(`The CSV could not be read: ${(error as Error).message}`);

  for (const chunk of head) parser.write(chunk);
  for (;;) {
    if (failure) throw unreadable(failure);
    if (records.length > 0) {
      const parsed = records;
      records = [];
      yield parsed;
    }
    let next: IteratorResult<Buffer | string>;
    try {
      next = await iterator.next();
    } catch (error) {
      parser.destroy();
      throw unreadable(error);
    }
    if (next.done) break;
    parser.write(next.value);
  }
  parser.end();
  try {
    await ended;
  } catch (error) {
    throw unreadable(failure ?? error);
  }
  if (records.length > 0) yield records;
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
