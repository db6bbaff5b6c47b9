// Graceful shutdown (SIGTERM, SIGINT): an ordered list of phases, each bounded, so a rolling restart loses no
// accepted work and hangs up nobody who could have finished (docs/operations.md "Shutdown" is the reference;
// docs/voice.md "Real SIP: shutdown" the SIP side). Every phase before the calls are ended shares one deadline,
// the grace period (SHUTDOWN_GRACE_SECONDS) from the signal; the phases after it have small bounds of their
// own, so the whole sequence ends within shutdownBoundMs() and the process exits.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { App } from './app.ts';
import type { Database } from './platform/db/index.ts';
import type { Runtime } from './runtime.ts';

/** What a new call (an INVITE outside a dialog) is told to wait before trying again: another process's start. */
export const SIP_RETRY_AFTER_SECONDS = 5;
/** Running jobs get at most this long to finish (within the grace period); the rest are handed back. */
export const JOBS_FINISH_MS = 10_000;
/** How long the calls still live at the end of the grace period get to be ended and recorded. */
export const END_CALLS_MS = 5_000;
/** How long our BYEs get to be answered before the SIP sockets close. */
export const BYE_ANSWER_MS = 2_000;
/** How long closing the carrier session, the counters and the database may take. */
export const RELEASE_MS = 3_000;

/** The cause a call ended by the shutdown is recorded with (docs/voice.md "Hang-up causes"). */
export const SHUTDOWN_CAUSE = 'server_shutdown';

export interface ShutdownPhase {
  name: string;
  /** Runs the phase; what it returns (counts) goes in the log line that closes it. */
  run(): Promise<Record<string, unknown> | undefined>;
}

export interface ShutdownParts {
  runtime: Runtime;
  /** The HTTP server, when this process runs the `api` role. */
  app?: App;
  db: Database;
  graceSeconds: number;
  /** When the signal came (a Date.now() time). */
  startedAt: number;
}

/** The most the whole sequence may take: the grace period, the calls' ending, the BYEs, the release, a margin. */
export function shutdownBoundMs(graceSeconds: number): number {
  return graceSeconds * 1000 + END_CALLS_MS + BYE_ANSWER_MS + RELEASE_MS + 2_000;
}

/** The shutdown, in order. */
export function shutdownPhases(parts: ShutdownParts): ShutdownPhase[] {
  const { runtime, app, db } = parts;
  const graceEnds = parts.startedAt + parts.graceSeconds * 1000;
  const left = () => Math.max(0, graceEnds - Date.now());
  return [
    {
      // New calls go to another process; calls under way keep every request of their dialogs.
      name: 'refuse new calls',
      run: async () => {
        runtime.sipListener.refuseNewCalls(SIP_RETRY_AFTER_SECONDS);
        return { liveCalls: runtime.calls.liveCount };
      },
    },
    {
      // The listening socket closes (a balancer sends new connections elsewhere), idle keep-alive connections
      // close, a new request on a busy one is answered 503 with Connection: close, and requests in flight
      // finish: until the grace period ends, when what is left is cut.
      name: 'stop taking requests',
      run: async () => {
        if (!app) return undefined;
        const closed = app.close();
        const inTime = await Promise.race([closed.then(() => true), sleep(left()).then(() => false)]);
        if (!inTime) app.server.closeAllConnections();
        await closed;
        return { inTime };
      },
    },
    {
      // Stops claiming; running jobs finish, or are handed back for another worker to take at once.
      name: 'finish or hand back jobs',
      run: async () => runtime.jobs.stop({ finishWithinMs: Math.min(JOBS_FINISH_MS, left()) }),
    },
    {
      name: 'wait for live calls',
      run: async () => {
        await runtime.calls.whenNoLiveCalls(graceEnds);
        return { stillLive: runtime.calls.liveCount };
      },
    },
    {
      // A BYE to each side still there, the call recorded with its cause and its events written (the next
      // process's worker delivers their webhooks).
      name: 'end remaining calls',
      run: async () => {
        if (runtime.calls.liveCount === 0) return { ended: 0 };
        const ended = await runtime.calls.endAll(SHUTDOWN_CAUSE, Date.now() + END_CALLS_MS);
        return { ended, stillLive: runtime.calls.liveCount };
      },
    },
    {
      name: 'close SIP',
      run: async () => {
        const answered = await Promise.race([
          runtime.sipListener.byesAnswered().then(() => true),
          sleep(BYE_ANSWER_MS).then(() => false),
        ]);
        runtime.sipListener.stop();
        return { byesAnswered: answered };
      },
    },
    {
      name: 'release connections',
      run: async () => {
        const released = (async () => {
          await runtime.carrier.stop?.();
          await runtime.rateLimiter.store.close();
          await db.close();
        })();
        const inTime = await Promise.race([released.then(() => true), sleep(RELEASE_MS).then(() => false)]);
        return { inTime };
      },
    },
  ];
}

/** Runs the phases in order, one log line each; a phase that fails is logged and the next one runs. */
export async function runShutdown(phases: ShutdownPhase[], log: FastifyBaseLogger): Promise<boolean> {
  let clean = true;
  for (const phase of phases) {
    const began = Date.now();
    try {
      const result = await phase.run();
      log.info({ phase: phase.name, ms: Date.now() - began, ...result }, 'shutdown phase done');
    } catch (error) {
      clean = false;
      log.error({ err: error, phase: phase.name, ms: Date.now() - began }, 'shutdown phase failed');
    }
  }
  return clean;
}
