// The ways a call begins: the API places one (click-to-call, to a phone, extension to extension, an AI agent's
// call), a phone places one (over SIP, to an extension or out through the trunk), or one arrives at our number
// (from the trunk, or the simulator's test control). Each checks who may call, is admitted against its
// region's capacity (admission.ts), and starts the program of the dial plan (dial-plan.ts) the call follows.
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { NumberService } from '../numbers/index.ts';
import {
  accountPolicyRefusal,
  accountRefusal,
  type Organization,
  type OrganizationService,
} from '../organizations/index.ts';
import type { CallAdmission, CallRequest } from './admission.ts';
import { type CallEnding, toCall } from './call-end.ts';
import type { CallRow, CallStore } from './call-store.ts';
import type { AgentRunner, DialPlan } from './dial-plan.ts';
import type { ExtensionRow } from './extension-store.ts';
import type { ExtensionService } from './extensions.ts';
import type { FlowRunner } from './flow-runner.ts';
import { runApp } from './flow-webhook-steps.ts';
import type { LiveCall } from './live-call.ts';
import type { Pbx } from './pbx.ts';
import type { CallCreateInput, PublicCall } from './schemas.ts';

/** Runs a call's program in the background on `engine`; resolves when the call's program is over. */
export type StartCall = (
  row: CallRow,
  program: (live: LiveCall) => Promise<void>,
  engine: Pbx,
) => Promise<void>;

