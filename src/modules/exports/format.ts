// Rows into lines of a file: JSON Lines (each row exactly as its list endpoint answers it) or CSV (RFC 4180;
// columns from the first row's fields, nested values as JSON in their cell).
import type { ExportFormat } from './schemas.ts';

export interface LineWriter {
  /** The lines for one row (with the header line before the first row, for CSV). */
  line(row: Record<string, unknown>): string;
}

export function lineWriter(format: ExportFormat): LineWriter {
  if (format === 'jsonl') return { line: (row) => `${JSON.stringify(row)}\n` };
  let columns: string[] | null = null;
  return {
    line(row) {
      let header = '';
      if (!columns) {
        columns = Object.keys(row);
        header = `${columns.map(cell).join(',')}\r\n`;
      }
      return `${header}${columns.map((name) => cell(row[name])).join(',')}\r\n`;
    },
  };
}

/**
 * One CSV cell. A text a spreadsheet would run as a formula (starting with =, @, a tab or a carriage return, or
 * with + or - when it is not a number or a phone number) is prefixed with an apostrophe, so opening an export
 * never runs what a contact typed into their name (OWASP "CSV injection").
 */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=@\t\r]/.test(text) || (/^[+-]/.test(text) && !/^[+-][\d\s().-]*$/.test(text))) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
