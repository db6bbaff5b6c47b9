// Calls (CONTRACT section 9): admission against the region's capacity, the dial plan each call follows, and
// its record. The dial plan is ours and the PBX carries out its steps (pbx.ts):
//   outbound   (click-to-call) ring the extension if one is named; once it answers, ring the callee
//   internal   ring the calling extension, then the called one as below
//   inbound    by the number's voice route: an extension (ring it for its ring time; if nobody answers, its
//              forward number; then its voicemail box, when enabled), a voicemail box, or a forward number
// Each call is a program that runs while the call lives, in the process whose PBX holds it; it writes each
// step to the record with its event (call.ringing, call.answered, call.completed) in one transaction.
// Capacity: a live call holds a place in its region by a lease that this process renews while the program
// runs (migrations/021_calls.sql); a process that dies leaves leases that run out instead of places that leak.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { NumberService } from '../numbers/index.ts';
import {
  accountPolicyRefusal,
  accountRefusal,
  type Organization,
  type OrganizationService,
} from '../organizations/index.ts';
import { joinAudio } from './audio.ts';
import { type CallChange, type CallRow, type CallStatus, CallStore, type NewCall } from './call-store.ts';
import { CallAnswered, CallCompleted, CallRinging } from './events.ts';
import type { ExtensionRow } from './extension-store.ts';
import type { ExtensionService } from './extensions.ts';
import type { CallMedia } from './media.ts';
import type { AgentLine, CallAudio, Party, Pbx, PbxCall, RingResult } from './pbx.ts';
import type { CallCreateInput, PublicCall } from './schemas.ts';

/** Seconds a capacity lease lasts; the program renews it every third of that. */
export const LEASE_SECONDS = 60;
/** Seconds a phone number (a callee, a forward) rings before the call gives up on it. */
export const PHONE_RING_SECONDS = 30;
/** The NOTIFY channel on which a process asks the one holding a call to hang it up. */
const HANGUP_CHANNEL = 'voice_hangup';
const HANGUP_WAIT_MS = 5000;
const HANGUP_POLL_MS = 100;
const HANGUP_ASK_EVERY_MS = 1000;

/** How a leg's end that was not an answer ends the call. */
const STATUS_OF: Record<Exclude<RingResult['outcome'], 'answered'>, CallStatus> = {
  busy: 'busy',
  no_answer: 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
};

interface Admission {
  organizationId: string;
  region: string;
  direction: NewCall['direction'];
  from: string;
  to: string;
  extensionId: string | null;
  record: boolean;
}

/** What a call leaves behind when it ends. */
interface Leftovers {
  voicemail?: { audio: CallAudio; extensionId: string };
  recording?: CallAudio;
}

/**
 * An AI agent on calls (the agents module gives one): it keeps each agent call's record and does the talking.
 * The voice module rings, answers, transfers and ends the call around it.
 */
export interface AgentRunner {
  /**
   * Agent `agentId` takes or places the call: its agent call record begins, before it rings or answers. Says
   * whether the agent's calls are recorded.
   */
  begin(call: CallRow, agentId: string): Promise<{ record: boolean }>;
  /** The agent's outbound call rings. */
  ringing(call: CallRow, at: Date): Promise<void>;
  /**
   * Talks on the answered call until the caller hangs up, the agent ends the call, or it hands the call to
   * `transferTo`. `hangUp` ends what the line is doing (the agent's time is up).
   */
  converse(call: CallRow, line: AgentLine, hangUp: () => void): Promise<AgentEnd>;
  /** The call ended (answered or not): the agent call record gets its end. */
  end(call: CallRow, how: { transferred: boolean; endedByAgent: boolean }): Promise<void>;
}

export type AgentEnd =
  | { kind: 'hangup'; at: Date; cause: string }
  | { kind: 'ended_by_agent'; at: Date }
  | { kind: 'transfer'; at: Date; to: string };

