// The embedded database as the server uses it: PGlite in a thread of its own (pglite-thread.ts), reached by
// messages. Two things the server gains over PGlite in its main thread (docs/architecture.md, "The embedded
// database's thread"):
// - its work leaves the event loop: a page of rows or a dispatch batch no longer holds HTTP requests and SIP
//   datagrams behind it, and on two cores the database and the server run at once;
// - at start, PGlite's boot (its WebAssembly compiled, its files opened) runs while the main thread loads the
//   server's modules: `main.ts` calls `preopenPglite` before it imports them, and `open` takes that thread.
// Tests' databases stay in their own thread (PgliteDatabase: templates, dumps and clones are theirs).
// This module stays light (no PGlite import): main.ts loads it before everything else.
import { Worker } from 'node:worker_threads';
import type { Database, Queryable, Subscription } from './database.ts';

export interface ThreadRequest {
  id: number;
  op: 'query' | 'exec' | 'begin' | 'end' | 'listen' | 'unlisten' | 'close';
  sql?: string;
  params?: unknown[];
  /** The transaction a statement or an `end` belongs to, or the one a `begin` opens. */
  tx?: number;
  /** For `end`: commit (true) or roll back. */
  commit?: boolean;
  channel?: string;
  subscription?: number;
}

/**
 * Parameters as the thread should receive them. A structured clone copies a typed array's whole backing
 * ArrayBuffer, not just the bytes it views: a Buffer from Node's pool views 8 KiB, and a file's bytes cut out
 * of a larger upload view all of it, every byte of which would be copied to the thread for each statement. A
 * view of part of its buffer is sent as a copy of just its bytes (the thread reads a Uint8Array either way).
 */
export function compactParams(params: unknown[]): unknown[] {
  let compacted: unknown[] | undefined;
  for (let i = 0; i < params.length; i++) {
    const value = params[i];
    if (!ArrayBuffer.isView(value) || value.byteLength === value.buffer.byteLength) continue;
    compacted ??= [...params];
    compacted[i] = new Uint8Array(value.buffer, value.byteOffset, value.byteLength).slice();
  }
  return compacted ?? params;
}

export interface ThreadReply {
  /** The request answered; 0 is the thread's open (or its failure); -1 a notification. */
  id: number;
  rows?: unknown[];
  error?: { message: string; name?: string; code?: string; constraint?: string; [field: string]: unknown };
  subscription?: number;
  payload?: string;
}

/**
 * The thread's script beside this module: JavaScript in dist/; under tsx (tests, development) TypeScript, which
 * Node 20 will not load as a worker's entry point even with tsx's loader in the worker's arguments, so a line
 * of JavaScript registers tsx in the thread and then imports it. Either way the thread starts from a line of
 * code, not from a file: a thread inherits the process's options, and one started from a file refuses
 * `--input-type` (a process run as `node --input-type=module -e …` could not open the database).
 */
