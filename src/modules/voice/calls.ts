// Calls (CONTRACT section 9): the face the routes, the SIP PBX and the agents module call. The work is split
// by responsibility: how a call begins (call-entry.ts), admission against the region's capacity with leases
// (admission.ts), the program each call follows (dial-plan.ts), the live call and the writes of its steps
// (live-call.ts), which its state's table allows or refuses (call-states.ts), and its end (call-end.ts). Here: the wiring, the programs this process runs, and the hang-ups
// asked of them, from this process or, over NOTIFY, from another one.
// Each call's program runs while the call lives, in the process whose PBX holds it; that process renews the
// call's capacity lease while it runs (migrations/021_calls.sql).

import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { hourlyBuckets, timeWindow } from '../../platform/time-window.ts';
import type { NumberService } from '../numbers/index.ts';
import type { Organization, OrganizationService } from '../organizations/index.ts';
import { CallAdmission } from './admission.ts';
import { AudioFetcher } from './audio-fetch.ts';
import { CallEnding, toCall } from './call-end.ts';
import { CallEntry } from './call-entry.ts';
import type { EndStatus } from './call-states.ts';
import { type CallRow, CallStore } from './call-store.ts';
import { CallTransfers, type PhoneTransferRefusal } from './call-transfer.ts';
import { type AgentRunner, DialPlan } from './dial-plan.ts';
import type { ExtensionRow } from './extension-store.ts';
import type { ExtensionService } from './extensions.ts';
import { FlowRunner, type FlowSource, type RingGroupSource } from './flow-runner.ts';
import type { FlowApps } from './flow-webhook.ts';
import { LiveCall, type LiveCallDeps } from './live-call.ts';
import type { CallMedia } from './media.ts';
import type { Pbx, RingResult } from './pbx.ts';
import type { QueueRuntime } from './queues/index.ts';
import {
  CALL_STATS_MAX_DAYS,
  type CallCreateInput,
  type CallHourly,
  type CallTransferInput,
  type PublicCall,
} from './schemas.ts';
import type { StreamTargetOptions } from './stream-target.ts';

export { LEASE_SECONDS } from './admission.ts';
export { toCall } from './call-end.ts';
export type { AgentEnd, AgentRunner } from './dial-plan.ts';
export { PHONE_RING_SECONDS } from './dial-plan.ts';

/** The NOTIFY channel on which a process asks the one holding a call to hang it up. */
const HANGUP_CHANNEL = 'voice_hangup';
const HANGUP_WAIT_MS = 5000;
const HANGUP_POLL_MS = 100;
const HANGUP_ASK_EVERY_MS = 1000;

