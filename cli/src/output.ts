// How results are printed: for people, aligned columns and `key: value` lines; with --json, the API's own
// objects as JSON (one document, or one object per line when following), so scripts can pipe them into jq.

export type Row = Record<string, unknown>;

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function printTable(rows: Row[], columns: string[]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const widths = columns.map((column) =>
    Math.max(column.length, ...rows.map((row) => cell(row[column]).length)),
  );
  const line = (values: string[]) =>
    `${values
      .map((value, i) => value.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()}\n`;
  process.stdout.write(line(columns.map((column) => column.toUpperCase())));
  for (const row of rows) process.stdout.write(line(columns.map((column) => cell(row[column]))));
}

export function printRecord(record: Row, fields?: string[]): void {
  const keys = fields ?? Object.keys(record);
  const width = Math.max(...keys.map((key) => key.length));
  for (const key of keys) process.stdout.write(`${`${key}:`.padEnd(width + 2)}${cell(record[key])}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** A progress bar on standard error when it is a terminal; nothing otherwise (logs stay clean). */
export function progressBar(label: string): { update(done: number, total: number): void; end(): void } {
  const tty = process.stderr.isTTY;
  let drawn = false;
  return {
    update(done, total) {
      if (!tty) return;
      const fraction = total > 0 ? done / total : 1;
      const width = 30;
      const filled = Math.round(fraction * width);
      const megabytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
      process.stderr.write(
        `\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(fraction * 100)}% ` +
          `${megabytes(done)}/${megabytes(total)} MB`,
      );
      drawn = true;
    },
    end() {
      if (drawn) process.stderr.write('\n');
    },
  };
}
