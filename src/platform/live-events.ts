// Live events: an organization's recorded events (the outbox's `events` table) pushed to whoever watches them
// now, the web console's server-sent events stream (CONTRACT section 14, docs/live-events.md). Across
// instances: recording an event NOTIFYs `LIVE_EVENTS_CHANNEL` with its organization in the recording
// transaction (events.ts), so every instance learns at commit that the organization has something new, and
// each instance with watchers of it reads the table once and hands what it read to all of them.
//
// Why read the table rather than carry the event in the NOTIFY: a NOTIFY payload is at most 8,000 bytes, a
// lost listening connection loses notifications (the table does not), and a reader that resumes after an
// event (`Last-Event-ID`) needs the table anyway. Order and completeness: an event's id and created_at are
// taken when it is recorded, but transactions commit in their own order, so one recorded earlier may become
// visible after a later one was already read. Each read therefore looks back LOOKBACK_MS before the newest
// event it has seen and skips the ids it already handed out: an event is handed out once, even when it
// commits late, if its transaction took less than LOOKBACK_MS.
import type { Clock } from './clock.ts';
import type { Database } from './db/index.ts';
import { LIVE_EVENTS_CHANNEL } from './events.ts';

/** How far before the newest event seen a read looks again, for transactions that committed late. */
const LOOKBACK_MS = 5_000;
/** The most events one read takes; a read that gets this many reads again at once. */
const READ_BATCH = 500;
/** The most events replayed to a watcher that resumes (`Last-Event-ID`); older ones are not sent. */
export const MAX_REPLAY = 1_000;

export interface LiveEvent {
  id: string;
  type: string;
  createdAt: Date;
  data: Record<string, unknown>;
}

/** Receives an organization's events, in the order they were read, each once. */
export type Watcher = (event: LiveEvent) => void;

interface EventRow {
  id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** The events of one organization this instance watches. */
interface Feed {
  watchers: Set<Watcher>;
  /** The newest created_at read so far (ms); reads look back LOOKBACK_MS from it. */
  newestMs: number;
  /** Ids handed out within the look-back window, with their created_at (ms). */
  handedOut: Map<string, number>;
  reading: boolean;
  /** Something new arrived while a read was under way: read again when it ends. */
  again: boolean;
}

export class LiveEvents {
  private readonly feeds = new Map<string, Feed>();
  private listening: Promise<(() => Promise<void>) | undefined> | undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void,
  ) {}

  /**
   * Watches `organizationId`'s events from now on. With `lastEventId` (the organization's event last
   * received), first replays the events recorded after it, up to MAX_REPLAY; an id that is unknown (too old,
   * or another organization's) replays nothing. Returns the function that stops watching.
   */
  async watch(organizationId: string, watcher: Watcher, lastEventId?: string): Promise<() => void> {
    await this.listen();
    const feed = this.feeds.get(organizationId) ?? (await this.newFeed(organizationId));
    let watching = watcher;
    if (lastEventId) {
      // Live events that arrive during the replay wait, so that the watcher gets everything in order and once.
      const waiting: LiveEvent[] = [];
      const buffer: Watcher = (event) => waiting.push(event);
      feed.watchers.add(buffer);
      const replayed = new Set<string>();
      try {
        for (const event of await this.after(organizationId, lastEventId)) {
          replayed.add(event.id);
          watcher(event);
        }
      } finally {
        feed.watchers.delete(buffer);
      }
      for (const event of waiting) if (!replayed.has(event.id)) watcher(event);
      // A replayed event may still be read live (committed, its notification not yet handled): skip it.
      watching = (event) => {
        if (!replayed.has(event.id)) watcher(event);
      };
    }
    feed.watchers.add(watching);
    const watched = feed;
    return () => {
      watched.watchers.delete(watching);
      if (watched.watchers.size === 0 && this.feeds.get(organizationId) === watched) {
        this.feeds.delete(organizationId);
      }
    };
  }

  /**
   * A feed of the organization from now on: the events already in the look-back window count as handed out,
   * so that a new watcher is not sent what happened before it came.
   */
  private async newFeed(organizationId: string): Promise<Feed> {
    const nowMs = this.clock.nowMs();
    const recent = await this.db.query<{ id: string; created_at: Date }>(
      'SELECT id, created_at FROM events WHERE organization_id = $1 AND created_at >= $2 LIMIT $3',
      [organizationId, new Date(nowMs - LOOKBACK_MS), READ_BATCH * 10],
    );
    // Another watcher of the organization may have made the feed while this one read.
    const made = this.feeds.get(organizationId);
    if (made) return made;
    const feed: Feed = {
      watchers: new Set(),
      newestMs: nowMs,
      handedOut: new Map(recent.map((row) => [row.id, row.created_at.getTime()])),
      reading: false,
      again: false,
    };
    this.feeds.set(organizationId, feed);
    return feed;
  }

