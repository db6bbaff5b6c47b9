// One database layer, two engines: embedded PGlite (default) or a PostgreSQL server (DATABASE_URL).
// Both speak the same dialect, run the same migrations and answer the same queries. Services write plain
// parameterised SQL against `Queryable`, which is either the database or an open transaction.
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { Database, PoolUse, Queryable, Subscription } from './database.ts';
import { openPglite, pgliteOptions, WalBound } from './pglite-settings.ts';
import { PgliteThreadDatabase } from './pglite-threaded.ts';
import { installTimestampParser } from './timestamps.ts';

export type { Database, PoolUse, Queryable, Subscription } from './database.ts';

// int8 (count(*), bigserial) arrives as a number on both engines; our counts stay far below 2^53.
const INT8_OID = 20;
pg.types.setTypeParser(INT8_OID, (value: string) => Number(value));
// timestamptz: UTC values read from their characters, the rest by node-postgres's own parser (timestamps.ts).
installTimestampParser();

/** The longest a chain of PGlite statements may keep the event loop from timers and sockets. */
const PGLITE_YIELD_EVERY_MS = 10;
export class PgliteDatabase implements Database {
  readonly engine = 'pglite' as const;
  private lastYield = performance.now();
  private readonly wal: WalBound;

  constructor(readonly client: PGlite) {
    this.wal = new WalBound(client);
  }

