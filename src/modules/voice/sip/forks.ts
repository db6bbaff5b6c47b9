// Ringing a party over SIP: every phone registered to an extension at once (forking), or a phone number through
// the trunk; the first to answer takes the call and the others are cancelled. Each INVITE of ours is a leg with
// its own life (leg-states.ts), so a late or repeated answer can never start a second life of a leg.
import { randomBytes } from 'node:crypto';
import type { Party, PbxCall, RingOutcome, RingResult } from '../pbx.ts';
import { ackOf, cancelOf, type Dialog, MAX_FORWARDS, uacDialog } from './dialog.ts';
import { Leg } from './leg-states.ts';
import type { SipPbxDeps } from './pbx-deps.ts';
import { RtpRelay } from './rtp.ts';
import { decodableOffer, type G711, offerSdp, parseOffer, relaySdp } from './sdp.ts';
import type { CallSignalling } from './signalling.ts';
import type { Side, SipCallTable } from './sip-call.ts';
import type { SipAor, SipMessage, SipRemote } from './stack/index.ts';

/** The most phones of one extension rung at once (a desk phone, a softphone, a mobile app, and then some). */
const MAX_FORKS = 10;
/** The most INVITEs one ring sends (a ring group of fifty extensions rings its first hundred phones). */
const MAX_RING_FORKS = 100;

/** One INVITE of ours to one phone (or the trunk) while it rings, and its dialog once it answers. */
interface Fork {
  invite: SipMessage;
  localTag: string;
  /** The first final status it answered. */
  final: number | undefined;
  leg: Leg;
  dialog?: Dialog;
  /** The ACK of its 2xx, sent again for each retransmission of that 2xx. */
  ack?: SipMessage;
  /** The extension whose phone it rings (none: the trunk). */
  extensionId?: string;
  /** The Route through a browser's WebSocket (its CANCEL needs it too: RFC 3261 section 9.1). */
  route?: SipAor[];
}

export type RingerDeps = Pick<
  SipPbxDeps,
  'clock' | 'registrar' | 'domain' | 'stack' | 'mediaHosts' | 'trunk' | 'log'
> & { table: SipCallTable; signalling: CallSignalling };

export class Ringer {
  constructor(private readonly deps: RingerDeps) {}

