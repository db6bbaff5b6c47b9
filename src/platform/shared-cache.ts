// Short-lived in-process caches of what nearly every request reads (an API key with its organization, an
// organization's senders), invalidated on write across instances: the pattern of unkey's key cache. A write
// that changes a cached thing names it by tag (`organization:org_…`, `api-key:key_…`) after it committed;
// this instance forgets every entry with that tag at once, tells the others over the broadcast (Redis pub/sub,
// or PostgreSQL NOTIFY: broadcast.ts), and waits until each instance it knows of has answered that it forgot
// them too. So when the write's response leaves, no instance that answered can serve the old value: a revoked
// key is refused on the next request wherever it lands (test/shared-cache.test.ts).
//
// What bounds staleness when that fails (docs/performance.md, "Sends"): an instance that does not answer
// within ACK_TIMEOUT_MS (a stalled process, a lost connection) may serve an entry until its TTL ends,
// ENTRY_TTL_MS at most. An instance that knows its subscription is down serves nothing from its caches until
// it is made again, and then forgets everything it held. Instances find each other through the broadcast
// itself: each says `hello` when it subscribes and `bye` when it closes, and answers another's hello.
import { randomUUID } from 'node:crypto';
import type { Broadcast } from './broadcast.ts';
import type { Clock } from './clock.ts';

/** The longest an entry is served, if every invalidation of it was lost. */
export const ENTRY_TTL_MS = 30_000;
/** How long a write waits for the other instances to answer that they forgot what it changed. */
export const ACK_TIMEOUT_MS = 1_000;
const MAX_ENTRIES = 10_000;

type Message =
  | { type: 'hello' | 'bye'; from: string }
  | { type: 'here'; from: string; to: string }
  | { type: 'drop'; from: string; id: string; tags: string[] }
  | { type: 'ack'; from: string; to: string; id: string };

interface Entry<Value> {
  value: Value;
  tags: string[];
  expiresAt: number;
}

/** One cache: values by key, each with the tags that invalidate it. */
export class SharedCache<Value> {
  private readonly entries = new Map<string, Entry<Value>>();
  private readonly keysByTag = new Map<string, Set<string>>();
  private readonly loading = new Map<string, Promise<{ value: Value; tags: string[] } | undefined>>();
  /** Moves on every invalidation: a load that began before one must not store what it read. */
  private generation = 0;

  constructor(
    private readonly caches: SharedCaches,
    private readonly clock: Clock,
  ) {}

  /**
   * The cached value of `key`, or what `load` reads (stored with its tags unless it is undefined). Loads of
   * one key at the same time share one read.
   */
  async get(key: string, load: () => Promise<{ value: Value; tags: string[] } | undefined>) {
    const now = this.clock.nowMs();
    const usable = this.caches.usable();
    if (usable) {
      const entry = this.entries.get(key);
      if (entry && entry.expiresAt > now) return entry.value;
      if (entry) this.forget(key);
    }
    let pending = this.loading.get(key);
    if (!pending) {
      const generation = this.generation;
      pending = load().finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
      const loaded = await pending;
      if (loaded && usable && generation === this.generation && this.caches.usable()) {
        this.store(key, loaded, now);
      }
      return loaded?.value;
    }
    return (await pending)?.value;
  }

  /** Forgets the entries with any of `tags` (this instance only; SharedCaches.invalidate tells the others). */
  drop(tags: readonly string[]): void {
    this.generation++;
    for (const tag of tags) {
      for (const key of this.keysByTag.get(tag) ?? []) this.forget(key);
    }
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
    this.keysByTag.clear();
  }

  private store(key: string, loaded: { value: Value; tags: string[] }, now: number): void {
    this.forget(key);
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.forget(oldest);
    }
    this.entries.set(key, { value: loaded.value, tags: loaded.tags, expiresAt: now + ENTRY_TTL_MS });
    for (const tag of loaded.tags) {
      const keys = this.keysByTag.get(tag) ?? new Set<string>();
      keys.add(key);
      this.keysByTag.set(tag, keys);
    }
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    for (const tag of entry.tags) {
      const keys = this.keysByTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.keysByTag.delete(tag);
    }
  }
}

