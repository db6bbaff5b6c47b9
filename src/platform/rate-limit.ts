// The one rate-limit mechanism: named rules ("20 per 15 minutes"), counted per subject (an IP, an e-mail,
// an organization, a key) on the app clock, so the test clock can end a window without sleeping.
// - Fixed windows (the default: the API's per-minute limits) are aligned to the clock (floor(now / window)),
//   so every instance agrees on them. At a boundary a client may spend a limit just before it and again
//   just after: fine for throughput limits, not for guessing limits.
// - Sliding windows (`sliding: true`: sign-in and two-factor) count what happened in the window ending now.
//   Each window is cut into 20 clock-aligned sub-windows with one counter each; a request adds to the
//   current one and sums it with the 19 before it. We chose this over weighting the previous window by its
//   overlap, which assumes its attempts were spread evenly (a burst at its end is under-counted), and over a
//   log of timestamps, which needs sorted sets in Redis and cannot be a plain counter in memory: sub-window
//   counters are exact up to one sub-window, use the same INCRBY/PEXPIRE as fixed windows in both stores,
//   and need no clock but the app's. An attempt counts for between 95% and 100% of the window, never
//   longer (so `RateLimit-Reset` stays within the window): at most the limit in any 95% of a window,
//   whatever the boundaries. 20 divides 1000, so every whole-second window has whole-millisecond parts.
// Reserve, then check: the increment comes first and its result decides, so of requests sent in parallel
// no more than the limit are allowed (each sees every increment made before its own; the sub-window after
// the current one is read too, so two requests racing across a sub-window boundary still see each other).
// A refused request of a sliding rule is given back at once: it did nothing, and counting it would keep a
// client that keeps knocking blocked past the `RateLimit-Reset` it was given.
// Counters live in process by default and in Redis when REDIS_URL is set, so that several instances share
// one limit. If Redis cannot be reached, counting falls back to this process's counters: limits keep
// protecting each instance (less strictly) rather than failing open or refusing every request.
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';

/** ioredis, loaded when a Redis is configured: an instance without one does not compile it at start. */
const loadRedis = () => createRequire(import.meta.url)('ioredis') as typeof import('ioredis');

import type { Clock } from './clock.ts';
import { ApiError } from './errors.ts';

export interface RateLimitRule {
  /** Stable name; part of the counter key. */
  name: string;
  limit: number;
  windowSeconds: number;
  /** Count over the window ending now instead of in clock-aligned windows (see the header). */
  sliding?: boolean;
}

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /**
   * Fixed window: seconds until it ends. Sliding window: when refused, seconds until the same request would
   * be allowed; when allowed, seconds until the oldest attempt counted leaves the window.
   */
  resetSeconds: number;
}

/** A count held against a rule until `release` gives it back (e.g. a password that proved right). */
export interface RateLimitReservation {
  state: RateLimitState;
  /** Gives the count back to the window (or sub-window) it was counted in; only the first call does. */
  release(): Promise<void>;
}

export interface CounterStore {
  /** Adds `by` to the counter and returns the new value; the counter expires after `ttlMs`. */
  increment(key: string, by: number, ttlMs: number): Promise<number>;
  get(key: string): Promise<number>;
  /** The values of several counters, in order (0 for a missing one). */
  getMany(keys: string[]): Promise<number[]>;
  /** Resolves when counting is ready (Redis connected), or after `timeoutMs` at the latest. */
  ready(timeoutMs?: number): Promise<void>;
  /** Whether the shared store answers now (readiness); absent for the in-process store, which always does. */
  reachable?(): Promise<boolean>;
  close(): Promise<void>;
}

/** Sub-windows per sliding window; see the header. */
export const SLIDING_SUB_WINDOWS = 20;

export class MemoryCounterStore implements CounterStore {
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();
  private sweeps = 0;

  async increment(key: string, by: number, ttlMs: number): Promise<number> {
    const now = Date.now();
    if (++this.sweeps % 1000 === 0) this.sweep(now);
    const current = this.counters.get(key);
    if (!current || current.expiresAt <= now) {
      this.counters.set(key, { value: by, expiresAt: now + ttlMs });
      return by;
    }
    current.value += by;
    return current.value;
  }

  async get(key: string): Promise<number> {
    const current = this.counters.get(key);
    return current && current.expiresAt > Date.now() ? current.value : 0;
  }

  async getMany(keys: string[]): Promise<number[]> {
    return Promise.all(keys.map((key) => this.get(key)));
  }

  async ready(): Promise<void> {}

  async close(): Promise<void> {
    this.counters.clear();
  }

  private sweep(now: number): void {
    for (const [key, counter] of this.counters) if (counter.expiresAt <= now) this.counters.delete(key);
  }
}

