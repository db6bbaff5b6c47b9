// drain(): runs due jobs until none is left (tests, and a worker catching up), with the slots the background
// worker has (jobs/slots.ts), claiming ahead as it does; JobQueue.drain is its public face.
import { type SlotQueue, Slots } from './slots.ts';
import type { Claim, Job } from './store.ts';

/** What a drain needs of its queue. */
export interface DrainDeps {
  /** The worker's shared slots. */
  concurrency: number;
  queues: () => SlotQueue[];
  queue: (name: string) => SlotQueue;
  claim: (claim: Claim) => Promise<Job[]>;
  /** Runs one job to its recorded outcome. */
  run: (job: Job) => Promise<unknown>;
  handBack: (ids: string[]) => Promise<number>;
  /** The app clock's time (ms). */
  nowMs: () => number;
}

/**
 * Keeps every slot busy: a slot that frees is filled by the next claim, and jobs the finished ones enqueued
 * are claimed too. `maxRounds` bounds the claims that found work. Returns how many jobs ran.
 */
export async function drainJobs(deps: DrainDeps, maxRounds: number): Promise<number> {
  const slots = new Slots({ total: deps.concurrency });
  const runs = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const handedBack: Promise<unknown>[] = [];
  let total = 0;
  let rounds = 0;
  const launch = (job: Job, queue: SlotQueue): void => {
    slots.take(queue);
    const run: Promise<void> = deps
      .run(job)
      .then(() => {})
      .catch((error) => {
        failure ??= { error };
      })
      .finally(() => {
        runs.delete(run);
        slots.release(queue);
        // A job claimed ahead takes the freed slot at once (held too long, it is handed back instead).
        const { job: next, stale } = slots.nextHeld(queue, deps.nowMs());
        if (stale.length > 0) {
          total -= stale.length; // claimed again later, and counted then
          handedBack.push(deps.handBack(stale.map((held) => held.id)));
        }
        if (next) launch(next, queue);
      });
    runs.add(run);
  };
  while (rounds < maxRounds) {
    const claim = slots.claimable(deps.queues());
    const wanted = claim.total;
    let claimed = 0;
    // Jobs that end while this claim is on its way may enqueue more (a dispatch its deliveries) and free
    // their queue's slots, which the claim could not see: nothing found is only the end if nothing ran.
    const runningAtClaim = runs.size;
    if (wanted > 0) {
      const jobs = await deps.claim(claim);
      claimed = jobs.length;
      if (claimed > 0) rounds++;
      total += claimed;
      for (const job of jobs) {
        const queue = deps.queue(job.queue);
        if (slots.canStart(queue)) launch(job, queue);
        else slots.hold(queue, job, deps.nowMs());
      }
    }
    if (runs.size === 0) {
      // Jobs handed back are pending again: the next claim takes them.
      if (handedBack.length > 0) {
        await Promise.all(handedBack.splice(0));
        continue;
      }
      if (claimed === 0 && runningAtClaim === 0) break;
      continue;
    }
    // A full claim leaves nothing free; a short one means nothing more is due until a running job ends.
    if (claimed < wanted || slots.free === 0 || wanted <= 0) {
      await Promise.race(runs);
      // The jobs that end with it (those whose outcome one batch wrote) free their slots for the same claim.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  // A run that ends may start a held job (past maxRounds too): wait for those as well.
  while (runs.size > 0) await Promise.all(runs);
  await Promise.all(handedBack);
  if (failure) throw failure.error;
  return total;
}
