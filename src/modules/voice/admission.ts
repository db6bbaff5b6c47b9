import type { Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { toCall } from './call-end.ts';
import { nextCallState } from './call-states.ts';
import type { CallRow, NewCall } from './call-store.ts';
import { CallCompleted } from './events.ts';
import type { LiveCallDeps } from './live-call.ts';

/** Seconds a capacity lease lasts; the process holding the call renews it every third of that. */
export const LEASE_SECONDS = 60;

/** A call asking for a place in its region. */
export interface CallRequest {
  organizationId: string;
  region: string;
  direction: NewCall['direction'];
  from: string;
  to: string;
  extensionId: string | null;
  record: boolean;
}

export class CallAdmission {
  private leaseTimer?: NodeJS.Timeout;

  constructor(
    private readonly deps: LiveCallDeps & {
      /** The ids of the calls whose programs run in this process: their leases are ours to renew. */
      running: ReadonlyMap<string, unknown>;
    },
  ) {}

  /**
   * Records a live call if its region has room: the region's row is locked (admissions take turns), calls
   * whose PBX stopped renewing their lease are ended first (`pbx_lost`), then the live ones are counted.
   */
  async admit(call: CallRequest): Promise<CallRow> {
    const { db, clock, store } = this.deps;
    const now = clock.now();
    return db.transaction(async (tx) => {
      const capacity = await store.lockRegion(tx, call.region);
      await this.endLostCalls(tx, call.region, now);
      if ((await store.countLive(tx, call.region)) >= capacity) {
        throw new ApiError(
          409,
          capacity === 0
            ? `Calls in the ${call.region} region are not available now; try again later`
            : `The ${call.region} region has no room for another call now; try again shortly`,
          { code: 'VOICE_REGION_UNAVAILABLE', headers: { 'Retry-After': capacity === 0 ? '60' : '5' } },
        );
      }
      return store.insert(tx, {
        id: newId('call', now.getTime()),
        ...call,
        leaseExpiresAt: new Date(now.getTime() + LEASE_SECONDS * 1000),
        now,
      });
    });
  }

  /** An inbound call that could not be taken: recorded ended, `failed`, holding no place. */
  async refuse(
    call: Omit<CallRequest, 'extensionId'> & { extensionId: null },
    cause: string,
  ): Promise<CallRow> {
    const { db, clock, store, events } = this.deps;
    const now = clock.now();
    return db.transaction(async (tx) => {
      const row = await store.insert(tx, {
        id: newId('call', now.getTime()),
        ...call,
        leaseExpiresAt: null,
        ended: { status: 'failed', cause },
        now,
      });
      await events.record(tx, CallCompleted, { organizationId: row.organization_id, data: toCall(row) });
      return row;
    });
  }

  /**
   * The hourly sweep (retention): ends every region's lost calls, so a region nobody calls in does not show
   * calls of a dead process as live for long. Returns how many it ended.
   */
  async endLost(now: Date): Promise<number> {
    const { db, store } = this.deps;
    let ended = 0;
    for (const { region } of await store.regions(db)) {
      ended += await db.transaction(async (tx) => {
        await store.lockRegion(tx, region);
        return this.endLostCalls(tx, region, now);
      });
    }
    return ended;
  }

  async regions(): Promise<{ region: string; maxConcurrentCalls: number; activeCalls: number }[]> {
    const rows = await this.deps.store.regions(this.deps.db);
    return rows.map((row) => ({
      region: row.region,
      maxConcurrentCalls: row.max_concurrent_calls,
      activeCalls: row.live,
    }));
  }

  async setRegion(region: string, maxConcurrentCalls: number) {
    await this.deps.store.setRegion(this.deps.db, region, maxConcurrentCalls, this.deps.clock.now());
    return (await this.regions()).find((row) => row.region === region)!;
  }

  /** Renews the leases of this process's calls every third of their life, from its first call on. */
  renewLeases(): void {
    if (this.leaseTimer) return;
    const { db, clock, store, log, running } = this.deps;
    this.leaseTimer = setInterval(
      () => {
        const ids = [...running.keys()];
        if (ids.length === 0) return;
        const until = new Date(clock.now().getTime() + LEASE_SECONDS * 1000);
        store
          .renewLeases(db, ids, until)
          .catch((error) => log.error({ err: error }, 'could not renew the leases of live calls'));
      },
      (LEASE_SECONDS * 1000) / 3,
    );
    this.leaseTimer.unref();
  }

  stopLeases(): void {
    clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
  }

  /** Ends the region's calls whose lease ran out; this process's own (a clock moved far) are renewed. */
  private async endLostCalls(tx: Queryable, region: string, now: Date): Promise<number> {
    const { store, ending, running } = this.deps;
    const expired = await store.expiredLeases(tx, region, now);
    if (expired.length === 0) return 0;
    const ours = expired.filter((row) => running.has(row.id)).map((row) => row.id);
    if (ours.length > 0) await store.renewLeases(tx, ours, new Date(now.getTime() + LEASE_SECONDS * 1000));
    for (const row of expired) {
      if (running.has(row.id)) continue;
      // By the call's table: an answered call ends completed, one that never was, failed.
      await ending.write(tx, row, {
        status: nextCallState(row.status, 'completed') ? 'completed' : 'failed',
        at: row.lease_expires_at!,
        cause: 'pbx_lost',
      });
    }
    return expired.length - ours.length;
  }
}
