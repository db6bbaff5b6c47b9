// A knowledge-base document's text: extracted from what was uploaded (plain text, Markdown, CSV, HTML, PDF),
// then split into overlapping chunks for the index. Each format by the library made for it: html-to-text for
// HTML (scripts, styles and navigation dropped; links and tables kept as text), unpdf (PDF.js built to run
// without a browser or native code) for PDF, csv-parse for CSV, whose rows become "column: value" sentences so
// that a question about a price finds the row that names it.
import { extractText, getDocumentProxy } from 'unpdf';
import { ApiError } from '../../platform/errors.ts';

export const DOCUMENT_SOURCES = ['text', 'markdown', 'csv', 'html', 'pdf'] as const;
export type DocumentSource = (typeof DOCUMENT_SOURCES)[number];

/** The most text a document may hold (about 150 pages), from JSON or extracted from a file. */
export const MAX_DOCUMENT_CHARACTERS = 500_000;
/** The largest file accepted: PDFs carry fonts and images beside their text. */
export const MAX_DOCUMENT_FILE_BYTES = 10 * 1024 * 1024;

/** A chunk's target length: a few paragraphs, enough to answer from, small enough to rank precisely. */
const CHUNK_CHARACTERS = 1000;
/** How much of the end of one chunk starts the next, so that an answer spanning the cut is found whole. */
const CHUNK_OVERLAP = 200;

const BY_EXTENSION: Record<string, DocumentSource> = {
  txt: 'text',
  text: 'text',
  md: 'markdown',
  markdown: 'markdown',
  csv: 'csv',
  html: 'html',
  htm: 'html',
  pdf: 'pdf',
};
const BY_MEDIA_TYPE: Record<string, DocumentSource> = {
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/csv': 'csv',
  'text/html': 'html',
  'application/pdf': 'pdf',
};

/**
 * What kind of document a file is: by its content first where the format says so (a PDF begins `%PDF-`), then
 * by its name's extension, then by the media type the client gave. Undefined: not a format we read (415).
 */
export function sourceOf(file: Buffer, filename: string | undefined, mediaType: string | undefined) {
  if (file.subarray(0, 5).toString('latin1') === '%PDF-') return 'pdf';
  const extension = filename?.toLowerCase().match(/\.([a-z]+)$/)?.[1];
  const byName = extension ? BY_EXTENSION[extension] : undefined;
  if (byName) return byName === 'pdf' ? undefined : byName; // named .pdf but not one
  return BY_MEDIA_TYPE[mediaType?.split(';')[0]?.trim().toLowerCase() ?? ''];
}

/** The text of an uploaded file; 400 when it cannot be read as the format it claims. */
export async function extractDocumentText(file: Buffer, source: DocumentSource): Promise<string> {
  if (source === 'pdf') {
    try {
      const pdf = await getDocumentProxy(new Uint8Array(file));
      try {
        return (await extractText(pdf, { mergePages: true })).text;
      } finally {
        await pdf.destroy();
      }
    } catch (error) {
      throw unreadable(`The PDF cannot be read: ${(error as Error).message}`);
    }
  }
  const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let decoded: string;
  try {
    decoded = text.decode(file);
  } catch {
    throw unreadable(`The ${source} file is not UTF-8 text`);
  }
  // The HTML and CSV readers are loaded with the first such document, not at every start.
  if (source === 'html') {
    const { convert: htmlToText } = await import('html-to-text');
    return htmlToText(decoded, {
      wordwrap: false,
      selectors: [
        { selector: 'a', options: { ignoreHref: true } },
        { selector: 'img', format: 'skip' },
        { selector: 'nav', format: 'skip' },
        { selector: 'h1', options: { uppercase: false } },
        { selector: 'h2', options: { uppercase: false } },
        { selector: 'h3', options: { uppercase: false } },
        { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
      ],
    });
  }
  if (source === 'csv') return csvAsText(decoded, (await import('csv-parse/sync')).parse);
  return decoded;
}

/** A CSV as one sentence per row: "service: Cleaning; price: $120." (the header names each value). */
function csvAsText(csv: string, parseCsv: typeof import('csv-parse/sync').parse): string {
  let rows: string[][];
  try {
    rows = parseCsv(csv, { bom: true, skip_empty_lines: true, relax_column_count: true, trim: true });
  } catch (error) {
    throw unreadable(`The CSV cannot be read: ${(error as Error).message}`);
  }
  const [header, ...records] = rows;
  if (!header) return '';
  if (records.length === 0) return header.join(', ');
  return records
    .map((record) =>
      record
        .map((value, i) => (value ? `${header[i] ?? `column ${i + 1}`}: ${value}` : ''))
        .filter(Boolean)
        .join('; '),
    )
    .filter(Boolean)
    .map((line) => `${line}.`)
    .join('\n\n');
}

function unreadable(message: string): ApiError {
  return new ApiError(400, message, { code: 'DOCUMENT_UNREADABLE' });
}

/**
 * Splits text into chunks of about CHUNK_CHARACTERS at sentence ends, each beginning with the last sentences
 * (up to CHUNK_OVERLAP characters) of the one before. A sentence longer than a chunk is cut between words.
 */
export function chunkText(text: string): string[] {
  const sentences = text
    .replace(/\r\n?/g, '\n')
    .split(/\n\s*\n|(?<=[.!?])\s+/)
    .map((sentence) => sentence.replace(/\s+/g, ' ').trim())
    .filter((sentence) => sentence.length > 0)
    .flatMap((sentence) => (sentence.length <= CHUNK_CHARACTERS ? [sentence] : cutLong(sentence)));
  const chunks: string[] = [];
  let current: string[] = [];
  let length = 0;
  for (const sentence of sentences) {
    if (length > 0 && length + 1 + sentence.length > CHUNK_CHARACTERS) {
      chunks.push(current.join(' '));
      // The next chunk starts with the tail of this one.
      const overlap: string[] = [];
      let overlapLength = 0;
      for (let i = current.length - 1; i >= 0; i--) {
        const candidate = current[i]!;
        if (overlapLength + candidate.length + 1 > CHUNK_OVERLAP) break;
        overlap.unshift(candidate);
        overlapLength += candidate.length + 1;
      }
      current = overlap;
      length = overlapLength;
    }
    current.push(sentence);
    length += sentence.length + (length > 0 ? 1 : 0);
  }
  if (current.length > 0) chunks.push(current.join(' '));
  return chunks;
}

function cutLong(sentence: string): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const word of sentence.split(' ')) {
    if (piece && piece.length + 1 + word.length > CHUNK_CHARACTERS) {
      pieces.push(piece);
      piece = '';
    }
    piece = piece ? `${piece} ${word}` : word.slice(0, CHUNK_CHARACTERS);
  }
  if (piece) pieces.push(piece);
  return pieces;
}