  async ring(
    call: PbxCall,
    party: Party,
    ringSeconds: number,
    onRinging: (at: Date) => Promise<void>,
  ): Promise<RingResult> {
    const deps = this.deps;
    const now = () => deps.clock.now();
    // A call the API placed: we place every leg; the first one answered plays the caller's part.
    const current = deps.table.open(call.id);
    const outcome = (result: RingResult) => {
      current.lastOutcome = result.outcome;
      return result;
    };
    const trunk = deps.trunk;
    const phones = party.kind === 'phone' ? [party] : party.kind === 'extensions' ? (party.phones ?? []) : [];
    const members = party.kind === 'extension' ? [party] : party.kind === 'extensions' ? party.members : [];
    if (phones.length > 0 && members.length === 0 && !trunk)
      return outcome({ outcome: 'failed', at: now(), cause: 'no_trunk' });
    const leg: Side = current.invite || current.caller ? 'callee' : 'caller';
    const stack = deps.stack();
    const hosts = deps.mediaHosts();
    if (!stack || !hosts) return outcome({ outcome: 'failed', at: now(), cause: 'no_sip' });
    // One INVITE to each phone: an extension's registered phones, or several extensions' at once, each To its
    // own extension, from the caller's number (the first leg of an API call shows the number it connects to);
    // and the trunk for each phone number, from the call's caller id (one of our numbers) as the network shows
    // it, or the one a flow's dial asked to show (also one of ours, checked when the flow was saved).
    const shownToPhones = leg === 'caller' && !current.invite ? call.to : call.from;
    const contacts = await Promise.all(
      members.map(async (member) =>
        (await deps.registrar.contacts(member.extensionId)).slice(0, MAX_FORKS).map((contact) => ({
          uri: contact.contact,
          to: `sip:${member.extension}@${deps.domain}`,
          fromUser: shownToPhones,
          extensionId: member.extensionId as string | undefined,
          flow: webSocketFlow(contact.source),
        })),
      ),
    );
    const trunkTargets = trunk
      ? phones.map((phone) => {
          const host = trunk.host.includes(':') ? `[${trunk.host}]` : trunk.host;
          const uri = `sip:${phone.number}@${host}${trunk.port ? `:${trunk.port}` : ''}`;
          return {
            uri,
            to: uri,
            fromUser: phone.callerId ?? call.from,
            extensionId: undefined,
            flow: undefined,
          };
        })
      : [];
    const targets = [...contacts.flat(), ...trunkTargets].slice(0, MAX_RING_FORKS);
    if (targets.length === 0) return outcome({ outcome: 'no_answer', at: now(), cause: 'not_registered' });
    // The offer this leg gets: the caller's own, moved to our relay; without one (an API call, a caller who
    // offered nothing), ours, in the codec the caller's leg settled on when there is one. A recorded call
    // offers only what we decode (G.711 and telephone-event); a caller with no G.711 cannot be recorded: 488.
    let callerOffer = current.invite ? current.remoteSdp.caller : undefined;
    if (callerOffer && call.record) {
      callerOffer = decodableOffer(callerOffer);
      if (!callerOffer) {
        if (!current.answered) {
          deps.signalling.respondToCaller(current, 488, 'Not Acceptable Here');
          current.answered = true; // Answered with the 488: release must not answer again.
        }
        return outcome({ outcome: 'failed', at: now(), cause: 'incompatible_codecs' });
      }
    }
    if (!current.relay) {
      current.relay = await RtpRelay.open(hosts.bind);
      // A caller whose INVITE we have not answered gets no media until we do (converse): the callee's first
      // packets, forwarded before our 200 reached the caller, left some phones (baresip) silent all call.
      // A caller on our own media (an AI agent, a call flow) hears the person only once converse moves them onto
      // the relay: before, a warm transfer's summary to the person is not theirs to hear.
      if ((!current.invite || current.answered) && !current.ownMedia)
        current.relay.setRemote('caller', current.remoteSdp.caller);
    }
    const relay = current.relay;
    const offer = callerOffer
      ? relaySdp(callerOffer, hosts.advertise, relay.port(leg))
      : offerSdp(hosts.advertise, relay.port(leg), codecsOf(current.remoteSdp.caller));
    current.localSdp[leg] = offer;
    // One INVITE per phone, each its own dialog (we are a back-to-back user agent, not a forking proxy).
    const forks = targets.map(({ uri, to, fromUser, extensionId, flow }): Fork => {
      const localTag = randomBytes(6).toString('hex');
      // A phone registered over a WebSocket is reached through that connection only (RFC 7118 section 5).
      const route = flow ? [stack.flowRoute(flow)] : undefined;
      const invite: SipMessage = {
        method: 'INVITE',
        uri,
        headers: {
          to: { uri: to, params: {} },
          from: { uri: `sip:${fromUser}@${deps.domain}`, params: { tag: localTag } },
          'call-id': randomBytes(12).toString('hex'),
          cseq: { method: 'INVITE', seq: 1 },
          via: [],
          contact: deps.signalling.contact(),
          'max-forwards': MAX_FORWARDS,
          'content-type': 'application/sdp',
          ...(route ? { route: route.map((hop) => ({ ...hop })) } : {}),
        },
        content: offer,
      };
      deps.table.addLeg(invite.headers['call-id'], call.id);
      return {
        invite,
        localTag,
        final: undefined,
        leg: new Leg(invite.headers['call-id'], deps.log),
        ...(extensionId ? { extensionId } : {}),
        ...(route ? { route } : {}),
      };
    });
    return new Promise<RingResult>((resolve) => {
      let done = false;
      let ringing = false;
      // The platform's write of `ringing`: the outcome waits for it. A phone answering a millisecond after its
      // 180 had the call marked in_progress, then `ringing` again by the slower write on another connection
      // of a PostgreSQL pool (the click-to-call test that stayed ringing on PostgreSQL passes).
      let ringingWritten: Promise<void> = Promise.resolve();
      const settle = (result: RingResult) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        current.onCancel = undefined;
        // The phones still ringing stop; their Call-IDs are forgotten (a late BYE from one gets 481).
        for (const fork of forks) {
          if (fork.leg.pending) {
            fork.leg.move('cancel');
            stack.send(cancelOf(fork.invite, fork.route));
          } else if (fork.leg.state === 'refused') deps.table.dropLeg(fork.invite.headers['call-id']);
        }
        void ringingWritten.then(() => resolve(outcome(result)));
      };
      const timer = setTimeout(
        () => settle({ outcome: 'no_answer', at: now(), cause: 'ring_timeout' }),
        ringSeconds * 1000,
      );
      timer.unref();
      current.onCancel = (cause) => settle({ outcome: 'canceled', at: now(), cause });
      /**
       * A 2xx to a fork's INVITE. The same answer again (its dialog already confirmed: our ACK was lost, RFC
       * 3261 sections 13.3.1.4 and 17.1.1.2) is ACKed again and changes nothing. A first answer takes the
       * call, unless we gave up on the fork or another one won: then it is ACKed and ended with a BYE. A
       * second dialog from the same INVITE (a forking proxy beyond the trunk) is ACKed and ended too.
       */
      const answered = (fork: Fork, response: SipMessage) => {
        fork.final ??= response.status;
        const tag = String(response.headers.to.params.tag ?? '');
        if (fork.dialog && fork.ack && fork.dialog.remoteTag === tag) {
          fork.leg.move('answer_repeated');
          stack.send(fork.ack);
          return;
        }
        const dialog = uacDialog(response, fork.invite, fork.localTag);
        const ack = ackOf(dialog, fork.invite.headers.cseq.seq);
        stack.send(ack);
        if (fork.dialog) {
          deps.signalling.sendBye(dialog);
          return;
        }
        fork.dialog = dialog;
        fork.ack = ack;
        dialog.leg = fork.leg;
        fork.leg.move('answer');
        if (done || fork.leg.state !== 'answered') {
          deps.signalling.sendBye(dialog, 'answered after the call went elsewhere');
          deps.table.dropLeg(fork.invite.headers['call-id']);
          return;
        }
        current[leg] = dialog;
        current.remoteSdp[leg] = response.content;
        // A new party on this side: on a first answer nobody was there; on a transfer the one who left is not
        // taken for them.
        relay.replaceParty(leg, response.content);
        deps.log.info({ callId: call.id, side: leg, sipCallId: dialog.callId }, 'SIP dialog started');
        settle({
          outcome: 'answered',
          at: now(),
          cause: 'answered',
          ...(fork.extensionId ? { answeredBy: fork.extensionId } : {}),
        });
      };
      const refused = (fork: Fork, status: number) => {
        fork.final ??= status;
        if (!fork.leg.move('refusal')) return;
        if (done || !forks.every((each) => each.final !== undefined)) return;
        // Every phone refused: the most telling refusal (busy over unanswered over failed).
        const finals = forks.map((each) => each.final!);
        const result: RingOutcome = finals.some((code) => code === 486 || code === 600 || code === 603)
          ? 'busy'
          : finals.some((code) => code === 408 || code === 480 || code === 487)
            ? 'no_answer'
            : 'failed';
        settle({ outcome: result, at: now(), cause: result === 'no_answer' ? 'ring_timeout' : result });
      };
      for (const fork of forks) {
        stack.send(fork.invite, (response) => {
          const status = response.status ?? 500;
          if (status >= 200 && status < 300) return answered(fork, response);
          if (status >= 300) return refused(fork, status);
          if (!fork.leg.move('provisional') || done) return;
          if ((status === 180 || status === 183) && !ringing) {
            ringing = true;
            ringingWritten = onRinging(now()).catch((error) =>
              deps.log.warn({ err: error }, 'ringing not recorded'),
            );
            // A transfer's ring: the caller's INVITE was answered long ago and hears nothing of it.
            if (current.invite && !current.answered) deps.signalling.respondToCaller(current, 180, 'Ringing');
          }
        });
      }
    });
  }
}

/** The connection a binding registered over a WebSocket came in on (its `source`, `ws:address:port`). */
function webSocketFlow(source: string): SipRemote | undefined {
  const match = /^(wss?):(.+):(\d+)$/.exec(source);
  if (!match) return undefined;
  // No local address: a WebSocket flow is known by its peer's (websocket-transport.ts).
  return {
    protocol: match[1]!.toUpperCase(),
    address: match[2]!,
    port: Number(match[3]),
    local: { address: '', port: 0 },
  };
}

/** The G.711 laws an SDP settled on, in its order; both when it names neither (or there is none). */
export function codecsOf(sdp: string | undefined): G711[] {
  const offer = parseOffer(sdp);
  return offer ? [offer.codec] : ['PCMU', 'PCMA'];
}
