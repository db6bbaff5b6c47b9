// Transfers (CONTRACT section 13, issue 33): a call talking with a person is moved to another one, keeping its
// one record. Three ways ask for it, and all come here: POST /calls/{id}/transfer (mode blind or attended), a
// SIP phone's REFER (sip/refer.ts: blind, or attended with Replaces, where the phone's second call is joined)
// and a call flow's transfer step (flow-transfer.ts). The PBX carries the media (Pbx.transfer); here the
// target is resolved to what rings, and an answered transfer is written: the record's transferredTo and
// transferredAt, and call.transferred.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { toCall } from './call-end.ts';
import type { CallStore } from './call-store.ts';
import { PHONE_RING_SECONDS } from './dial-plan.ts';
import { extensionParty, extensionsParty } from './extension-store.ts';
import type { ExtensionService } from './extensions.ts';
import { sipExtension } from './flows/index.ts';
import type { LiveCall } from './live-call.ts';
import type { Party, RingResult } from './pbx.ts';
import type { RingGroupSource } from './ring-groups/index.ts';
import type { CallTransferInput, PublicCall, TransferTarget } from './schemas.ts';

/** E.164: what a transfer to a phone number must be. */
export const E164 = /^\+[1-9][0-9]{6,14}$/;

/** How a transfer was asked for, as the record and call.transferred say it. */
export interface TransferHow {
  mode: 'blind' | 'attended';
  by: 'api' | 'phone' | 'flow';
}

/** What a target rings, and for how long. */
export interface TransferRing {
  party: Party;
  ringSeconds: number;
}

/** Why a phone's transfer did not ring (the SIP PBX answers each in its NOTIFY). */
export type PhoneTransferRefusal = 'unknown_target' | 'not_talking';

export class CallTransfers {
  constructor(
    private readonly deps: {
      db: Database;
      store: CallStore;
      extensions: ExtensionService;
      log: FastifyBaseLogger;
      /** The live call this process holds, by id. */
      live: (callId: string) => LiveCall | undefined;
      /** Ring groups' members (ring-groups/, once the voice module has wired them). */
      ringGroups: () => RingGroupSource | undefined;
      /** The platform's SIP domain: a `sip` target names an extension there. */
      sipDomain?: string;
    },
  ) {}

  /**
   * POST /calls/{id}/transfer: starts the transfer and answers at once (202) with the call as it is; the
   * ring plays out from here (call.transferred when the target answers). 404 for a call not of the
   * organization; 409 CALL_NOT_IN_PROGRESS for one not talking with a person (not answered yet, ended, with a
   * voicemail box, an agent or a call flow's own media, or a transfer under way); 400 for a target that names
   * nothing of the organization; 409 CALL_NOT_HELD when another server process holds the call.
   */
  async fromApi(organizationId: string, callId: string, input: CallTransferInput): Promise<PublicCall> {
    const { db, store, log } = this.deps;
    const row = await store.find(db, organizationId, callId);
    if (!row) throw ApiError.notFound('Call');
    if (row.status !== 'in_progress') throw notTalking(`The call is ${row.status}, not in progress`);
    const ring = await this.ringOf(organizationId, input.target);
    if (!ring) {
      throw ApiError.badRequest(`target.target ${UNREACHABLE[input.target.type]}`, {
        code: 'INVALID_TRANSFER_TARGET',
      });
    }
    const live = this.deps.live(callId);
    if (!live) {
      throw new ApiError(409, 'This server process does not hold the call; try again shortly', {
        code: 'CALL_NOT_HELD',
      });
    }
    const how: TransferHow = { mode: input.mode ?? 'blind', by: 'api' };
    const pending = this.start(live, input.target, ring, how);
    if (!pending) {
      throw notTalking(
        'The call is not talking with a person now (a voicemail box, an agent or a call flow has it, or a transfer is under way)',
      );
    }
    pending.catch((error) => log.error({ err: error, callId }, 'call transfer failed'));
    return toCall(live.row);
  }

  /**
   * A phone in the call asked for a transfer (a SIP REFER naming `dialled`): blind, the other party is rung
   * for the target. Resolves with how the ring ended, or why it never rang.
   */
  async fromPhone(callId: string, dialled: string): Promise<RingResult | PhoneTransferRefusal> {
    const live = this.deps.live(callId);
    if (live?.state !== 'in_progress') return 'not_talking';
    const target = await this.targetOfDialled(live.row.organization_id, dialled);
    const ring = target ? await this.ringOf(live.row.organization_id, target) : undefined;
    if (!target || !ring) return 'unknown_target';
    return this.start(live, target, ring, { mode: 'blind', by: 'phone' }) ?? 'not_talking';
  }

