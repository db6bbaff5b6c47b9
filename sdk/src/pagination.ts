// Lists. Awaiting a list call gives the page asked for; iterating it with `for await` walks every record from
// there on: by cursor where the endpoint has keyset mode (each record once, even while records are added), by
// page number elsewhere. Iteration asks for 100 records a page unless the call set `limit`.

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}

export interface Page<Item> {
  data: Item[];
  pagination: Pagination;
  /** Keyset mode: the cursor of the next page; null on the last page and in offset mode. */
  nextCursor: string | null;
}

export type ListMode = 'keyset' | 'offset';
type ListQuery = { cursor?: string; page?: number; limit?: number } & Record<string, unknown>;

const ITERATION_LIMIT = 100;

export class ListCall<Item> implements PromiseLike<Page<Item>>, AsyncIterable<Item> {
  private first?: Promise<Page<Item>>;

  constructor(
    private readonly fetchPage: (query: ListQuery) => Promise<Page<Item>>,
    private readonly query: ListQuery,
    private readonly mode: ListMode,
  ) {}

  // biome-ignore lint/suspicious/noThenProperty: a list call is awaited for its first page, as Stripe's are.
  then<Result1 = Page<Item>, Result2 = never>(
    onFulfilled?: ((page: Page<Item>) => Result1 | PromiseLike<Result1>) | null,
    onRejected?: ((reason: unknown) => Result2 | PromiseLike<Result2>) | null,
  ): Promise<Result1 | Result2> {
    this.first ??= this.fetchPage(this.query);
    return this.first.then(onFulfilled, onRejected);
  }

  /** Every page from the one asked for. */
  async *pages(): AsyncGenerator<Page<Item>> {
    const limit = this.query.limit ?? ITERATION_LIMIT;
    if (this.mode === 'keyset') {
      // An empty cursor starts keyset mode at the newest record.
      let cursor = this.query.cursor ?? '';
      for (;;) {
        const page = await this.fetchPage({ ...this.query, cursor, limit });
        yield page;
        if (!page.nextCursor || page.data.length === 0) return;
        cursor = page.nextCursor;
      }
    }
    let number = this.query.page ?? 1;
    for (;;) {
      const page = await this.fetchPage({ ...this.query, page: number, limit });
      yield page;
      if (page.data.length === 0 || number >= page.pagination.totalPages) return;
      number++;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every record, at most `max` (10,000 unless said), in one array. */
  async toArray(max = 10_000): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of this) {
      items.push(item);
      if (items.length >= max) break;
    }
    return items;
  }
}