/** This instance's caches, and its part in the invalidation broadcast. */
export class SharedCaches {
  private readonly id = randomUUID();
  private readonly caches: SharedCache<unknown>[] = [];
  /** The other instances that said hello (or anything) and have not said bye or failed to answer. */
  private readonly peers = new Set<string>();
  private readonly awaiting = new Map<string, { waiting: Set<string>; done: () => void }>();
  private opening: Promise<void> | undefined;
  private subscribed = false;
  private closed = false;

  constructor(
    private readonly broadcast: Broadcast,
    private readonly clock: Clock,
    private readonly onError: (error: unknown, what: string) => void,
  ) {}

  cache<Value>(): SharedCache<Value> {
    const cache = new SharedCache<Value>(this, this.clock);
    this.caches.push(cache as SharedCache<unknown>);
    return cache;
  }

  /**
   * Whether entries may be served now: only while subscribed, so that no invalidation can pass unheard.
   * The first call opens the subscription (and answers false until it is made).
   */
  usable(): boolean {
    if (!this.opening && !this.closed) this.opening = this.open();
    return this.subscribed;
  }

  /** Resolves when the subscription was made (or could not be for now). */
  async ready(): Promise<void> {
    this.usable();
    await this.opening;
  }

  /**
   * Forgets every entry with any of `tags`, here and on every instance, and waits (ACK_TIMEOUT_MS at most)
   * until the other instances said they did. Call it after the write that changed them committed.
   */
  async invalidate(tags: string[]): Promise<void> {
    for (const cache of this.caches) cache.drop(tags);
    // Subscribed first (the server subscribes at start: serve.ts), so that the others' answers are heard.
    await this.ready();
    if (!this.subscribed) {
      // Not subscribed: the others cannot answer us either; they still hear the drop if they are.
      await this.publish({ type: 'drop', from: this.id, id: randomUUID(), tags });
      return;
    }
    const id = randomUUID();
    const waiting = new Set(this.peers);
    const answered = new Promise<void>((resolve) => {
      if (waiting.size === 0) resolve();
      else this.awaiting.set(id, { waiting, done: resolve });
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ACK_TIMEOUT_MS);
    });
    await this.publish({ type: 'drop', from: this.id, id, tags });
    await Promise.race([answered, timeout]);
    clearTimeout(timer);
    this.awaiting.delete(id);
    // An instance that did not answer is not waited for again until it speaks; its entries end by their TTL.
    for (const silent of waiting) this.peers.delete(silent);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const opening = this.opening;
    if (opening) {
      await opening;
      if (this.subscribed) await this.publish({ type: 'bye', from: this.id });
      this.subscribed = false;
      await this.broadcast.close().catch((error) => this.onError(error, 'close'));
    }
    for (const cache of this.caches) cache.clear();
  }

  private async open(): Promise<void> {
    try {
      const connected = await this.broadcast.open({
        onMessage: (payload) => this.receive(payload),
        onGap: (connected) => this.gap(connected),
      });
      if (connected && !this.closed) this.gap(true);
    } catch (error) {
      this.onError(error, 'subscribe');
    }
  }

  /** Messages may have been missed: forget everything, and serve again only once subscribed. */
  private gap(connected: boolean): void {
    for (const cache of this.caches) cache.clear();
    this.subscribed = connected && !this.closed;
    if (this.subscribed) void this.publish({ type: 'hello', from: this.id });
  }

  private receive(payload: string): void {
    let message: Message;
    try {
      message = JSON.parse(payload) as Message;
    } catch {
      return;
    }
    if (message.from === this.id || typeof message.from !== 'string') return;
    if (message.type === 'bye') {
      this.peers.delete(message.from);
      return;
    }
    this.peers.add(message.from);
    if (message.type === 'hello') {
      void this.publish({ type: 'here', from: this.id, to: message.from });
    } else if (message.type === 'drop' && Array.isArray(message.tags)) {
      for (const cache of this.caches) cache.drop(message.tags);
      void this.publish({ type: 'ack', from: this.id, to: message.from, id: message.id });
    } else if (message.type === 'ack' && message.to === this.id) {
      const awaited = this.awaiting.get(message.id);
      awaited?.waiting.delete(message.from);
      if (awaited && awaited.waiting.size === 0) awaited.done();
    }
  }

  private async publish(message: Message): Promise<void> {
    try {
      await this.broadcast.publish(JSON.stringify(message));
    } catch (error) {
      this.onError(error, message.type);
    }
  }
}