export class CallService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly log: FastifyBaseLogger;
  readonly store = new CallStore();
  /** The programs of the calls this process holds, by call id, with the PBX carrying each. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly engines = new Map<string, Pbx>();
  /** The live calls of those programs (a transfer acts on one). */
  private readonly lives = new Map<string, LiveCall>();
  /** Transfers of the calls this process holds (call-transfer.ts). */
  readonly transfers: CallTransfers;
  private readonly ending: CallEnding;
  /** What each live call writes its steps with. */
  private readonly liveDeps: LiveCallDeps;
  private readonly admission: CallAdmission;
  private readonly entry: CallEntry;
  private agents?: AgentRunner;
  private flows?: FlowSource;
  private ringGroups?: RingGroupSource;
  private queues?: QueueRuntime;
  private apps?: FlowApps;
  private hangups?: Promise<(() => Promise<void>) | undefined>;
  /** The server is closing: the last call to end stops the listener and the leases (close). */
  private closing = false;

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    events: EventOutbox;
    pbx: Pbx;
    /** The PBX that carries the calls the API places: the SIP one while its listener runs. */
    placing?: () => Pbx;
    extensions: ExtensionService;
    numbers: NumberService;
    organizations: OrganizationService;
    media: CallMedia;
    /** Fetches a play step's audioUrl (guarded by the SSRF rules in production; by default always). */
    audio?: AudioFetcher;
    log: FastifyBaseLogger;
    /** Where a call flow's media streams may connect (stream-target.ts); production's rules when absent. */
    streams?: StreamTargetOptions;
    /** The platform's SIP domain: a transfer to a `sip:` URI names an extension there. */
    sipDomain?: string;
    /** Counts a call ended, by its end status (metrics). */
    countEnded?: (status: EndStatus) => void;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.log = deps.log;
    const { db, clock, events, log } = deps;
    const store = this.store;
    const agents = () => this.agents;
    const plan = new DialPlan({ db, clock, extensions: deps.extensions, log, agents });
    this.transfers = new CallTransfers({
      db,
      store,
      extensions: deps.extensions,
      log,
      live: (callId) => this.lives.get(callId),
      ringGroups: () => this.ringGroups,
      sipDomain: deps.sipDomain,
    });
    const flows = new FlowRunner({
      db,
      clock,
      events,
      extensions: deps.extensions,
      plan,
      flows: () => this.flows,
      ringGroups: () => this.ringGroups,
      queues: () => this.queues,
      apps: () => this.apps,
      transfers: this.transfers,
      media: deps.media,
      audio: deps.audio ?? new AudioFetcher({ guarded: true }),
      log,
      streams: deps.streams,
    });
    this.ending = new CallEnding({ store, media: deps.media, events, countEnded: deps.countEnded });
    this.liveDeps = { db, clock, events, store, ending: this.ending, log };
    this.admission = new CallAdmission({
      db,
      clock,
      events,
      store,
      ending: this.ending,
      log,
      running: this.running,
    });
    this.entry = new CallEntry({
      db,
      clock,
      store,
      numbers: deps.numbers,
      organizations: deps.organizations,
      extensions: deps.extensions,
      admission: this.admission,
      ending: this.ending,
      plan,
      flows,
      start: (row, program, engine) => this.start(row, program, engine),
      pbx: deps.pbx,
      placing: deps.placing ?? (() => deps.pbx),
      agents,
    });
  }

  /** Lets AI agents take calls (a number routed to an agent) and place them. */
  useAgents(runner: AgentRunner): void {
    this.agents = runner;
  }

  /** Where the call flows of numbers routed to a flow come from (the flows of flows/). */
  useFlows(source: FlowSource, ringGroups: RingGroupSource): void {
    this.flows = source;
    this.ringGroups = ringGroups;
  }

  /** Lets call flows put callers in queues; the runtime hears of each call's end (a member may be free). */
  useQueues(runtime: QueueRuntime): void {
    this.queues = runtime;
  }

  /** Lets numbers routed to a webhook, gathers' actionUrls and redirects' urls reach the customer's apps. */
  useFlowApps(apps: FlowApps): void {
    this.apps = apps;
  }

  // How calls begin (call-entry.ts)

  /**
   * POST /agents/{id}/calls: agent `agentId` calls `to` from one of the organization's numbers (`from`, else
   * its first). Answers at once (202); the agent talks once the callee answers.
   */
  placeForAgent(
    org: Organization,
    agentId: string,
    input: { to: string; from?: string },
  ): Promise<PublicCall> {
    return this.entry.placeForAgent(org, agentId, input);
  }

  /** POST /calls: an outbound (click-to-call) or internal call. Answers at once (202); the call plays out. */
  place(org: Organization, input: CallCreateInput): Promise<PublicCall> {
    return this.entry.place(org, input);
  }

  /**
   * An internal call a phone placed (a SIP INVITE from extension `caller` to extension `callee`): the caller is
   * on the line already, so the callee is reached at once, on `engine` (the SIP PBX). `beforeStart` runs once
   * the record exists, before the first step (the SIP PBX ties its dialog to the call id).
   */
  fromPhone(
    org: Organization,
    caller: ExtensionRow,
    callee: ExtensionRow,
    engine: Pbx,
    beforeStart: (callId: string) => void,
  ): Promise<CallRow> {
    return this.entry.fromPhone(org, caller, callee, engine, beforeStart);
  }

  /**
   * A call a phone placed to a phone number (a SIP INVITE from extension `caller` to `number`), out through the
   * trunk on `engine` (the SIP PBX): an `outbound` call of the extension. The callee sees as caller id the
   * number routed to the extension (to it, or to its voicemail), else the organization's first number; an
   * organization with no number cannot call out (400). `beforeStart` as for fromPhone.
   */
  fromPhoneToNumber(
    org: Organization,
    caller: ExtensionRow,
    number: string,
    engine: Pbx,
    beforeStart: (callId: string) => void,
  ): Promise<CallRow> {
    return this.entry.fromPhoneToNumber(org, caller, number, engine, beforeStart);
  }

  /**
   * A call arriving at one of our numbers (from the PBX; in test, from the operator's test control). Routed by
   * the number's voice route. A call that cannot be taken is recorded already ended: `failed`, with why.
   * `beforeStart` runs once the record exists and before the first step (the simulator's script).
   */
  arrive(
    input: { from: string; to: string },
    beforeStart?: (callId: string) => void,
    engine?: Pbx,
  ): Promise<{ call: CallRow; program?: Promise<void> }> {
    return this.entry.arrive(input, beforeStart, engine);
  }

  // Reading and ending calls

  async get(organizationId: string, id: string): Promise<PublicCall> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Call');
    return toCall(row);
  }

  /** A call of any organization, for the operator's test controls. */
  async getAny(id: string): Promise<CallRow> {
    const row = await this.store.findAny(this.db, id);
    if (!row) throw ApiError.notFound('Call');
    return row;
  }

  page(organizationId: string, query: PageQueryInput & { since?: string; live?: boolean }, surface: string) {
    const since = query.since ? new Date(query.since) : null;
    const live = query.live === true;
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.calls.list`,
      keyset: true,
      organizationId,
      // Also what a cursor is bound to: a cursor from one filtering is refused by another.
      filters: { since, live },
      ...this.store.listQuery(organizationId, { since, live }),
      map: toCall,
    });
  }

  /** Calls created in each hour of a window (GET /calls/stats/hourly), for the dashboard's charts. */
  async hourly(organizationId: string, query: { since?: string; until?: string }): Promise<CallHourly> {
    const window = timeWindow(query, this.clock.now(), { defaultDays: 1, maxDays: CALL_STATS_MAX_DAYS });
    const buckets = hourlyBuckets(window, () => ({
      total: 0,
      inbound: 0,
      outbound: 0,
      internal: 0,
      answered: 0,
    }));
    for (const row of await this.store.countsByHour(this.db, organizationId, window.since, window.until)) {
      const bucket = buckets[row.hour];
      if (!bucket) continue;
      bucket.total += row.n;
      bucket[row.direction] += row.n;
      if (row.answered) bucket.answered += row.n;
    }
    return { since: window.since.toISOString(), until: window.until.toISOString(), buckets };
  }

  /**
   * Ends the call now: before an answer it is `canceled`, after one `completed`; either way with the cause
   * `hangup_requested`. A call that has ended already is answered as it is (nothing to do).
   */
  async hangup(organizationId: string, id: string): Promise<PublicCall> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Call');
    if (row.ended_at) return toCall(row);
    const program = this.running.get(id);
    const engine = this.engines.get(id);
    if (program && engine?.hangup(id)) {
      // A hang-up that lands between two steps (a record being written, a call flow resolving its next step)
      // finds nothing waiting on the PBX: it is asked again until the program has ended the call.
      let ended = false;
      void program.finally(() => {
        ended = true;
      });
      while (!ended) {
        await Promise.race([program, sleep(HANGUP_POLL_MS)]);
        if (!ended) engine.hangup(id);
      }
      return this.get(organizationId, id);
    }
    // Another process holds the call (several API processes share the database): it is asked over
    // NOTIFY and hangs up if it holds it; the answer is the call once its record says it ended. Asked again
    // every second: a process that has just taken its first call may not be listening yet, and a NOTIFY
    // nobody listens to is gone (a second hang-up of a call is nothing).
    for (let waited = 0; waited < HANGUP_WAIT_MS; waited += HANGUP_POLL_MS) {
      if (waited % HANGUP_ASK_EVERY_MS === 0) await this.store.askToHangUp(this.db, HANGUP_CHANNEL, id);
      const now = await this.store.find(this.db, organizationId, id);
      if (now?.ended_at) return toCall(now);
      await sleep(HANGUP_POLL_MS);
    }
    throw new ApiError(409, 'No PBX process answered for this call; try again shortly', {
      code: 'CALL_NOT_HELD',
    });
  }

  /**
   * Listens for hang-ups asked of this process (POST /calls/{id}/hangup served by another one); from its first
   * call on, so a process that never holds a call holds no listening connection either.
   */
  private listenForHangups(): void {
    if (this.hangups || !this.db.listen) return;
    this.hangups = this.db
      .listen({
        channel: HANGUP_CHANNEL,
        onNotify: (callId) => {
          if (callId) this.engines.get(callId)?.hangup(callId);
        },
        onError: (error) => this.log.warn({ err: error }, 'lost the hang-up listener; reconnecting'),
      })
      .catch((error) => {
        this.log.error({ err: error }, 'could not listen for hang-ups');
        return undefined;
      });
  }

  /**
   * The server is closing: stops listening for hang-ups and renewing leases, at once when no call is live, else
   * when the last live call ends (a shutdown keeps calls up for its grace period: their leases must hold, and a
   * hang-up asked of them by another process must still reach them).
   */
  async close(): Promise<void> {
    this.closing = true;
    if (this.running.size === 0) await this.stopListening();
  }

  private async stopListening(): Promise<void> {
    const hangups = this.hangups;
    this.hangups = undefined;
    const stop = await hangups;
    await stop?.();
    this.admission.stopLeases();
  }

  // Shutdown (docs/operations.md "Shutdown")

  /** How many calls this process holds now (their programs run here). */
  get liveCount(): number {
    return this.running.size;
  }

  /** Resolves when no call is live in this process, or at `deadline` (a Date.now() time), whichever is first. */
  async whenNoLiveCalls(deadline: number): Promise<void> {
    while (this.running.size > 0 && Date.now() < deadline) {
      const timer = new AbortController();
      await Promise.race([
        Promise.allSettled([...this.running.values()]),
        sleep(deadline - Date.now(), undefined, { signal: timer.signal }).catch(() => {}),
      ]);
      timer.abort();
    }
  }

  /**
   * Ends every call this process holds with `cause` (each side still there is sent a BYE; the record says
   * `cause`), asking again, as a hang-up does, a call caught between two steps; resolves when each has ended, or
   * at `deadline`. Returns how many calls it ended.
   */
  async endAll(cause: string, deadline: number): Promise<number> {
    const ids = [...this.running.keys()];
    while (this.running.size > 0 && Date.now() < deadline) {
      for (const [id, engine] of this.engines) engine.hangup(id, cause);
      await Promise.race([
        Promise.allSettled([...this.running.values()]),
        sleep(Math.min(HANGUP_POLL_MS, Math.max(0, deadline - Date.now()))),
      ]);
    }
    return ids.filter((id) => !this.running.has(id)).length;
  }

  // Transfers (call-transfer.ts)

  /** POST /calls/{id}/transfer: 202 with the call; the target rings from here. */
  transfer(organizationId: string, id: string, input: CallTransferInput): Promise<PublicCall> {
    return this.transfers.fromApi(organizationId, id, input);
  }

  /** A phone's blind transfer (SIP REFER) of call `callId` to what it dialled. */
  transferFromPhone(callId: string, dialled: string): Promise<RingResult | PhoneTransferRefusal> {
    return this.transfers.fromPhone(callId, dialled);
  }

  // Capacity (admission.ts)

  regions(): Promise<{ region: string; maxConcurrentCalls: number; activeCalls: number }[]> {
    return this.admission.regions();
  }

  setRegion(region: string, maxConcurrentCalls: number) {
    return this.admission.setRegion(region, maxConcurrentCalls);
  }

  /**
   * The hourly sweep (retention): ends every region's lost calls, so a region nobody calls in does not show
   * calls of a dead process as live for long. Returns how many it ended.
   */
  endLost(now: Date): Promise<number> {
    return this.admission.endLost(now);
  }

  // The programs this process runs

  /** Runs a call's program in the background; whatever it leaves unfinished ends the call `failed`. */
  private start(row: CallRow, program: (live: LiveCall) => Promise<void>, engine: Pbx): Promise<void> {
    const live = new LiveCall(row, engine, this.liveDeps);
    this.lives.set(row.id, live);
    const run = (async () => {
      try {
        await program(live);
      } catch (error) {
        this.log.error({ err: error, callId: row.id }, 'call program failed');
        await live
          .finish({ status: 'failed', at: this.clock.now(), cause: 'platform_error' })
          .catch((endError) =>
            this.log.error({ err: endError, callId: row.id }, 'could not end a failed call'),
          );
      } finally {
        // What the call did, in one line: its last state and each leg it rang.
        this.log.debug({ callId: row.id, state: live.state, legs: live.legs }, 'call over');
        engine.release(row.id);
        this.running.delete(row.id);
        this.engines.delete(row.id);
        this.lives.delete(row.id);
        if (this.running.size === 0) {
          this.admission.stopLeases();
          if (this.closing) {
            void this.stopListening().catch((error) =>
              this.log.warn({ err: error }, 'could not stop listening'),
            );
          }
        }
        this.queues?.callEnded();
      }
    })();
    this.running.set(row.id, run);
    this.engines.set(row.id, engine);
    this.admission.renewLeases();
    this.listenForHangups();
    return run;
  }
}