  /** How many watchers this instance holds (for the metrics and the shutdown). */
  get watchers(): number {
    let count = 0;
    for (const feed of this.feeds.values()) count += feed.watchers.size;
    return count;
  }

  /** Stops listening for notifications (the app is closing); watchers are ended by their streams. */
  async close(): Promise<void> {
    const listening = this.listening;
    this.listening = undefined;
    const stop = await listening;
    await stop?.();
    this.feeds.clear();
  }

  private listen(): Promise<unknown> {
    if (!this.listening) {
      if (!this.db.listen) throw new Error('Live events need a database that delivers notifications');
      this.listening = this.db
        .listen({
          channel: LIVE_EVENTS_CHANNEL,
          onNotify: (organizationId) => {
            // Without a payload the connection was made again: anything may have been missed, read them all.
            if (!organizationId) for (const id of this.feeds.keys()) this.read(id);
            else if (this.feeds.has(organizationId)) this.read(organizationId);
          },
          onError: this.onError,
        })
        .catch((error) => {
          this.listening = undefined;
          throw error;
        });
    }
    return this.listening;
  }

  /** Reads the organization's new events and hands them to its watchers; one read at a time per feed. */
  private read(organizationId: string): void {
    const feed = this.feeds.get(organizationId);
    if (!feed) return;
    if (feed.reading) {
      feed.again = true;
      return;
    }
    feed.reading = true;
    feed.again = false;
    this.readNew(organizationId, feed)
      .then((full) => {
        feed.reading = false;
        if (full || feed.again) this.read(organizationId);
      })
      .catch((error) => {
        feed.reading = false;
        this.onError(error);
      });
  }

  /** One read; true when it took a whole batch (there may be more). */
  private async readNew(organizationId: string, feed: Feed): Promise<boolean> {
    const since = new Date(feed.newestMs - LOOKBACK_MS);
    // Ids first (the index answers them), then the rows of the new ones only: a busy organization's window
    // holds many events already handed out.
    const recent = await this.db.query<{ id: string }>(
      `SELECT id FROM events WHERE organization_id = $1 AND created_at >= $2
        ORDER BY created_at, id LIMIT $3`,
      [organizationId, since, READ_BATCH + feed.handedOut.size],
    );
    const fresh = recent.map((row) => row.id).filter((id) => !feed.handedOut.has(id));
    if (fresh.length === 0) return false;
    const rows = await this.db.query<EventRow>(
      `SELECT id, type, data, created_at FROM events WHERE organization_id = $1 AND id = ANY($2::text[])
        ORDER BY created_at, id LIMIT $3`,
      [organizationId, fresh, READ_BATCH],
    );
    for (const row of rows) {
      const createdMs = row.created_at.getTime();
      feed.handedOut.set(row.id, createdMs);
      feed.newestMs = Math.max(feed.newestMs, createdMs);
      const event = toLiveEvent(row);
      for (const watcher of feed.watchers) watcher(event);
    }
    const oldest = feed.newestMs - LOOKBACK_MS;
    for (const [id, createdMs] of feed.handedOut) if (createdMs < oldest) feed.handedOut.delete(id);
    return rows.length === READ_BATCH;
  }

  /** The organization's events recorded after `lastEventId`, oldest first, at most MAX_REPLAY. */
  private async after(organizationId: string, lastEventId: string): Promise<LiveEvent[]> {
    const rows = await this.db.query<EventRow>(
      `SELECT e.id, e.type, e.data, e.created_at
         FROM events e, events last
        WHERE last.id = $2 AND last.organization_id = $1
          AND e.organization_id = $1 AND (e.created_at, e.id) > (last.created_at, last.id)
        ORDER BY e.created_at, e.id LIMIT $3`,
      [organizationId, lastEventId, MAX_REPLAY],
    );
    return rows.map(toLiveEvent);
  }
}

function toLiveEvent(row: EventRow): LiveEvent {
  return { id: row.id, type: row.type, createdAt: row.created_at, data: row.data };
}