/** What a running call knows of itself between steps. */
interface Live {
  row: CallRow;
  /** The call as its PBX knows it. */
  leg: PbxCall;
  /** The PBX carrying it: the simulated one, or the SIP one for a call a phone placed. */
  engine: Pbx;
}

export class CallService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly events: EventOutbox;
  private readonly pbx: Pbx;
  private readonly placing: () => Pbx;
  private readonly extensions: ExtensionService;
  private readonly numbers: NumberService;
  private readonly organizations: OrganizationService;
  private readonly media: CallMedia;
  private readonly log: FastifyBaseLogger;
  readonly store = new CallStore();
  /** The programs of the calls this process holds, by call id, with the PBX carrying each. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly engines = new Map<string, Pbx>();
  private leaseTimer?: NodeJS.Timeout;
  private agents?: AgentRunner;
  private hangups?: Promise<(() => Promise<void>) | undefined>;

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
    log: FastifyBaseLogger;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.events = deps.events;
    this.pbx = deps.pbx;
    this.placing = deps.placing ?? (() => deps.pbx);
    this.extensions = deps.extensions;
    this.numbers = deps.numbers;
    this.organizations = deps.organizations;
    this.media = deps.media;
    this.log = deps.log;
  }

  /** Lets AI agents take calls (a number routed to an agent) and place them. */
  useAgents(runner: AgentRunner): void {
    this.agents = runner;
  }

  // The API

  /**
   * POST /agents/{id}/calls: agent `agentId` calls `to` from one of the organization's numbers (`from`, else
   * its first). Answers at once (202); the agent talks once the callee answers.
   */
  async placeForAgent(
    org: Organization,
    agentId: string,
    input: { to: string; from?: string },
  ): Promise<PublicCall> {
    const refusal =
      accountRefusal(org, { product: 'voice' }) ?? accountPolicyRefusal(org, 'place_outbound_call');
    if (refusal) throw refusal;
    const to = normalisePhone(input.to, org.region);
    if (!to) throw ApiError.badRequest('to must be a phone number');
    let from: string | undefined;
    if (input.from) {
      const normalised = normalisePhone(input.from, org.region);
      const own = normalised ? await this.numbers.findByNumber(normalised) : undefined;
      if (!own || own.organizationId !== org.id) {
        throw ApiError.badRequest('from must be one of your numbers (the caller id the callee sees)');
      }
      from = own.number;
    } else {
      from = (await this.numbers.list(org.id))[0]?.number;
      if (!from) throw ApiError.badRequest('from: the organization has no number to call from');
    }
    const engine = this.placing();
    if (!this.agents || !engine.agentLine) {
      throw new ApiError(409, `AI agents cannot place calls on the ${engine.name} PBX yet`, {
        code: 'AGENT_CALLS_UNAVAILABLE',
      });
    }
    const row = await this.admit({
      organizationId: org.id,
      region: org.region,
      direction: 'outbound',
      from,
      to,
      extensionId: null,
      record: false,
    });
    let placed = (await this.store.change(this.db, row.id, { agent_id: agentId }, this.clock.now())) ?? row;
    let record: boolean;
    try {
      ({ record } = await this.agents.begin(placed, agentId));
    } catch (error) {
      // The call was admitted but will never run: it ends now rather than holding its place until its lease runs out.
      const failed = { status: 'failed' as const, at: this.clock.now(), cause: 'platform_error' };
      await this.db.transaction((tx) => this.end(tx, placed, failed));
      throw error;
    }
    if (record) placed = (await this.store.change(this.db, row.id, { record }, this.clock.now())) ?? placed;
    this.start(
      placed,
      (running) =>
        this.withAgent(running, async (how) => {
          const callee = await this.ring(running, { kind: 'phone', number: to }, PHONE_RING_SECONDS);
          if (callee.outcome !== 'answered') return this.finish(running, notAnswered(callee));
          await this.answered(running, callee.at);
          await this.agentTalks(running, how);
        }),
      engine,
    );
    return toCall(placed);
  }

  /** POST /calls: an outbound (click-to-call) or internal call. Answers at once (202); the call plays out. */
  async place(org: Organization, input: CallCreateInput): Promise<PublicCall> {
    const extensionStore = this.extensions.store;
    const named = input.extensionId
      ? await extensionStore.find(this.db, org.id, input.extensionId)
      : undefined;
    if (input.extensionId && !named) {
      throw ApiError.badRequest(`extensionId: ${input.extensionId} is not an extension of this organization`);
    }
    if (/^[0-9]{2,6}$/.test(input.to)) {
      const callee = await extensionStore.findByNumber(this.db, org.id, input.to);
      if (!callee) throw ApiError.badRequest(`to: this organization has no extension ${input.to}`);
      const caller = await extensionStore.findByNumber(this.db, org.id, input.from);
      if (!caller) {
        throw ApiError.badRequest(`from: an internal call comes from an extension; ${input.from} is not one`);
      }
      if (named && named.id !== caller.id) {
        throw ApiError.badRequest('extensionId: an internal call rings its caller, extension `from`');
      }
      if (caller.id === callee.id) throw ApiError.badRequest('to: an extension cannot call itself');
      const standing = accountPolicyRefusal(org, 'place_internal_call');
      if (standing) throw standing;
      const row = await this.admit(internalCall(org, caller, callee, input.record ?? false));
      this.start(row, (live) => this.internal(live, caller, callee), this.placing());
      return toCall(row);
    }
    const to = normalisePhone(input.to, org.region);
    if (!to) throw ApiError.badRequest('to must be a phone number or an extension number');
    const from = normalisePhone(input.from, org.region);
    const own = from ? await this.numbers.findByNumber(from) : undefined;
    if (!own || own.organizationId !== org.id) {
      throw ApiError.badRequest('from must be one of your numbers (the caller id the callee sees)');
    }
    const standing = accountPolicyRefusal(org, 'place_outbound_call');
    if (standing) throw standing;
    const row = await this.admit({
      organizationId: org.id,
      region: org.region,
      direction: 'outbound',
      from: own.number,
      to,
      extensionId: named?.id ?? null,
      record: input.record ?? false,
    });
    this.start(row, (live) => this.outbound(live, named), this.placing());
    return toCall(row);
  }

  /**
   * An internal call a phone placed (a SIP INVITE from extension `caller` to extension `callee`): the caller is
   * on the line already, so the callee is reached at once, on `engine` (the SIP PBX). `beforeStart` runs once
   * the record exists, before the first step (the SIP PBX ties its dialog to the call id).
   */
  async fromPhone(
    org: Organization,
    caller: ExtensionRow,
    callee: ExtensionRow,
    engine: Pbx,
    beforeStart: (callId: string) => void,
  ): Promise<CallRow> {
    const refusal =
      accountRefusal(org, { product: 'voice' }) ?? accountPolicyRefusal(org, 'place_internal_call');
    if (refusal) throw refusal;
    const row = await this.admit(internalCall(org, caller, callee, false));
    beforeStart(row.id);
    this.start(row, (live) => this.reachExtension(live, callee), engine);
    return row;
  }

  /**
   * A call a phone placed to a phone number (a SIP INVITE from extension `caller` to `number`), out through the
   * trunk on `engine` (the SIP PBX): an `outbound` call of the extension. The callee sees as caller id the
   * number routed to the extension (to it, or to its voicemail), else the organization's first number; an
   * organization with no number cannot call out (400). `beforeStart` as for fromPhone.
   */
  async fromPhoneToNumber(
    org: Organization,
    caller: ExtensionRow,
    number: string,
    engine: Pbx,
    beforeStart: (callId: string) => void,
  ): Promise<CallRow> {
    const refusal =
      accountRefusal(org, { product: 'voice' }) ?? accountPolicyRefusal(org, 'place_outbound_call');
    if (refusal) throw refusal;
    const to = normalisePhone(number, org.region);
    if (!to) throw ApiError.badRequest('to must be a phone number or an extension number');
    const numbers = await this.numbers.list(org.id);
    const callerId =
      numbers.find((own) => own.voiceRoute?.target === caller.id && own.voiceRoute.type !== 'forward') ??
      numbers[0];
    if (!callerId) throw ApiError.badRequest('from: the organization has no number to call from');
    const row = await this.admit({
      organizationId: org.id,
      region: org.region,
      direction: 'outbound',
      from: callerId.number,
      to,
      extensionId: caller.id,
      record: false,
    });
    beforeStart(row.id);
    // The caller is on the line already: only the callee rings.
    this.start(row, (live) => this.outbound(live, undefined), engine);
    return row;
  }

  /**
   * A call arriving at one of our numbers (from the PBX; in test, from the operator's test control). Routed by
   * the number's voice route. A call that cannot be taken is recorded already ended: `failed`, with why.
   * `beforeStart` runs once the record exists and before the first step (the simulator's script).
   */
  async arrive(
    input: { from: string; to: string },
    beforeStart?: (callId: string) => void,
    engine: Pbx = this.pbx,
  ): Promise<{ call: CallRow; program?: Promise<void> }> {
    const to = normalisePhone(input.to, 'us');
    const number = to ? await this.numbers.findByNumber(to) : undefined;
    if (!number) throw ApiError.notFound('Number');
    const from = normalisePhone(input.from, 'us') ?? input.from;
    const org = await this.organizations.get(number.organizationId);
    const call = {
      organizationId: org.id,
      region: org.region,
      direction: 'inbound' as const,
      from,
      to: number.number,
      extensionId: null,
      record: false,
    };
    const refusal = inboundRefusal(org, number.voiceRoute, Boolean(this.agents && engine.agentLine));
    if (refusal) return { call: await this.refuse(call, refusal) };

    const route = number.voiceRoute!;
    let extension: ExtensionRow | undefined;
    if (route.type === 'extension' || route.type === 'voicemail') {
      extension = await this.extensions.store.find(this.db, org.id, route.target);
      if (!extension) return { call: await this.refuse(call, 'no_route') };
    }
    let row: CallRow;
    try {
      row = await this.admit({ ...call, extensionId: extension?.id ?? null });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VOICE_REGION_UNAVAILABLE') {
        // The caller hears busy; the organization sees the call it missed and why.
        const refused = await this.refuse(call, 'region_full');
        throw new ApiError(error.status, error.message, {
          code: error.code,
          headers: error.headers,
          data: { callId: refused.id },
        });
      }
      throw error;
    }
    beforeStart?.(row.id);
    const program = this.start(
      row,
      async (live) => {
        if (route.type === 'agent') return this.agentAnswers(live, route.target);
        if (route.type === 'forward') return this.forward(live, route.target);
        if (route.type === 'voicemail') return this.voicemail(live, extension!, new Date(this.clock.now()));
        return this.reachExtension(live, extension!);
      },
      engine,
    );
    return { call: row, program };
  }

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

  page(organizationId: string, query: PageQueryInput & { since?: string }, surface: string) {
    const since = query.since ? new Date(query.since) : null;
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.calls.list`,
      keyset: true,
      organizationId,
      // Also what a cursor is bound to: a cursor from one filtering is refused by another.
      filters: { since },
      ...this.store.listQuery(organizationId, since),
      map: toCall,
    });
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
    if (program && this.engines.get(id)?.hangup(id)) {
      await program;
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

  /** Stops listening (the server is closing). */
  async close(): Promise<void> {
    const hangups = this.hangups;
    this.hangups = undefined;
    const stop = await hangups;
    await stop?.();
    this.stopLeases();
  }

  // Capacity

  async regions(): Promise<{ region: string; maxConcurrentCalls: number; activeCalls: number }[]> {
    const rows = await this.store.regions(this.db);
    return rows.map((row) => ({
      region: row.region,
      maxConcurrentCalls: row.max_concurrent_calls,
      activeCalls: row.live,
    }));
  }

  async setRegion(region: string, maxConcurrentCalls: number) {
    await this.store.setRegion(this.db, region, maxConcurrentCalls, this.clock.now());
    return (await this.regions()).find((row) => row.region === region)!;
  }

  /**
   * Records a live call if its region has room: the region's row is locked (admissions take turns), calls
   * whose PBX stopped renewing their lease are ended first (`pbx_lost`), then the live ones are counted.
   */
  private async admit(call: Admission): Promise<CallRow> {
    const now = this.clock.now();
    return this.db.transaction(async (tx) => {
      const capacity = await this.store.lockRegion(tx, call.region);
      await this.endLostCalls(tx, call.region, now);
      if ((await this.store.countLive(tx, call.region)) >= capacity) {
        throw new ApiError(
          409,
          capacity === 0
            ? `Calls in the ${call.region} region are not available now; try again later`
            : `The ${call.region} region has no room for another call now; try again shortly`,
          { code: 'VOICE_REGION_UNAVAILABLE', headers: { 'Retry-After': capacity === 0 ? '60' : '5' } },
        );
      }
      return this.store.insert(tx, {
        id: newId('call', now.getTime()),
        ...call,
        leaseExpiresAt: new Date(now.getTime() + LEASE_SECONDS * 1000),
        now,
      });
    });
  }

  /**
   * The hourly sweep (retention): ends every region's lost calls, so a region nobody calls in does not show
   * calls of a dead process as live for long. Returns how many it ended.
   */
  async endLost(now: Date): Promise<number> {
    let ended = 0;
    for (const { region } of await this.store.regions(this.db)) {
      ended += await this.db.transaction(async (tx) => {
        await this.store.lockRegion(tx, region);
        return this.endLostCalls(tx, region, now);
      });
    }
    return ended;
  }

  /** Ends the region's calls whose lease ran out; this process's own (a clock moved far) are renewed. */
  private async endLostCalls(tx: Queryable, region: string, now: Date): Promise<number> {
    const expired = await this.store.expiredLeases(tx, region, now);
    if (expired.length === 0) return 0;
    const ours = expired.filter((row) => this.running.has(row.id)).map((row) => row.id);
    if (ours.length > 0)
      await this.store.renewLeases(tx, ours, new Date(now.getTime() + LEASE_SECONDS * 1000));
    for (const row of expired) {
      if (this.running.has(row.id)) continue;
      const endedAt = row.lease_expires_at!;
      await this.end(tx, row, {
        status: row.answered_at ? 'completed' : 'failed',
        at: endedAt,
        cause: 'pbx_lost',
      });
    }
    return expired.length - ours.length;
  }

  /** An inbound call that could not be taken: recorded ended, `failed`, holding no place. */
  private async refuse(call: Omit<Admission, 'extensionId'> & { extensionId: null }, cause: string) {
    const now = this.clock.now();
    return this.db.transaction(async (tx) => {
      const row = await this.store.insert(tx, {
        id: newId('call', now.getTime()),
        ...call,
        leaseExpiresAt: null,
        ended: { status: 'failed', cause },
        now,
      });
      await this.events.record(tx, CallCompleted, { organizationId: row.organization_id, data: toCall(row) });
      return row;
    });
  }

  // The programs

  /** Runs a call's program in the background; whatever it leaves unfinished ends the call `failed`. */
  private start(row: CallRow, program: (live: Live) => Promise<void>, engine: Pbx = this.pbx): Promise<void> {
    const live: Live = {
      row,
      leg: { id: row.id, direction: row.direction, from: row.from_number, to: row.to_number },
      engine,
    };
    const run = (async () => {
      try {
        await program(live);
      } catch (error) {
        this.log.error({ err: error, callId: row.id }, 'call program failed');
        await this.finish(live, { status: 'failed', at: this.clock.now(), cause: 'platform_error' }).catch(
          (endError) => this.log.error({ err: endError, callId: row.id }, 'could not end a failed call'),
        );
      } finally {
        engine.release(row.id);
        this.running.delete(row.id);
        this.engines.delete(row.id);
        if (this.running.size === 0) this.stopLeases();
      }
    })();
    this.running.set(row.id, run);
    this.engines.set(row.id, engine);
    this.renewLeases();
    this.listenForHangups();
    return run;
  }

  private async outbound(live: Live, extension: ExtensionRow | undefined): Promise<void> {
    if (extension) {
      const first = await this.ring(live, extensionParty(extension), extension.ring_seconds);
      if (first.outcome !== 'answered') return this.finish(live, notAnswered(first));
    }
    const callee = await this.ring(live, { kind: 'phone', number: live.row.to_number }, PHONE_RING_SECONDS);
    if (callee.outcome !== 'answered') return this.finish(live, notAnswered(callee));
    await this.talk(live, callee.at);
  }

  private async internal(live: Live, caller: ExtensionRow, callee: ExtensionRow): Promise<void> {
    const first = await this.ring(live, extensionParty(caller), caller.ring_seconds);
    if (first.outcome !== 'answered') return this.finish(live, notAnswered(first));
    await this.reachExtension(live, callee);
  }

  /** Rings the extension; unanswered, its forward number; still unanswered, its voicemail box if enabled. */
  private async reachExtension(live: Live, extension: ExtensionRow): Promise<void> {
    // An inbound call is the extension's; an internal call stays its caller's.
    if (!live.row.extension_id) await this.step(live, { extension_id: extension.id });
    let result = await this.ring(live, extensionParty(extension), extension.ring_seconds);
    if (result.outcome === 'answered') return this.talk(live, result.at);
    if (result.outcome === 'canceled') return this.finish(live, notAnswered(result));
    if (extension.forward_to) {
      result = await this.ring(live, { kind: 'phone', number: extension.forward_to }, PHONE_RING_SECONDS);
      if (result.outcome === 'answered') return this.talk(live, result.at);
      if (result.outcome === 'canceled') return this.finish(live, notAnswered(result));
    }
    if (extension.voicemail_enabled && live.engine.takesVoicemail)
      return this.voicemail(live, extension, result.at);
    return this.finish(live, notAnswered(result));
  }

  private async forward(live: Live, number: string): Promise<void> {
    const result = await this.ring(live, { kind: 'phone', number }, PHONE_RING_SECONDS);
    if (result.outcome !== 'answered') return this.finish(live, notAnswered(result));
    await this.talk(live, result.at);
  }

  /** An AI agent answers at once and talks with the caller. */
  private async agentAnswers(live: Live, agentId: string): Promise<void> {
    await this.step(live, { agent_id: agentId });
    const { record } = await this.agents!.begin(live.row, agentId);
    if (record) await this.step(live, { record });
    await this.withAgent(live, async (how) => {
      await this.answered(live, this.clock.now());
      await this.agentTalks(live, how);
    });
  }

  /**
   * Runs an agent call's steps; whatever they end in (a failure too: the call ends `failed`), the agent call's
   * record gets its end.
   */
  private async withAgent(
    live: Live,
    steps: (how: { transferred: boolean; endedByAgent: boolean }) => Promise<void>,
  ): Promise<void> {
    const how = { transferred: false, endedByAgent: false };
    try {
      await steps(how);
    } catch (error) {
      this.log.error({ err: error, callId: live.row.id }, 'agent call failed');
      await this.finish(live, { status: 'failed', at: this.clock.now(), cause: 'platform_error' });
    }
    await this.agents!.end(live.row, how);
  }

  /**
   * The agent talks; the call ends as the agent's conversation does, or is transferred to a person. A recorded
   * agent call has one recording: the agent's part, then the person's after a transfer.
   */
  private async agentTalks(live: Live, how: { transferred: boolean; endedByAgent: boolean }): Promise<void> {
    const line = live.engine.agentLine!(live.leg, { record: live.row.record });
    let end: AgentEnd;
    let agentPart: CallAudio | undefined;
    try {
      end = await this.agents!.converse(live.row, line, () => live.engine.hangup(live.row.id));
    } finally {
      agentPart = await line.close();
    }
    if (end.kind === 'hangup')
      return this.finish(
        live,
        { status: 'completed', at: end.at, cause: end.cause },
        { recording: agentPart },
      );
    if (end.kind === 'ended_by_agent') {
      how.endedByAgent = true;
      return this.finish(
        live,
        { status: 'completed', at: end.at, cause: 'normal_clearing' },
        { recording: agentPart },
      );
    }
    // A transfer: the person at `to` (an extension or a phone) rings; answered, caller and person talk.
    const extension = /^[0-9]{2,6}$/.test(end.to)
      ? await this.extensions.store.findByNumber(this.db, live.row.organization_id, end.to)
      : undefined;
    const result = extension
      ? await this.ring(live, extensionParty(extension), extension.ring_seconds)
      : await this.ring(live, { kind: 'phone', number: end.to }, PHONE_RING_SECONDS);
    if (result.outcome !== 'answered') {
      return this.finish(
        live,
        { status: 'completed', at: result.at, cause: 'transfer_failed' },
        { recording: agentPart },
      );
    }
    how.transferred = true;
    const talk = await live.engine.converse(live.leg, { record: live.row.record });
    await this.finish(
      live,
      { status: 'completed', at: talk.at, cause: talk.cause },
      { recording: joinAudio(agentPart, talk.recording) },
    );
  }

  /** The voicemail box answers: the greeting, then the caller's message until they hang up. */
  private async voicemail(live: Live, extension: ExtensionRow, at: Date): Promise<void> {
    await this.answered(live, at, live.row.extension_id ? {} : { extension_id: extension.id });
    const message = await live.engine.takeVoicemail(live.leg, await this.extensions.greetingOf(extension));
    await this.finish(
      live,
      { status: 'completed', at: message.at, cause: message.cause },
      { voicemail: { audio: message.audio, extensionId: extension.id } },
    );
  }

  /** The callee answered: the call is in progress until a side hangs up. */
  private async talk(live: Live, answeredAt: Date): Promise<void> {
    await this.answered(live, answeredAt);
    const end = await live.engine.converse(live.leg, { record: live.row.record });
    await this.finish(
      live,
      { status: 'completed', at: end.at, cause: end.cause },
      { recording: end.recording },
    );
  }

  private ring(live: Live, party: Party, ringSeconds: number): Promise<RingResult> {
    return live.engine.ring(live.leg, party, ringSeconds, async (at) => {
      if (live.row.status !== 'queued') return;
      await this.step(live, { status: 'ringing' }, at, CallRinging);
      if (live.row.agent_id) await this.agents?.ringing(live.row, at);
    });
  }

  private async answered(live: Live, at: Date, change: CallChange = {}): Promise<void> {
    await this.step(live, { ...change, status: 'in_progress', answered_at: at }, at, CallAnswered);
  }

  /** Writes a step of the live call (with its event, if it has one). */
  private async step(
    live: Live,
    change: CallChange,
    at: Date = this.clock.now(),
    event?: typeof CallRinging | typeof CallAnswered,
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      const row = await this.store.change(tx, live.row.id, change, at);
      if (!row) return;
      live.row = row;
      if (event)
        await this.events.record(tx, event, { organizationId: row.organization_id, data: toCall(row) });
    });
  }

  /** Ends the call: its record, what it left (a voicemail, a recording) and call.completed, at once. */
  private async finish(
    live: Live,
    end: { status: CallStatus; at: Date; cause: string },
    left: Leftovers = {},
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      const row = await this.end(tx, live.row, end, left);
      if (row) live.row = row;
    });
  }

  private async end(
    tx: Queryable,
    current: CallRow,
    end: { status: CallStatus; at: Date; cause: string },
    left: Leftovers = {},
  ): Promise<CallRow | undefined> {
    const change: CallChange = {
      status: end.status,
      ended_at: end.at,
      hangup_cause: end.cause,
      lease_expires_at: null,
      duration_seconds: current.answered_at
        ? Math.max(0, Math.round((end.at.getTime() - current.answered_at.getTime()) / 1000))
        : 0,
    };
    if (left.voicemail) {
      const { audio, extensionId } = left.voicemail;
      change.voicemail_id = (await this.media.addVoicemail(tx, current, extensionId, audio, end.at)).id;
    }
    if (left.recording)
      change.recording_id = (await this.media.addRecording(tx, current, left.recording, end.at)).id;
    const row = await this.store.change(tx, current.id, change, end.at);
    if (row)
      await this.events.record(tx, CallCompleted, { organizationId: row.organization_id, data: toCall(row) });
    return row;
  }

  // Leases

  private renewLeases(): void {
    if (this.leaseTimer) return;
    this.leaseTimer = setInterval(
      () => {
        const ids = [...this.running.keys()];
        if (ids.length === 0) return;
        const until = new Date(this.clock.now().getTime() + LEASE_SECONDS * 1000);
        this.store
          .renewLeases(this.db, ids, until)
          .catch((error) => this.log.error({ err: error }, 'could not renew the leases of live calls'));
      },
      (LEASE_SECONDS * 1000) / 3,
    );
    this.leaseTimer.unref();
  }

  private stopLeases(): void {
    clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
  }
}

/**
 * Why an inbound call to a number of `org` cannot be taken (its record's hangup cause), or undefined: no voice
 * product, an account state that refuses calls (organizations/account-policy.ts), an agent route without the
 * agents product, or no route this PBX can follow.
 */
function inboundRefusal(
  org: Organization,
  route: { type: string } | null | undefined,
  agentsCanAnswer: boolean,
): string | undefined {
  if (!org.products.includes('voice')) return 'no_voice_product';
  if (accountPolicyRefusal(org, 'receive_call')) return org.suspended ? 'account_suspended' : 'account_state';
  if (route?.type === 'agent' && !org.products.includes('agents')) return 'no_agents_product';
  if (!route || (route.type === 'agent' && !agentsCanAnswer)) return 'no_route';
  return undefined;
}

/** An extension calling another of its organization: the call is the caller's. */
function internalCall(
  org: Organization,
  caller: ExtensionRow,
  callee: ExtensionRow,
  record: boolean,
): Admission {
  return {
    organizationId: org.id,
    region: org.region,
    direction: 'internal',
    from: caller.extension,
    to: callee.extension,
    extensionId: caller.id,
    record,
  };
}

function extensionParty(extension: ExtensionRow): Party {
  return { kind: 'extension', extensionId: extension.id, extension: extension.extension };
}

function notAnswered(result: RingResult): { status: CallStatus; at: Date; cause: string } {
  return { status: STATUS_OF[result.outcome as keyof typeof STATUS_OF], at: result.at, cause: result.cause };
}

export function toCall(row: CallRow): PublicCall {
  return {
    id: row.id,
    direction: row.direction,
    from: row.from_number,
    to: row.to_number,
    status: row.status,
    startedAt: row.started_at.toISOString(),
    answeredAt: row.answered_at?.toISOString() ?? null,
    endedAt: row.ended_at?.toISOString() ?? null,
    durationSeconds: row.duration_seconds,
    hangupCause: row.hangup_cause,
    extensionId: row.extension_id,
    agentId: row.agent_id,
    recordingId: row.recording_id,
    voicemailId: row.voicemail_id,
  };
}
