// The one rate-limit mechanism: named rules ("20 per 15 minutes"), counted per subject (an IP, an e-mail,
// an organization, a key) in fixed windows of the app clock. Windows are aligned to the clock
// (floor(now / window)), so every instance agrees on them and the test clock can end one without sleeping.
// Counters live in process by default and in Redis when REDIS_URL is set, so that several instances share
// one limit. If Redis cannot be reached, counting falls back to this process's counters: limits keep
// protecting each instance (less strictly) rather than failing open or refusing every request.
import { Redis } from 'ioredis';
import type { Clock } from './clock.ts';
import { ApiError } from './errors.ts';

export interface RateLimitRule {
  /** Stable name; part of the counter key. */
  name: string;
  limit: number;
  windowSeconds: number;
}

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
}

export interface CounterStore {
  /** Adds `by` to the counter and returns the new value; the counter expires after `ttlMs`. */
  increment(key: string, by: number, ttlMs: number): Promise<number>;
  get(key: string): Promise<number>;
  /** Resolves when counting is ready (Redis connected), or after `timeoutMs` at the latest. */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

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
    this.redis = new Redis(url, {
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

export class RateLimiter {
  constructor(
    readonly store: CounterStore,
    private readonly clock: Clock,
  ) {}

  private window(rule: RateLimitRule, subject: string) {
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

  /** Counts `cost` against the subject and says whether it was within the limit. */
  async consume(rule: RateLimitRule, subject: string, cost = 1): Promise<RateLimitState> {
    const window = this.window(rule, subject);
    const count = await this.store.increment(window.key, cost, window.ttlMs);
    return {
      allowed: count <= rule.limit,
      limit: rule.limit,
      remaining: Math.max(0, rule.limit - count),
      resetSeconds: window.resetSeconds,
    };
  }

  /** The state without counting: whether one more would be allowed. */
  async peek(rule: RateLimitRule, subject: string): Promise<RateLimitState> {
    const window = this.window(rule, subject);
    const count = await this.store.get(window.key);
    return {
      allowed: count < rule.limit,
      limit: rule.limit,
      remaining: Math.max(0, rule.limit - count),
      resetSeconds: window.resetSeconds,
    };
  }
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