  /**
   * PGlite runs in this thread and answers each statement within microtasks, so a busy worker (a campaign, a
   * dispatch backlog) could chain statements for minutes without the event loop ever reaching its timers or
   * sockets: the HTTP server would stop answering. Every statement first lets the loop turn if it has not for
   * PGLITE_YIELD_EVERY_MS.
   */
  private async letTheLoopTurn(): Promise<void> {
    if (performance.now() - this.lastYield < PGLITE_YIELD_EVERY_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.lastYield = performance.now();
  }

  static async open(dataDir: string): Promise<PgliteDatabase> {
    return new PgliteDatabase(await openPglite(dataDir));
  }

  /** The whole database as one uncompressed tarball, to start others from (`fromDump`). */
  dump(): Promise<Blob> {
    return this.client.dumpDataDir('none');
  }

  /** A database in memory that starts as `dump` (tests start each app from a migrated template). */
  static async fromDump(dump: Blob): Promise<PgliteDatabase> {
    return new PgliteDatabase(await PGlite.create({ ...pgliteOptions(), loadDataDir: dump }));
  }

  async query<Row>(sql: string, params: unknown[] = []): Promise<Row[]> {
    await this.letTheLoopTurn();
    await this.wal.check();
    const result = await this.client.query<Row>(sql, params);
    return result.rows;
  }

  async exec(sql: string): Promise<void> {
    await this.letTheLoopTurn();
    await this.wal.check();
    await this.client.exec(sql);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    await this.letTheLoopTurn();
    await this.wal.check();
    // PGlite is one connection; its transaction() holds the instance exclusively until it ends.
    return this.client.transaction(async (tx) =>
      work({
        query: async <Row>(sql: string, params: unknown[] = []) => {
          await this.letTheLoopTurn();
          return (await tx.query<Row>(sql, params)).rows;
        },
        exec: async (sql: string) => {
          await this.letTheLoopTurn();
          await tx.exec(sql);
        },
      }),
    );
  }

  async listen({ channel, onNotify }: Subscription): Promise<() => Promise<void>> {
    // PGlite is one in-process connection: its own NOTIFYs reach its listeners when their transaction commits.
    const stop = await this.client.listen(channel, (payload) => onNotify(payload));
    return async () => {
      if (!this.client.closed) await stop();
    };
  }

  /** A copy of the whole database. (PGlite's own clone() would start it with the default settings.) */
  async clone(): Promise<PgliteDatabase> {
    return PgliteDatabase.fromDump(await this.dump());
  }

  async close(): Promise<void> {
    if (!this.client.closed) await this.client.close();
  }
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const;
  constructor(readonly pool: pg.Pool) {}

  static open(url: string, poolSize = 10): PostgresDatabase {
    // A bounded wait for a connection: an exhausted pool answers with an error (a 500, or a 503 where a
    // service maps it) instead of leaving requests hanging forever.
    const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 10_000 });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    pool.on('error', () => {});
    return new PostgresDatabase(pool);
  }

  poolUse(): PoolUse {
    return {
      max: this.pool.options.max ?? 10,
      open: this.pool.totalCount,
      idle: this.pool.idleCount,
      waiting: this.pool.waitingCount,
    };
  }

  async query<Row>(sql: string, params: unknown[] = []): Promise<Row[]> {
    const result = await this.pool.query(this.statements.prepared(sql, params));
    return result.rows as Row[];
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  private readonly statements = new PreparedStatements();

  /**
   * A checked-out connection has no listener of the pool's (pg-pool removes it while the connection is lent),
   * and the server ends every session of a restart with an error of its own (57P01) that arrives while no
   * statement is running: without a listener of ours, node-postgres's `'error'` event would end the process.
   * The loss is kept and thrown by the transaction's next statement; the connection is then thrown away.
   */
  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let lost: unknown;
    const onLost = (error: unknown) => {
      lost ??= error;
    };
    client.on('error', onLost);
    const statement = async (query: string | pg.QueryConfig) => {
      if (lost !== undefined) throw lost;
      return client.query(query);
    };
    // What the pool is told at release: an error throws the connection away instead of lending it again.
    let broken: unknown;
    try {
      await statement('BEGIN');
      const result = await work({
        query: async <Row>(sql: string, params: unknown[] = []) =>
          (await statement(this.statements.prepared(sql, params))).rows as Row[],
        exec: async (sql: string) => {
          await statement(sql);
        },
      });
      await statement('COMMIT');
      return result;
    } catch (error) {
      // A connection that cannot roll back is in no state to be lent again.
      await statement('ROLLBACK').catch((rollbackFailed) => {
        broken = rollbackFailed;
      });
      throw error;
    } finally {
      client.off('error', onLost);
      client.release((lost ?? broken) as Error | undefined);
    }
  }

  /**
   * LISTENs on a connection of its own, outside the pool (a pooled connection would be handed to queries and
   * lose its LISTEN), made again after a loss with a growing pause (1 s to 30 s).
   */
  async listen({ channel, onNotify, onError = () => {} }: Subscription): Promise<() => Promise<void>> {
    let current: pg.Client | undefined;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const connect = async (): Promise<void> => {
      const client = new pg.Client(this.pool.options);
      client.on('notification', (message) => {
        if (message.channel === channel) onNotify(message.payload);
      });
      client.on('error', onError);
      client.on('end', () => {
        if (current !== client || stopped) return;
        current = undefined;
        reconnect(1000);
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      } catch (error) {
        await client.end().catch(() => {});
        throw error;
      }
      if (stopped) await client.end().catch(() => {});
      else current = client;
    };
    const reconnect = (pauseMs: number) => {
      retry = setTimeout(() => {
        connect().then(
          () => onNotify(),
          (error) => {
            onError(error);
            if (!stopped) reconnect(Math.min(pauseMs * 2, 30_000));
          },
        );
      }, pauseMs);
    };
    try {
      await connect();
    } catch (error) {
      onError(error);
      reconnect(1000);
    }
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await current?.end().catch(() => {});
      current = undefined;
    };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * Names for the statements the product runs, so that each pooled connection parses and plans a statement
 * once and then only binds and executes it (node-postgres keeps a connection's prepared statements by name).
 * The texts are the product's own SQL, parameters always apart, so they are few; past MAX_NAMED a text
 * runs unnamed (parsed each time), which keeps a connection's prepared statements bounded whatever happens.
 */
class PreparedStatements {
  private static readonly MAX_NAMED = 2000;
  private readonly names = new Map<string, string>();

  prepared(text: string, values: unknown[]): pg.QueryConfig {
    // Without parameters a text goes by the simple protocol, which also runs several statements in one.
    if (values.length === 0) return { text, values };
    let name = this.names.get(text);
    if (name === undefined && this.names.size < PreparedStatements.MAX_NAMED) {
      name = `s${this.names.size + 1}`;
      this.names.set(text, name);
    }
    return { text, values, name };
  }
}

export async function openDatabase(options: {
  databaseUrl?: string;
  dataDir: string;
  databasePoolSize?: number;
}): Promise<Database> {
  if (options.databaseUrl) return PostgresDatabase.open(options.databaseUrl, options.databasePoolSize);
  return PgliteThreadDatabase.open(options.dataDir);
}

/** True when a PostgreSQL error is a unique-constraint violation (SQLSTATE 23505), on either engine. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** SQLSTATEs of a transaction that lost to a concurrent one and may simply be run again. */
const CONFLICT_SQLSTATES = new Set(['40P01', '40001']);

/**
 * Runs `work` (a whole transaction) again when PostgreSQL ends it as a deadlock victim or a serialization
 * failure, up to `attempts` times in all; any other error, or the last conflict, is thrown. For transactions
 * whose failure would cost more than the retry: the dispatch's record of what the carrier took, whose job
 * retried would send those messages again.
 */
export async function retryingConflicts<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: string })?.code;
      if (attempt >= attempts || !code || !CONFLICT_SQLSTATES.has(code)) throw error;
    }
  }
}
