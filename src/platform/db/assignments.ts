// The SET list of a partial UPDATE, written once: the stores change only the columns a caller gave.

/**
 * `column = $n` for each column of `columns` whose value is not undefined, its value appended to `params` (so
 * the numbering follows the parameters already there). `casts` names a column's SQL type where the parameter
 * needs one; a `jsonb` value is sent JSON-encoded.
 */
export function assignments(
  columns: Record<string, unknown>,
  params: unknown[],
  casts: Record<string, string> = {},
): string[] {
  const sets: string[] = [];
  for (const [column, value] of Object.entries(columns)) {
    if (value === undefined) continue;
    const cast = casts[column];
    const index = params.push(cast === 'jsonb' ? JSON.stringify(value) : value);
    sets.push(`${column} = $${index}${cast ? `::${cast}` : ''}`);
  }
  return sets;
}
