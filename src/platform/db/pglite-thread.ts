// The embedded database's own thread (a worker_threads Worker started by pglite-threaded.ts). PGlite runs
// PostgreSQL compiled to WebAssembly, synchronously inside each call: on the server's main thread its work
// (a page of rows, a dispatch batch, its boot at start) held the event loop from HTTP and SIP. Here it runs
// beside it, and the main thread only sends statements and receives rows.
//
// Each message from the main thread is one request with an id, answered once with that id. A transaction is
// PGlite's own `transaction()`, held open while the main thread sends its statements one by one, and ended by
// the main thread's `end` (commit or roll back). PGlite serialises everything else behind it, as it does in
// one thread. Errors travel as plain objects with PostgreSQL's fields (code, constraint, detail…), which the
// services read.
import { parentPort, workerData } from 'node:worker_threads';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { openPglite, WalBound } from './pglite-settings.ts';
import type { ThreadReply, ThreadRequest } from './pglite-threaded.ts';

const port = parentPort!;
const { dataDir } = workerData as { dataDir: string };

/** What the main thread's `end` of a transaction that is to roll back throws inside PGlite's transaction. */
const ROLLBACK = Symbol('rollback');

/** The requests of each open transaction, in the order they came, for the transaction's loop to take. */
class TransactionInbox {
  private readonly waiting: ThreadRequest[] = [];
  private wake?: (request: ThreadRequest) => void;
  /** The transaction took its `end`: later statements of it are answered with an error, as PGlite would. */
  ended = false;

  put(request: ThreadRequest): void {
    if (this.ended) {
      reply({ id: request.id, error: { message: 'the transaction has ended' } });
      return;
    }
    if (this.wake) {
      const wake = this.wake;
      this.wake = undefined;
      wake(request);
    } else this.waiting.push(request);
  }

  take(): Promise<ThreadRequest> {
    const next = this.waiting.shift();
    if (next) return Promise.resolve(next);
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }
}

function plainError(error: unknown): ThreadReply['error'] {
  if (!(error instanceof Error)) return { message: String(error) };
  const plain: Record<string, unknown> = { message: error.message, name: error.name };
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === 'string' || typeof value === 'number') plain[key] = value;
  }
  return plain as ThreadReply['error'];
}

const reply = (message: ThreadReply) => port.postMessage(message);

/** Answers request `id` with what `work` gives (rows, or none), or with its error. */
const answer = (id: number, work: Promise<unknown[] | undefined | void>) =>
  work.then(
    (rows) => reply({ id, rows: rows ?? [] }),
    (error) => reply({ id, error: plainError(error) }),
  );

async function main(): Promise<void> {
  let client: PGlite;
  try {
    client = await openPglite(dataDir);
  } catch (error) {
    reply({ id: 0, error: plainError(error) });
    return;
  }
  const wal = new WalBound(client);
  const transactions = new Map<number, TransactionInbox>();
  const subscriptions = new Map<number, () => Promise<void>>();

  const statement = async (runner: PGlite | Transaction, request: ThreadRequest) => {
    if (request.op === 'query') return (await runner.query(request.sql!, request.params)).rows;
    await runner.exec(request.sql!);
    return [];
  };

  /** Runs a transaction: its statements come through its inbox until the main thread ends it. */
  const transaction = (request: ThreadRequest) => {
    const inbox = new TransactionInbox();
    transactions.set(request.tx!, inbox);
    let endId = 0;
    client
      .transaction(async (tx) => {
        reply({ id: request.id, rows: [] }); // begun: the main thread's work may start
        for (;;) {
          const next = await inbox.take();
          if (next.op === 'end') {
            inbox.ended = true;
            endId = next.id;
            if (next.commit) return;
            throw ROLLBACK;
          }
          try {
            reply({ id: next.id, rows: await statement(tx, next) });
          } catch (error) {
            reply({ id: next.id, error: plainError(error) });
          }
        }
      })
      .then(
        () => reply({ id: endId, rows: [] }),
        (error) => {
          // Not begun at all (endId 0): the begin request gets the error.
          if (error === ROLLBACK) reply({ id: endId, rows: [] });
          else reply({ id: endId || request.id, error: plainError(error) });
        },
      )
      .finally(() => transactions.delete(request.tx!));
  };

  port.on('message', (request: ThreadRequest) => {
    if (request.tx !== undefined && request.op !== 'begin') {
      const inbox = transactions.get(request.tx);
      if (inbox) inbox.put(request);
      else reply({ id: request.id, error: { message: 'the transaction has ended' } });
      return;
    }
    switch (request.op) {
      case 'begin':
        // The WAL is bounded before a transaction too: a workload of transactions alone would grow it.
        wal.check().then(
          () => transaction(request),
          (error) => reply({ id: request.id, error: plainError(error) }),
        );
        return;
      case 'query':
      case 'exec':
        answer(
          request.id,
          wal.check().then(() => statement(client, request)),
        );
        return;
      case 'listen': {
        const notify = (payload: string) => reply({ id: -1, subscription: request.subscription, payload });
        answer(
          request.id,
          client.listen(request.channel!, notify).then((stop) => {
            subscriptions.set(request.subscription!, stop);
          }),
        );
        return;
      }
      case 'unlisten': {
        const stop = subscriptions.get(request.subscription!);
        subscriptions.delete(request.subscription!);
        answer(request.id, Promise.resolve(client.closed ? undefined : stop?.()));
        return;
      }
      case 'close':
        answer(request.id, Promise.resolve(client.closed ? undefined : client.close()));
        return;
      default:
        reply({ id: request.id, error: { message: `unknown request ${String(request.op)}` } });
    }
  });
  reply({ id: 0, rows: [] }); // open
}

void main();