export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;
  private readonly fallback = new MemoryCounterStore();
  private warned = false;

  constructor(
    url: string,
    private readonly onFallback: (error: unknown) => void = () => {},
  ) {
    this.redis = new (loadRedis().Redis)(url, {
      lazyConnect: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 1000,
      // Generous enough for a busy machine; past it a command counts in the fallback instead.
      commandTimeout: 1000,
      keyPrefix: 'rl:',
    });
    // Connection errors surface on commands, where we fall back; the emitter must not crash the process.
    this.redis.on('error', () => {});
    this.redis.on('ready', () => {
      this.warned = false;
    });
  }

  async increment(key: string, by: number, ttlMs: number): Promise<number> {
    try {
      const result = await this.redis.multi().incrby(key, by).pexpire(key, ttlMs, 'NX').exec();
      const [error, value] = result![0]!;
      if (error) throw error;
      return Number(value);
    } catch (error) {
      this.fellBack(error);
      return this.fallback.increment(key, by, ttlMs);
    }
  }

  async get(key: string): Promise<number> {
    try {
      return Number((await this.redis.get(key)) ?? 0);
    } catch (error) {
      this.fellBack(error);
      return this.fallback.get(key);
    }
  }

  async getMany(keys: string[]): Promise<number[]> {
    try {
      return (await this.redis.mget(...keys)).map((value) => Number(value ?? 0));
    } catch (error) {
      this.fellBack(error);
      return this.fallback.getMany(keys);
    }
  }

  /**
   * Waits for the connection so the first requests count in Redis, not in the fallback. A Redis that does not
   * answer in time does not stop the server starting: counting falls back until it does.
   */
  async ready(timeoutMs = 3000): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      this.redis.once('ready', done);
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }

  async reachable(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
    await this.fallback.close();
  }

  private fellBack(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.onFallback(error);
  }
}

/** The sub-windows one sliding count reads, oldest first, and where the current one is among them. */
interface SlidingWindow {
  now: number;
  stepMs: number;
  windowMs: number;
  indexes: number[];
  keys: string[];
  currentAt: number;
  ttlMs: number;
}

interface Counted {
  state: RateLimitState;
  /** The counter the cost went to, so a release goes back to the same (sub-)window. */
  key: string;
  ttlMs: number;
}

export class RateLimiter {
  constructor(
    readonly store: CounterStore,
    private readonly clock: Clock,
  ) {}

  /**
   * Counts `cost` against the subject and says whether it was within the limit. In a fixed window a refused
   * request stays counted; in a sliding one it is given back (see the header).
   */
  async consume(rule: RateLimitRule, subject: string, cost = 1): Promise<RateLimitState> {
    if (rule.sliding) return (await this.reserve(rule, subject, cost)).state;
    return (await this.countFixed(rule, subject, cost)).state;
  }

  /**
   * Counts `cost` and keeps it until `release` (which returns it to the same window or sub-window, even when
   * the clock has moved on meanwhile). A refused reservation is given back at once, so it never counts.
   */
  async reserve(rule: RateLimitRule, subject: string, cost = 1): Promise<RateLimitReservation> {
    const counted = rule.sliding
      ? await this.countSliding(rule, subject, cost)
      : await this.countFixed(rule, subject, cost);
    let held = true;
    const release = async () => {
      if (!held) return;
      held = false;
      await this.store.increment(counted.key, -cost, counted.ttlMs);
    };
    if (!counted.state.allowed && cost > 0) await release();
    return { state: counted.state, release };
  }

  /** The state without counting: whether one more would be allowed. */
  async peek(rule: RateLimitRule, subject: string): Promise<RateLimitState> {
    if (rule.sliding) {
      const window = this.slidingWindow(rule, subject);
      const counts = clamp(await this.store.getMany(window.keys));
      return this.slidingState(rule, window, counts, 1, false);
    }
    const window = this.fixedWindow(rule, subject);
    const count = await this.store.get(window.key);
    return {
      allowed: count < rule.limit,
      limit: rule.limit,
      remaining: Math.max(0, rule.limit - count),
      resetSeconds: window.resetSeconds,
    };
  }

  private fixedWindow(rule: RateLimitRule, subject: string) {
    const windowMs = rule.windowSeconds * 1000;
    const now = this.clock.nowMs();
    const index = Math.floor(now / windowMs);
    return {
      key: `${rule.name}:${subject}:${index}`,
      // Kept a little past the window's end in real time; the index, not the TTL, decides the window.
      ttlMs: windowMs * 2,
      resetSeconds: Math.max(1, Math.ceil(((index + 1) * windowMs - now) / 1000)),
    };
  }

  private async countFixed(rule: RateLimitRule, subject: string, cost: number): Promise<Counted> {
    const window = this.fixedWindow(rule, subject);
    const count = await this.store.increment(window.key, cost, window.ttlMs);
    const state = {
      allowed: count <= rule.limit,
      limit: rule.limit,
      remaining: Math.max(0, rule.limit - count),
      resetSeconds: window.resetSeconds,
    };
    return { state, key: window.key, ttlMs: window.ttlMs };
  }