function threadScript(): { script: string; eval: true } {
  // No execArgv of our own: given one, Node refuses process-wide options in it (--max-old-space-size…), while
  // a thread that inherits the process's options tolerates them.
  if (!import.meta.url.endsWith('.ts')) {
    return {
      script: `import(${JSON.stringify(new URL('./pglite-thread.js', import.meta.url).href)})`,
      eval: true,
    };
  }
  const url = JSON.stringify(new URL('./pglite-thread.ts', import.meta.url).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return { script: `import(${tsx}).then(({ register }) => (register(), import(${url})))`, eval: true };
}

/**
 * A thread started early (main.ts), for the data directory it opens. Kept on the global object, not in this
 * module: in dist/ main.js loads the compiled copy of this module while serve.js bundles its own, and the
 * two must see the same thread (two PGlite instances on one data directory would corrupt it).
 */
const PREOPENED = Symbol.for('communications-platform.pglite-preopened');
type Preopened = { dataDir: string; database: PgliteThreadDatabase };
const registry = globalThis as { [PREOPENED]?: Preopened };

/** Starts the embedded database's thread now, so that its boot overlaps the loading of the server's modules. */
export function preopenPglite(dataDir: string): void {
  registry[PREOPENED] = { dataDir, database: PgliteThreadDatabase.start(dataDir) };
}

export class PgliteThreadDatabase implements Database {
  readonly engine = 'pglite' as const;
  private nextId = 1;
  private nextTx = 1;
  private nextSubscription = 1;
  private readonly pending = new Map<
    number,
    { resolve: (rows: unknown[]) => void; reject: (e: Error) => void }
  >();
  private readonly listeners = new Map<number, (payload?: string) => void>();
  /** The thread has opened the database (its request 0 answered). */
  private opened = false;
  /** Why no more requests are taken: close() was called, or the thread failed. */
  private failure?: Error;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (reply: ThreadReply) => this.answer(reply));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(new Error(`the database's thread exited (${code})`)));
    // The thread's open is request 0. Statements sent before it completes wait in the thread's port, so the
    // handle is usable at once and the boot overlaps whatever the caller does next; an open that fails fails
    // them all with its error.
    this.pending.set(0, {
      resolve: () => {
        this.opened = true;
      },
      reject: (error) => this.fail(error),
    });
  }

  /** The thread for `dataDir`: the one `preopenPglite` started for it, or a new one. */
  static async open(dataDir: string): Promise<PgliteThreadDatabase> {
    const early = registry[PREOPENED];
    registry[PREOPENED] = undefined;
    if (early?.dataDir === dataDir) return early.database;
    if (early) void early.database.close().catch(() => {});
    return PgliteThreadDatabase.start(dataDir);
  }

  /** Starts the thread and opens `dataDir` in it; the handle is usable before the open completes. */
  static start(dataDir: string): PgliteThreadDatabase {
    const { script, ...options } = threadScript();
    return new PgliteThreadDatabase(new Worker(script, { ...options, workerData: { dataDir } }));
  }

  private answer(reply: ThreadReply): void {
    if (reply.id === -1) {
      this.listeners.get(reply.subscription!)?.(reply.payload);
      return;
    }
    const waiting = this.pending.get(reply.id);
    if (!waiting) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker.unref();
    if (reply.error) waiting.reject(Object.assign(new Error(reply.error.message), reply.error));
    else waiting.resolve(reply.rows ?? []);
  }

  /**
   * The thread is gone, or never opened the database: whatever waited for it fails, and so does what follows.
   * A thread lost after it opened the database, and not by close(), ends the process as an uncaught error: in
   * the main thread PGlite's fatal errors did, and a process whose database is gone must not go on answering
   * (a supervisor restarts it; /health/live alone would not notice).
   */
  private fail(error: Error): void {
    if (this.failure) return; // closed, or already failed
    const unexpected = this.opened;
    this.failure = error;
    this.rejectPending(error);
    void this.worker.terminate();
    if (unexpected) {
      setImmediate(() => {
        throw new Error(`the embedded database's thread was lost: ${error.message}`, { cause: error });
      });
    }
  }

  private rejectPending(error: Error): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const request of waiting) request.reject(error);
  }

  private ask(request: Omit<ThreadRequest, 'id'>): Promise<unknown[]> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      try {
        const params = request.params && compactParams(request.params);
        this.worker.postMessage({ ...request, params, id });
      } catch (error) {
        reject(error); // a value structured clone cannot copy: nothing was sent
        return;
      }
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
    });
  }

  async query<Row>(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.ask({ op: 'query', sql, params })) as Row[];
  }

  async exec(sql: string): Promise<void> {
    await this.ask({ op: 'exec', sql });
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const tx = this.nextTx++;
    await this.ask({ op: 'begin', tx });
    let result: T;
    try {
      result = await work({
        query: async <Row>(sql: string, params: unknown[] = []) =>
          (await this.ask({ op: 'query', sql, params, tx })) as Row[],
        exec: async (sql: string) => {
          await this.ask({ op: 'exec', sql, tx });
        },
      });
    } catch (error) {
      await this.ask({ op: 'end', tx, commit: false }).catch(() => {});
      throw error;
    }
    await this.ask({ op: 'end', tx, commit: true });
    return result;
  }

  async listen({ channel, onNotify }: Subscription): Promise<() => Promise<void>> {
    const subscription = this.nextSubscription++;
    this.listeners.set(subscription, onNotify);
    try {
      await this.ask({ op: 'listen', channel, subscription });
    } catch (error) {
      this.listeners.delete(subscription);
      throw error;
    }
    return async () => {
      this.listeners.delete(subscription);
      if (!this.failure) await this.ask({ op: 'unlisten', subscription });
    };
  }

  async close(): Promise<void> {
    if (this.failure) return;
    const closing = this.ask({ op: 'close' });
    this.failure = new Error('the database is closed'); // statements sent from now on are refused at once
    try {
      await closing;
    } finally {
      await this.worker.terminate();
      // Statements PGlite had queued behind its close were answered with errors, or not at all: none waits.
      this.rejectPending(this.failure);
    }
  }
}
