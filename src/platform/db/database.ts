// The one database interface the services write against, over both engines (index.ts opens them).
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly engine: 'pglite' | 'postgres';
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Receives `NOTIFY`s on a channel (`pg_notify(channel, payload)`, delivered when the notifying transaction
   * commits) until the returned function is called. Optional: a database without it is polled.
   */
  listen?(subscription: Subscription): Promise<() => Promise<void>>;
  /** The connection pool's use now (PostgreSQL); PGlite is one in-process connection and has none. */
  poolUse?(): PoolUse;
  close(): Promise<void>;
}

export interface PoolUse {
  /** The most connections the pool opens (DATABASE_POOL_SIZE). */
  max: number;
  /** Connections open, lent or idle. */
  open: number;
  idle: number;
  /** Queries and transactions waiting for a connection. */
  waiting: number;
}

export interface Subscription {
  channel: string;
  /**
   * Called with each notification's payload, and without one after the listening connection was lost and
   * made again: notifications sent in between are gone, so the listener should look for itself.
   */
  onNotify: (payload?: string) => void;
  /** A listening connection that failed; it is made again in the background. */
  onError?: (error: unknown) => void;
}
