// A broadcast between the instances of one deployment: a message published by one reaches every instance
// subscribed at the time, itself included. Redis pub/sub when REDIS_URL is set (no database round trip and no
// database connection per instance for it), PostgreSQL LISTEN/NOTIFY otherwise. PGlite is one process, so its
// in-process NOTIFY reaches the only instance there is: the same code path, with no one else to tell.
//
// Neither transport keeps a message for a subscriber that is not connected when it is sent. So a subscriber
// is told when its subscription was lost or made again (`onGap`): what was sent in between is gone, and its
// user must assume it missed something (the shared caches forget everything then).
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Database } from './db/index.ts';

export interface BroadcastHandlers {
  onMessage(payload: string): void;
  /** Messages may have been missed: the subscription was lost (`connected` false) or made again (true). */
  onGap(connected: boolean): void;
}

export interface Broadcast {
  /**
   * Subscribes. Resolves true once messages published from now on will arrive; false when the subscription
   * could not be made yet (it is retried in the background, and `onGap(true)` says when it is made).
   */
  open(handlers: BroadcastHandlers): Promise<boolean>;
  /** Publishes to every subscriber, this instance's included. */
  publish(payload: string): Promise<void>;
  close(): Promise<void>;
}

export const BROADCAST_CHANNEL = 'shared_cache';

/** How long opening waits for Redis before going on without it (the subscription is made when it can be). */
const OPEN_TIMEOUT_MS = 2000;

const loadRedis = () => createRequire(import.meta.url)('ioredis') as typeof import('ioredis');

/** Redis pub/sub: one connection subscribed (a subscribed connection can do nothing else), one to publish. */
export class RedisBroadcast implements Broadcast {
  private subscriber: Redis | undefined;
  private publisher: Redis | undefined;

  constructor(private readonly url: string) {}

  async open(handlers: BroadcastHandlers): Promise<boolean> {
    const { Redis } = loadRedis();
    const options = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 1000 };
    this.publisher = new Redis(this.url, { ...options, commandTimeout: 1000 });
    this.publisher.on('error', () => {});
    // The subscriber queues its SUBSCRIBE until it is connected, and subscribes again after a reconnection.
    const subscriber = new Redis(this.url, { connectTimeout: 1000, autoResubscribe: true });
    this.subscriber = subscriber;
    subscriber.on('error', () => {});
    subscriber.on('message', (channel: string, payload: string) => {
      if (channel === BROADCAST_CHANNEL) handlers.onMessage(payload);
    });
    let subscribed = false;
    subscriber.on('close', () => {
      if (subscribed) handlers.onGap(false);
    });
    // 'ready' after a reconnection: ioredis subscribes again as part of getting ready.
    subscriber.on('ready', () => {
      if (subscribed) handlers.onGap(true);
    });
    const subscribing = subscriber.subscribe(BROADCAST_CHANNEL).then(() => {
      if (!subscribed) {
        subscribed = true;
        return true;
      }
      return false;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), OPEN_TIMEOUT_MS);
    });
    const opened = await Promise.race([subscribing.catch(() => false as const), late]);
    clearTimeout(timer);
    if (opened) return true;
    // Not subscribed in time: say so when it is (a Redis that comes up later).
    subscribed = true;
    subscribing.then(
      () => handlers.onGap(true),
      () => {},
    );
    return false;
  }

  async publish(payload: string): Promise<void> {
    if (!this.publisher) throw new Error('The broadcast is not open');
    await this.publisher.publish(BROADCAST_CHANNEL, payload);
  }

  async close(): Promise<void> {
    const connections = [this.subscriber, this.publisher];
    this.subscriber = this.publisher = undefined;
    // Not QUIT: a connection that is reconnecting would hold it in its offline queue until Redis is back.
    for (const connection of connections) connection?.disconnect();
  }
}

/**
 * PostgreSQL LISTEN/NOTIFY (and PGlite's in-process equivalent): the database's listening connection is the
 * subscription (db.listen makes it again after a loss and says so), `pg_notify` the publication.
 */
export class DatabaseBroadcast implements Broadcast {
  private stop: (() => Promise<void>) | undefined;

  constructor(private readonly db: Database) {}

  async open(handlers: BroadcastHandlers): Promise<boolean> {
    if (!this.db.listen) throw new Error('This database delivers no notifications');
    let failed = false;
    this.stop = await this.db.listen({
      channel: BROADCAST_CHANNEL,
      // Without a payload: the listening connection was lost and made again.
      onNotify: (payload) => {
        if (payload !== undefined) handlers.onMessage(payload);
        else {
          failed = false;
          handlers.onGap(true);
        }
      },
      onError: () => {
        if (failed) return;
        failed = true;
        handlers.onGap(false);
      },
    });
    // db.listen resolves even when its first connection failed (it keeps trying, and onNotify says when).
    return !failed;
  }

  async publish(payload: string): Promise<void> {
    await this.db.query('SELECT pg_notify($1, $2)', [BROADCAST_CHANNEL, payload]);
  }

  async close(): Promise<void> {
    const stop = this.stop;
    this.stop = undefined;
    await stop?.();
  }
}

export function createBroadcast(redisUrl: string | undefined, db: Database): Broadcast {
  return redisUrl ? new RedisBroadcast(redisUrl) : new DatabaseBroadcast(db);
}
