// Group batching of one kind of statement (group commit): calls made while the previous batch is being
// written, or within the same turn of the event loop, are written together by one set-based statement. Jobs
// claimed together start together, so their reads and writes of one kind become one round trip instead of
// one each; an idle process adds no delay beyond that turn. Each caller's promise settles with its own row's
// result once the batch holding it is written (or fails with the batch's error), so a caller never goes on
// before its write committed.
// A batch is a statement of its own, in its own transaction: only independent rows belong in one (a failure
// fails every caller of the batch, each of which retries as it would have alone).

export interface GroupBatchOptions<Item, Result> {
  /** Writes (or reads) the items in one statement; returns one result per item, in their order. */
  run: (items: Item[]) => Promise<Result[]>;
  /** Items one statement takes at most; the rest wait for the next. */
  maxSize?: number;
  /**
   * Under load (the last batch held more than one item), how long the first call of a batch waits for others
   * before it is written (ms). With the database in another thread or process the calls of a burst arrive one
   * by one, as their HTTP answers do, rather than together after a statement that held the event loop; a short
   * wait gathers them. A lone call (the last batch held one) never waits.
   */
  lingerMs?: number;
}

/** The default wait of a batch under load (GroupBatchOptions.lingerMs), measured with webhook deliveries. */
export const GROUP_BATCH_LINGER_MS = 1;

export class GroupBatch<Item, Result = void> {
  private readonly run: (items: Item[]) => Promise<Result[]>;
  private readonly maxSize: number;
  private readonly lingerMs: number;
  /** Items the last batch held: more than one means calls are arriving together, so a batch may wait. */
  private lastSize = 0;
  private waiting: { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  private flushing = false;

  constructor(options: GroupBatchOptions<Item, Result>) {
    this.run = options.run;
    this.maxSize = options.maxSize ?? 500;
    this.lingerMs = options.lingerMs ?? GROUP_BATCH_LINGER_MS;
  }

  add(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.flushing) return;
      this.flushing = true;
      // The rest of this turn's calls (the other jobs of one claim) join the first batch; under load, those of
      // the next moment too.
      if (this.lastSize > 1 && this.lingerMs > 0) setTimeout(() => void this.flush(), this.lingerMs);
      else setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxSize);
      this.lastSize = batch.length;
      try {
        const results = await this.run(batch.map((entry) => entry.item));
        for (const [index, entry] of batch.entries()) entry.resolve(results[index] as Result);
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.flushing = false;
  }
}
