// A piece of SQL with its own parameters, written by the store that owns its table, for another part to put
// into one larger statement (a CTE beside its own): rows of several modules written in one round trip, each
// module still the only one to name its columns.

/** SQL whose parameters are numbered from $1, and their values. */
export interface SqlFragment {
  text: string;
  params: unknown[];
}

/** The fragment's text with its parameters numbered after the `before` parameters already in the statement. */
export function placedAfter(fragment: SqlFragment, before: number): string {
  return before === 0 ? fragment.text : fragment.text.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + before}`);
}