export class CallEntry {
  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      store: CallStore;
      numbers: NumberService;
      organizations: OrganizationService;
      extensions: ExtensionService;
      admission: CallAdmission;
      ending: CallEnding;
      plan: DialPlan;
      /** Runs the call flow of a number routed to one. */
      flows: FlowRunner;
      start: StartCall;
      /** The PBX inbound calls arrive on unless they say: the simulated one. */
      pbx: Pbx;
      /** The PBX that carries the calls the API places: the SIP one while its listener runs. */
      placing: () => Pbx;
      agents: () => AgentRunner | undefined;
    },
  ) {}

  /**
   * POST /agents/{id}/calls: agent `agentId` calls `to` from one of the organization's numbers (`from`, else
   * its first). Answers at once (202); the agent talks once the callee answers.
   */
  async placeForAgent(
    org: Organization,
    agentId: string,
    input: { to: string; from?: string },
  ): Promise<PublicCall> {
    const { db, clock, store, numbers, admission, ending, plan } = this.deps;
    const refusal =
      accountRefusal(org, { product: 'voice' }) ?? accountPolicyRefusal(org, 'place_outbound_call');
    if (refusal) throw refusal;
    const to = normalisePhone(input.to, org.region);
    if (!to) throw ApiError.badRequest('to must be a phone number');
    let from: string | undefined;
    if (input.from) {
      const normalised = normalisePhone(input.from, org.region);
      const own = normalised ? await numbers.findByNumber(normalised) : undefined;
      if (!own || own.organizationId !== org.id) {
        throw ApiError.badRequest('from must be one of your numbers (the caller id the callee sees)');
      }
      from = own.number;
    } else {
      from = (await numbers.list(org.id))[0]?.number;
      if (!from) throw ApiError.badRequest('from: the organization has no number to call from');
    }
    const engine = this.deps.placing();
    const agents = this.deps.agents();
    if (!agents || !engine.agentLine) {
      throw new ApiError(409, `AI agents cannot place calls on the ${engine.name} PBX yet`, {
        code: 'AGENT_CALLS_UNAVAILABLE',
      });
    }
    const row = await admission.admit({
      organizationId: org.id,
      region: org.region,
      direction: 'outbound',
      from,
      to,
      extensionId: null,
      record: false,
    });
    let placed = (await store.change(db, row.id, { agent_id: agentId }, clock.now())) ?? row;
    let record: boolean;
    try {
      ({ record } = await agents.begin(placed, agentId));
    } catch (error) {
      // The call was admitted but will never run: it ends now rather than holding its place until its lease runs out.
      const failed = { status: 'failed' as const, at: clock.now(), cause: 'platform_error' };
      await db.transaction((tx) => ending.write(tx, placed, failed));
      throw error;
    }
    if (record) placed = (await store.change(db, row.id, { record }, clock.now())) ?? placed;
    void this.deps.start(placed, (live) => plan.agentCalls(live, to), engine);
    return toCall(placed);
  }

  /** POST /calls: an outbound (click-to-call) or internal call. Answers at once (202); the call plays out. */
  async place(org: Organization, input: CallCreateInput): Promise<PublicCall> {
    const { db, numbers, admission, plan } = this.deps;
    const extensionStore = this.deps.extensions.store;
    const named = input.extensionId ? await extensionStore.find(db, org.id, input.extensionId) : undefined;
    if (input.extensionId && !named) {
      throw ApiError.badRequest(`extensionId: ${input.extensionId} is not an extension of this organization`);
    }
    if (/^[0-9]{2,6}$/.test(input.to)) {
      const callee = await extensionStore.findByNumber(db, org.id, input.to);
      if (!callee) throw ApiError.badRequest(`to: this organization has no extension ${input.to}`);
      const caller = await extensionStore.findByNumber(db, org.id, input.from);
      if (!caller) {
        throw ApiError.badRequest(`from: an internal call comes from an extension; ${input.from} is not one`);
      }
      if (named && named.id !== caller.id) {
        throw ApiError.badRequest('extensionId: an internal call rings its caller, extension `from`');
      }
      if (caller.id === callee.id) throw ApiError.badRequest('to: an extension cannot call itself');
      const standing = accountPolicyRefusal(org, 'place_internal_call');
      if (standing) throw standing;
      const row = await admission.admit(internalCall(org, caller, callee, input.record ?? false));
      void this.deps.start(row, (live) => plan.internal(live, caller, callee), this.deps.placing());
      return toCall(row);
    }
    const to = normalisePhone(input.to, org.region);
    if (!to) throw ApiError.badRequest('to must be a phone number or an extension number');
    const from = normalisePhone(input.from, org.region);
    const own = from ? await numbers.findByNumber(from) : undefined;
    if (!own || own.organizationId !== org.id) {
      throw ApiError.badRequest('from must be one of your numbers (the caller id the callee sees)');
    }
    const standing = accountPolicyRefusal(org, 'place_outbound_call');
    if (standing) throw standing;
    const row = await admission.admit({
      organizationId: org.id,
      region: org.region,
      direction: 'outbound',
      from: own.number,
      to,
      extensionId: named?.id ?? null,
      record: input.record ?? false,
    });
    void this.deps.start(row, (live) => plan.outbound(live, named), this.deps.placing());
    return toCall(row);
  }

  /** An internal call a phone placed (CallService.fromPhone). */
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
    const row = await this.deps.admission.admit(internalCall(org, caller, callee, false));
    beforeStart(row.id);
    void this.deps.start(row, (live) => this.deps.plan.reachExtension(live, callee), engine);
    return row;
  }

  /** A call a phone placed to a phone number, out through the trunk (CallService.fromPhoneToNumber). */
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
    const numbers = await this.deps.numbers.list(org.id);
    const callerId =
      numbers.find((own) => own.voiceRoute?.target === caller.id && own.voiceRoute.type !== 'forward') ??
      numbers[0];
    if (!callerId) throw ApiError.badRequest('from: the organization has no number to call from');
    const row = await this.deps.admission.admit({
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
    void this.deps.start(row, (live) => this.deps.plan.outbound(live, undefined), engine);
    return row;
  }

  /** A call arriving at one of our numbers (CallService.arrive). */
  async arrive(
    input: { from: string; to: string },
    beforeStart?: (callId: string) => void,
    engine: Pbx = this.deps.pbx,
  ): Promise<{ call: CallRow; program?: Promise<void> }> {
    const { db, clock, numbers, organizations, admission, plan } = this.deps;
    const to = normalisePhone(input.to, 'us');
    const number = to ? await numbers.findByNumber(to) : undefined;
    if (!number) throw ApiError.notFound('Number');
    const from = normalisePhone(input.from, 'us') ?? input.from;
    const org = await organizations.get(number.organizationId);
    const call = {
      organizationId: org.id,
      region: org.region,
      direction: 'inbound' as const,
      from,
      to: number.number,
      extensionId: null,
      record: false,
    };
    const agentsCanAnswer = Boolean(this.deps.agents() && engine.agentLine);
    const refusal = inboundRefusal(org, number.voiceRoute, agentsCanAnswer);
    if (refusal) return { call: await admission.refuse(call, refusal) };

    const route = number.voiceRoute!;
    let extension: ExtensionRow | undefined;
    if (route.type === 'extension' || route.type === 'voicemail') {
      extension = await this.deps.extensions.store.find(db, org.id, route.target);
      if (!extension) return { call: await admission.refuse(call, 'no_route') };
    }
    let row: CallRow;
    try {
      row = await admission.admit({ ...call, extensionId: extension?.id ?? null });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VOICE_REGION_UNAVAILABLE') {
        // The caller hears busy; the organization sees the call it missed and why.
        const refused = await admission.refuse(call, 'region_full');
        throw new ApiError(error.status, error.message, {
          code: error.code,
          headers: error.headers,
          data: { callId: refused.id },
        });
      }
      throw error;
    }
    beforeStart?.(row.id);
    const program = this.deps.start(
      row,
      async (live) => {
        if (route.type === 'agent') return plan.agentAnswers(live, route.target);
        if (route.type === 'flow') return this.deps.flows.run(live, route.target);
        if (route.type === 'webhook') return runApp(this.deps.flows, live, route);
        if (route.type === 'forward') return plan.forward(live, route.target);
        if (route.type === 'voicemail') return plan.voicemail(live, extension!, new Date(clock.now()));
        return plan.reachExtension(live, extension!);
      },
      engine,
    );
    return { call: row, program };
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
): CallRequest {
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
