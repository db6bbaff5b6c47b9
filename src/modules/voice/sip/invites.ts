// The SIP entry points of a call: an INVITE outside a dialog. From the trunk (trusted by its address), a call
// from the telephone network to one of our numbers, routed by its voice route; anything else from the trunk is
// refused (no open relay). From a phone (authenticated by digest), a call to another extension of its
// organization, or to a phone number out through the trunk. The platform admits each (CallService) and its
// refusals are answered as SIP.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import type { Organization, OrganizationService } from '../../organizations/index.ts';
import type { CallService } from '../calls.ts';
import type { ExtensionService } from '../extensions.ts';
import type { Pbx } from '../pbx.ts';
import type { Registrar } from './registrar.ts';
import type { SipMessage, SipRemote } from './stack/index.ts';
import * as sip from './stack/index.ts';

type Respond = (message: SipMessage) => void;

export interface InviteDeps {
  db: Database;
  registrar: Registrar;
  extensions: ExtensionService;
  organizations: OrganizationService;
  /** SIP_TRUNK_URI's host and port. */
  trunk?: { host: string; port?: number };
  log: FastifyBaseLogger;
  /** The PBX the admitted calls run on. */
  pbx: Pbx;
  calls: () => CallService;
  /** Ties the caller's INVITE to our call, before its first step. */
  track: (callId: string, invite: SipMessage) => void;
  /** Whether a Replaces header's value names a dialog of a call we carry (RFC 3891). */
  replacesDialog: (value: string) => boolean;
}

export class InviteEntry {
  /** The trunk's IP address (its host looked up once). */
  private trunkAddress?: Promise<string | undefined>;

  constructor(private readonly deps: InviteDeps) {}

  async invite(request: SipMessage, remote: SipRemote, respond: Respond): Promise<void> {
    const deps = this.deps;
    if (await this.fromTrunk(remote)) return this.fromNetwork(request, respond);
    const authenticated = await deps.registrar.authenticate(request, remote);
    if ('answer' in authenticated) {
      const { status, reason, headers } = authenticated.answer;
      return respond(sip.makeResponse(request, status, reason, { headers }));
    }
    const caller = authenticated.extension;
    // RFC 3891 section 3: an INVITE with Replaces naming no dialog of ours is 481. Taking a call over this way
    // (a pickup) is not offered: a phone transfers by REFER (refer.ts), so one naming a live dialog is 403.
    const replaces = request.headers.replaces;
    if (typeof replaces === 'string') {
      return deps.replacesDialog(replaces)
        ? respond(sip.makeResponse(request, 403, 'Forbidden: Replaces Is Taken By REFER Only'))
        : respond(sip.makeResponse(request, 481, 'Call/Transaction Does Not Exist'));
    }
    const target = sip.parseUri(request.uri ?? '')?.user ?? '';
    if (!/^[0-9]{2,6}$/.test(target)) {
      // A phone number: out through the trunk, if there is one; without, nothing to reach it by.
      if (!deps.trunk || !/^\+?[0-9]{7,15}$/.test(target)) {
        return respond(sip.makeResponse(request, 404, 'Not Found'));
      }
      return this.place(request, respond, caller, (org, track) =>
        deps.calls().fromPhoneToNumber(org, caller, target, deps.pbx, track),
      );
    }
    const callee = await deps.extensions.store.findByNumber(deps.db, caller.organization_id, target);
    if (!callee) return respond(sip.makeResponse(request, 404, 'Not Found'));
    if (callee.id === caller.id) return respond(sip.makeResponse(request, 486, 'Busy Here'));
    return this.place(request, respond, caller, (org, track) =>
      deps.calls().fromPhone(org, caller, callee, deps.pbx, track),
    );
  }

  /** A phone's call admitted by the platform (`admit`); refusals answered as SIP. */
  private async place(
    request: SipMessage,
    respond: Respond,
    caller: { organization_id: string },
    admit: (org: Organization, track: (callId: string) => void) => Promise<unknown>,
  ): Promise<void> {
    respond(sip.makeResponse(request, 100, 'Trying'));
    const org = await this.deps.organizations.get(caller.organization_id);
    try {
      await admit(org, (callId) => this.deps.track(callId, request));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const busy = error.code === 'VOICE_REGION_UNAVAILABLE';
      respond(
        sip.makeResponse(request, busy ? 503 : 403, busy ? 'Service Unavailable' : 'Forbidden', {
          headers: busy ? { 'retry-after': error.headers?.['Retry-After'] ?? '5' } : {},
        }),
      );
    }
  }

  /**
   * The trunk's INVITE: a call from the telephone network to the number in its request URI, routed by that
   * number's voice route (CallService.arrive). Not one of our numbers: 404, so the trunk can never be made to
   * relay. Refused (no voice product, suspended, no route): 480, recorded `failed`; region full: 486 busy.
   */
  private async fromNetwork(request: SipMessage, respond: Respond): Promise<void> {
    const to = sip.parseUri(request.uri ?? '')?.user ?? '';
    const from = sip.parseUri(request.headers.from?.uri ?? '')?.user ?? 'anonymous';
    respond(sip.makeResponse(request, 100, 'Trying'));
    try {
      const { program } = await this.deps
        .calls()
        .arrive({ from, to }, (callId) => this.deps.track(callId, request), this.deps.pbx);
      if (!program) respond(sip.makeResponse(request, 480, 'Temporarily Unavailable'));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.code === 'VOICE_REGION_UNAVAILABLE') respond(sip.makeResponse(request, 486, 'Busy Here'));
      else if (error.status === 404) respond(sip.makeResponse(request, 404, 'Not Found'));
      else respond(sip.makeResponse(request, 480, 'Temporarily Unavailable'));
    }
  }

  /** Whether a request came from the trunk: its address, and its port when SIP_TRUNK_URI names one. */
  private async fromTrunk(remote: SipRemote): Promise<boolean> {
    const trunk = this.deps.trunk;
    if (!trunk) return false;
    this.trunkAddress ??= isIP(trunk.host)
      ? Promise.resolve(trunk.host)
      : lookup(trunk.host).then(
          (found) => found.address,
          (error) => {
            this.deps.log.warn({ err: error, host: trunk.host }, 'SIP trunk host not found');
            this.trunkAddress = undefined;
            return undefined;
          },
        );
    const address = await this.trunkAddress;
    const from = remote.address.replace(/^::ffff:/, '');
    return address === from && (trunk.port === undefined || trunk.port === remote.port);
  }
}