  /**
   * A phone joined the other party of call `callId` to the other party of its second call `otherCallId`
   * (REFER with Replaces: the PBX has moved the media and ended the phone's dialogs). The record of `callId`
   * says it was transferred, attended, to that party: `otherSide` of the second call (an extension when it is
   * one of the organization's, else its number).
   */
  async joinedByPhone(
    callId: string,
    otherCallId: string,
    otherSide: 'caller' | 'callee',
    at: Date,
  ): Promise<void> {
    const live = this.deps.live(callId);
    const other = this.deps.live(otherCallId);
    if (!live || !other) return;
    const dialled = otherSide === 'caller' ? other.row.from_number : other.row.to_number;
    const target = await this.targetOfDialled(live.row.organization_id, dialled);
    if (target) await live.transferred(target, at, { mode: 'attended', by: 'phone' });
  }

  /** Whether two calls are the same organization's (a phone may join only its own calls). */
  sameOrganization(callId: string, otherCallId: string): boolean {
    const live = this.deps.live(callId);
    const other = this.deps.live(otherCallId);
    return Boolean(live && other && live.row.organization_id === other.row.organization_id);
  }

  /**
   * What `target` rings: an extension of the organization (its phones, for its ring time; by id, or by its
   * `sip:<extension>@<SIP domain>` URI), a ring group's members all at once (whatever the group's own strategy:
   * a transfer is one ring, as a ring group among a dial's several targets is) for the group's ring time, or a
   * phone number through the trunk. Undefined when it names nothing the organization can reach (another
   * organization's or a deleted extension or group, a group with no members, a number not in E.164 form, a URI
   * of another host).
   */
  async ringOf(organizationId: string, target: TransferTarget): Promise<TransferRing | undefined> {
    const { db, extensions } = this.deps;
    switch (target.type) {
      case 'number':
        if (!E164.test(target.target)) return undefined;
        return { party: { kind: 'phone', number: target.target }, ringSeconds: PHONE_RING_SECONDS };
      case 'extension': {
        const extension = await extensions.store.find(db, organizationId, target.target);
        return extension && { party: extensionParty(extension), ringSeconds: extension.ring_seconds };
      }
      case 'sip': {
        const number = sipExtension(target.target, this.deps.sipDomain);
        const extension = number && (await extensions.store.findByNumber(db, organizationId, number));
        return extension
          ? { party: extensionParty(extension), ringSeconds: extension.ring_seconds }
          : undefined;
      }
      case 'ring_group': {
        const plan = await this.deps.ringGroups()?.attempts(organizationId, target.target);
        if (!plan) return undefined;
        const ids = plan.attempts.flatMap((attempt) => attempt.extensionIds);
        const members = await extensions.store.findMany(db, organizationId, ids);
        return members.length > 0
          ? { party: extensionsParty(members), ringSeconds: plan.ringSeconds }
          : undefined;
      }
    }
  }

  /**
   * The target a phone names by its dialled digits (a REFER's Refer-To user part): an extension number of the
   * organization, or a phone number (a leading + or not, as phones dial them). Undefined: nothing it reaches.
   */
  async targetOfDialled(organizationId: string, dialled: string): Promise<TransferTarget | undefined> {
    if (/^[0-9]{2,6}$/.test(dialled)) {
      const extension = await this.deps.extensions.store.findByNumber(this.deps.db, organizationId, dialled);
      return extension ? { type: 'extension', target: extension.id } : undefined;
    }
    const number = dialled.startsWith('+') ? dialled : `+${dialled}`;
    return E164.test(number) ? { type: 'number', target: number } : undefined;
  }

  /**
   * Starts moving the live call's conversation to `ring`; undefined at once when the call is not talking with a
   * person (or a transfer of it is under way). A blind transfer from the API lets the person go at once; an
   * attended one, and a phone's REFER (whose phone hangs up once the target answers), keep them with the caller
   * until the answer. Answered, the record and call.transferred say so. Resolves with how the ring ended.
   */
  start(
    live: LiveCall,
    target: TransferTarget,
    ring: TransferRing,
    how: TransferHow,
  ): Promise<RingResult> | undefined {
    const keepCurrent = how.mode === 'attended' || how.by === 'phone';
    const pending = live.transferLeg(ring.party, ring.ringSeconds, { keepCurrent });
    if (!pending) return undefined;
    return pending.then(async (result) => {
      if (result.outcome !== 'answered') return result;
      await live.transferred(target, result.at, how);
      // A ring group's round robin moves on past the member who took the call, as after a dial.
      if (target.type === 'ring_group' && result.answeredBy) {
        await this.deps.ringGroups()?.answeredBy(target.target, result.answeredBy);
      }
      return result;
    });
  }
}

/** What a target that rings nothing is, for the 400. */
const UNREACHABLE: Record<TransferTarget['type'], string> = {
  extension: 'names no extension of this organization',
  ring_group: 'names no ring group of this organization with members',
  number: 'must be a phone number in E.164 form (+14155550100)',
  sip: "must be sip:<extension>@<this platform's SIP domain>, an extension of this organization",
};

function notTalking(message: string): ApiError {
  return new ApiError(409, message, { code: 'CALL_NOT_IN_PROGRESS' });
}