  /**
   * The sub-windows a sliding count reads, oldest first: the 19 before the current one, the current one, and
   * the one after it (a request on an instance whose clock has just crossed into it, or racing across it).
   */
  private slidingWindow(rule: RateLimitRule, subject: string): SlidingWindow {
    const windowMs = rule.windowSeconds * 1000;
    const stepMs = windowMs / SLIDING_SUB_WINDOWS;
    const now = this.clock.nowMs();
    const current = Math.floor(now / stepMs);
    const first = current - SLIDING_SUB_WINDOWS + 1;
    const indexes = Array.from({ length: SLIDING_SUB_WINDOWS + 1 }, (_, i) => first + i);
    // "s" keeps these apart from a fixed window's counters of the same rule name (e.g. during a deploy).
    const keys = indexes.map((index) => `${rule.name}:${subject}:s${index}`);
    return { now, stepMs, windowMs, indexes, keys, currentAt: SLIDING_SUB_WINDOWS - 1, ttlMs: windowMs * 2 };
  }

  private async countSliding(rule: RateLimitRule, subject: string, cost: number): Promise<Counted> {
    const window = this.slidingWindow(rule, subject);
    const key = window.keys[window.currentAt]!;
    // The increment first, then the others: see "Reserve, then check" in the header.
    const own = await this.store.increment(key, cost, window.ttlMs);
    const others = window.keys.filter((_, i) => i !== window.currentAt);
    const values = await this.store.getMany(others);
    values.splice(window.currentAt, 0, own);
    return { state: this.slidingState(rule, window, clamp(values), cost, true), key, ttlMs: window.ttlMs };
  }

  /**
   * The state of a sliding window from its sub-window counts. `counted` says whether `cost` is already in
   * the current sub-window (a count) or not (a peek).
   */
  private slidingState(
    rule: RateLimitRule,
    window: SlidingWindow,
    counts: number[],
    cost: number,
    counted: boolean,
  ): RateLimitState {
    const total = counts.reduce((sum, value) => sum + value, 0);
    const allowed = counted ? total <= rule.limit : total + cost <= rule.limit;
    let target: number;
    if (allowed) {
      // When the budget next grows: the oldest attempt counted leaves.
      target = total - 1;
    } else {
      // When this request would be allowed: without its own cost, the rest must fall to limit - cost.
      if (counted) counts[window.currentAt] = Math.max(0, counts[window.currentAt]! - cost);
      target = rule.limit - cost;
    }
    let sum = counts.reduce((acc, value) => acc + value, 0);
    let freedAt = window.now;
    for (let i = 0; i < counts.length && sum > target; i++) {
      sum -= counts[i]!;
      // A sub-window stops counting once the current one is SLIDING_SUB_WINDOWS after it.
      freedAt = (window.indexes[i]! + SLIDING_SUB_WINDOWS) * window.stepMs;
    }
    const resetMs = sum > target ? window.windowMs : freedAt - window.now;
    return {
      allowed,
      limit: rule.limit,
      remaining: Math.max(0, rule.limit - total),
      resetSeconds: Math.min(rule.windowSeconds, Math.max(1, Math.ceil(resetMs / 1000))),
    };
  }
}

/** A sub-window is never negative: a release after its counter expired must not lend budget to others. */
function clamp(values: number[]): number[] {
  return values.map((value) => Math.max(0, value));
}

/** The `RateLimit-*` headers of the spec for a state. */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}

export function createCounterStore(redisUrl: string | undefined, onFallback?: (error: unknown) => void) {
  return redisUrl ? new RedisCounterStore(redisUrl, onFallback) : new MemoryCounterStore();
}

/**
 * The one way a request-rate refusal is rendered: 429 with the `RateLimit-*` headers of the refusing rule,
 * and `Retry-After` where the spec asks for it. `code` defaults to RATE_LIMITED; sign-in limits send none.
 */
export function rateLimitExceeded(
  state: RateLimitState,
  message: string,
  options: { retryAfter?: boolean; code?: string | null } = {},
): ApiError {
  const headers = rateLimitHeaders(state);
  if (options.retryAfter) headers['Retry-After'] = String(state.resetSeconds);
  const code = options.code === null ? undefined : (options.code ?? 'RATE_LIMITED');
  return new ApiError(429, message, { code, headers });
}

/**
 * Spec "SMS sending endpoints: 30 sends/minute", per organization: one budget whichever way the
 * organization sends (developer API or portal); each interface's guard consumes it for routes that send.
 */
export const SEND_RATE_RULE: RateLimitRule = { name: 'api-sends', limit: 30, windowSeconds: 60 };
