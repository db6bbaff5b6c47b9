// The console's phone: SIP.js (its SessionManager) over SIP over WebSocket (RFC 7118) to our own server, with
// credentials the server issues for the signed-in member's extension (POST /v2/portal/phone/credentials). One
// engine per signed-in tab, living outside React so a call survives navigation; components read its snapshot
// with useSyncExternalStore (use-phone.ts). Why SIP.js and not JsSIP: docs/console.md "The phone".
import { Invitation, type Session, SessionState } from 'sip.js';
import { SessionManager } from 'sip.js/lib/platform/web/session-manager/session-manager.js';
import { ApiProblem, data } from '../api.ts';
import { microphoneProblem, requireMicrophone } from './microphone.ts';

export interface PhoneCredentials {
  extensionId: string;
  extension: string;
  displayName: string;
  sipUri: string;
  username: string;
  password: string;
  wsUrl: string;
  expiresAt: string;
}

export type PhoneStatus = 'starting' | 'no-extension' | 'connecting' | 'ready' | 'offline' | 'failed';

export interface PhoneCall {
  id: string;
  direction: 'incoming' | 'outgoing';
  /** What the other side is: an extension's number or a phone number (the URI's user part). */
  remote: string;
  /** The name their phone sent, if any (the console prefers a contact's name: caller-id.ts). */
  remoteDisplayName: string | undefined;
  state: 'ringing' | 'calling' | 'active' | 'ended';
  held: boolean;
  muted: boolean;
  /** When the call was answered (the timer counts from here). */
  answeredAt: number | undefined;
}

export interface PhoneSnapshot {
  status: PhoneStatus;
  /** Why the phone cannot work, or what just failed, in words for the user. */
  problem: string | undefined;
  extension: { number: string; name: string } | undefined;
  calls: PhoneCall[];
}

/** Renew credentials when this share of their life has passed (the server gives an hour). */
const RENEW_AT = 0.8;

export class PhoneEngine {
  private snapshot: PhoneSnapshot = {
    status: 'starting',
    problem: undefined,
    extension: undefined,
    calls: [],
  };
  private readonly listeners = new Set<() => void>();
  private manager: SessionManager | undefined;
  private domain = '';
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly sessions = new Map<string, Session>();
  private readonly audio = new Map<string, HTMLAudioElement>();
  private stopped = false;

  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
  getSnapshot = () => this.snapshot;

  async start(): Promise<void> {
    let credentials: PhoneCredentials;
    try {
      credentials = await data<PhoneCredentials>('POST', '/v2/portal/phone/credentials');
    } catch (error) {
      if (error instanceof ApiProblem && error.code === 'NO_EXTENSION') {
        this.update({ status: 'no-extension', problem: undefined });
      } else {
        this.update({ status: 'failed', problem: messageOf(error) });
      }
      return;
    }
    if (this.stopped) return;
    this.domain = credentials.sipUri.replace(/^sips?:[^@]*@/, '');
    this.update({
      status: 'connecting',
      extension: { number: credentials.extension, name: credentials.displayName },
    });
    this.manager = new SessionManager(credentials.wsUrl, {
      aor: credentials.sipUri,
      // RFC 4733 telephone-events through the peer connection (RTCDTMFSender), not SIP INFO.
      sendDTMFUsingSessionDescriptionHandler: true,
      maxSimultaneousSessions: 2,
      registrationRetry: true,
      media: { remote: (session) => ({ audio: this.audioFor(session.id) }) },
      userAgentOptions: {
        authorizationUsername: credentials.username,
        authorizationPassword: credentials.password,
        displayName: credentials.displayName,
        logBuiltinEnabled: false,
        // Our server is public and runs ICE lite: host candidates are enough, and no STUN server is asked.
        sessionDescriptionHandlerFactoryOptions: {
          peerConnectionConfiguration: { iceServers: [] },
          iceGatheringTimeout: 500,
        },
      },
      delegate: {
        onServerConnect: () => this.update({ status: 'connecting' }),
        onServerDisconnect: (error) =>
          this.update({
            status: 'offline',
            problem: error ? 'Lost the connection to the phone server' : undefined,
          }),
        onRegistered: () => this.update({ status: 'ready', problem: undefined }),
        onUnregistered: () => {
          if (!this.stopped) this.update({ status: 'offline' });
        },
        onCallCreated: (session) => this.track(session),
        onCallReceived: (session) => this.track(session),
        onCallHangup: (session) => this.forget(session.id),
        onCallHold: (session, held) => this.patch(session.id, { held }),
      },
    });
    this.scheduleRenewal(credentials.expiresAt);
    try {
      await this.manager.connect();
      await this.manager.register({
        requestDelegate: {
          onReject: (response) =>
            this.update({
              status: 'failed',
              problem: `The phone server refused the registration (${response.message.statusCode} ${response.message.reasonPhrase})`,
            }),
        },
      });
    } catch (error) {
      this.update({ status: 'offline', problem: messageOf(error) });
    }
  }

  /** Sign-out: unregister and close (the server revokes the credentials with the session anyway). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.renewTimer);
    const manager = this.manager;
    this.manager = undefined;
    if (!manager) return;
    for (const session of this.sessions.values()) await manager.hangup(session).catch(() => undefined);
    await manager.unregister().catch(() => undefined);
    await manager.disconnect().catch(() => undefined);
  }

  /** Calls an extension's number or a phone number. */
  async dial(target: string): Promise<void> {
    const manager = this.ready();
    const destination = target.replace(/[^\d+*#]/g, '');
    if (!destination) throw new Error('Enter an extension or a phone number');
    await this.withMicrophone(() => manager.call(`sip:${destination}@${this.domain}`));
  }

  async answer(id: string): Promise<void> {
    const manager = this.ready();
    await this.withMicrophone(() => manager.answer(this.session(id)));
  }

  decline = (id: string) => this.ready().decline(this.session(id));
  hangup = (id: string) => this.ready().hangup(this.session(id));

  toggleMute(id: string): void {
    const manager = this.ready();
    const session = this.session(id);
    if (manager.isMuted(session)) manager.unmute(session);
    else manager.mute(session);
    this.patch(id, { muted: manager.isMuted(session) });
  }

  async toggleHold(id: string): Promise<void> {
    const manager = this.ready();
    const session = this.session(id);
    await (manager.isHeld(session) ? manager.unhold(session) : manager.hold(session));
  }

  /**
   * A key pressed during the call: RFC 4733 (telephone-event) through the peer connection. The call is
   * answered (SIP) a moment before its audio is connected (DTLS), and until then the sender cannot take
   * tones: a key pressed in that moment waits for it (5 s at most) rather than being lost. The key is added
   * to the tones still queued, since handing the sender a new set replaces them (a fast "123" lost the 2).
   */
  async sendKey(id: string, key: string): Promise<void> {
    this.ready();
    const connection = this.peerConnection(id);
    const dtmf = connection?.getSenders().find((sender) => sender.dtmf)?.dtmf;
    if (!connection || !dtmf) return;
    if (!dtmf.canInsertDTMF) await audioConnected(connection, dtmf, KEY_WAIT_MS);
    if (dtmf.canInsertDTMF) dtmf.insertDTMF(dtmf.toneBuffer + key);
  }

  /** Blind transfer: the other side is sent to `target` (REFER) and this call ends. */
  transfer = (id: string, target: string) =>
    this.ready().transfer(this.session(id), `sip:${target.replace(/[^\d+*#]/g, '')}@${this.domain}`);

  /** Attended transfer: the held call `id` is joined to the consultation call `consultId` (REFER, Replaces). */
  completeTransfer = (id: string, consultId: string) =>
    this.ready().transfer(this.session(id), this.session(consultId));

  private peerConnection(id: string): RTCPeerConnection | undefined {
    const handler = this.sessions.get(id)?.sessionDescriptionHandler as
      | { peerConnection?: RTCPeerConnection }
      | undefined;
    return handler?.peerConnection;
  }

  /** Packets received and sent on the call's audio so far, and the level heard now (0 to 1). */
  async audioStats(id: string): Promise<{ received: number; sent: number; level: number } | undefined> {
    const stats = await this.peerConnection(id)?.getStats();
    if (!stats) return undefined;
    const totals = { received: 0, sent: 0, level: 0 };
    stats.forEach(
      (report: {
        type: string;
        kind?: string;
        packetsReceived?: number;
        packetsSent?: number;
        audioLevel?: number;
      }) => {
        if (report.type === 'inbound-rtp' && report.kind === 'audio') {
          totals.received += report.packetsReceived ?? 0;
          totals.level = Math.max(totals.level, report.audioLevel ?? 0);
        }
        if (report.type === 'outbound-rtp' && report.kind === 'audio') totals.sent += report.packetsSent ?? 0;
      },
    );
    return totals;
  }

  private track(session: Session): void {
    this.sessions.set(session.id, session);
    const incoming = session instanceof Invitation;
    const identity = session.remoteIdentity;
    this.upsert({
      id: session.id,
      direction: incoming ? 'incoming' : 'outgoing',
      remote: identity.uri.user ?? identity.uri.toString(),
      remoteDisplayName: identity.displayName || undefined,
      state: incoming ? 'ringing' : 'calling',
      held: false,
      muted: false,
      answeredAt: undefined,
    });
    session.stateChange.addListener((state) => {
      if (state === SessionState.Established && !this.call(session.id)?.answeredAt) {
        this.patch(session.id, { state: 'active', answeredAt: Date.now() });
      }
      if (state === SessionState.Terminated) this.forget(session.id);
    });
  }

  /** Runs a step that needs the microphone, turning a refusal into words the user can act on. */
  private async withMicrophone(step: () => Promise<unknown>): Promise<void> {
    try {
      // Asked first on its own, so a refusal is the browser's own error (SIP.js would report it as a failed call).
      await requireMicrophone();
      await step();
    } catch (error) {
      const problem = microphoneProblem(error);
      this.update({ problem: problem ?? messageOf(error) });
      throw new Error(problem ?? messageOf(error));
    }
  }

  private scheduleRenewal(expiresAt: string): void {
    const lifetime = Date.parse(expiresAt) - Date.now();
    this.renewTimer = setTimeout(() => void this.renew(), Math.max(10_000, lifetime * RENEW_AT));
  }

  /** New credentials for the next REGISTER; calls under way are not touched (their dialogs need none). */
  private async renew(): Promise<void> {
    try {
      const next = await data<PhoneCredentials>('POST', '/v2/portal/phone/credentials');
      const options = this.manager?.userAgent.configuration;
      if (!options || this.stopped) return;
      options.authorizationUsername = next.username;
      options.authorizationPassword = next.password;
      await this.manager?.register();
      this.scheduleRenewal(next.expiresAt);
    } catch (error) {
      this.update({ status: 'offline', problem: messageOf(error) });
    }
  }

  private audioFor(id: string): HTMLAudioElement {
    let element = this.audio.get(id);
    if (!element) {
      element = document.createElement('audio');
      element.autoplay = true;
      element.dataset.phoneCall = id;
      document.body.append(element);
      this.audio.set(id, element);
    }
    return element;
  }

  private forget(id: string): void {
    this.sessions.delete(id);
    this.audio.get(id)?.remove();
    this.audio.delete(id);
    this.update({ calls: this.snapshot.calls.filter((each) => each.id !== id) });
  }

  private ready(): SessionManager {
    if (!this.manager) throw new Error('The phone is not connected');
    return this.manager;
  }

  private session(id: string): Session {
    const session = this.sessions.get(id);
    if (!session) throw new Error('That call has ended');
    return session;
  }

  private call(id: string): PhoneCall | undefined {
    return this.snapshot.calls.find((each) => each.id === id);
  }

  private upsert(call: PhoneCall): void {
    const known = this.snapshot.calls.some((each) => each.id === call.id);
    this.update({
      calls: known
        ? this.snapshot.calls.map((each) => (each.id === call.id ? call : each))
        : [...this.snapshot.calls, call],
    });
  }

  private patch(id: string, change: Partial<PhoneCall>): void {
    const call = this.call(id);
    if (call) this.upsert({ ...call, ...change });
  }

  private update(change: Partial<PhoneSnapshot>): void {
    this.snapshot = { ...this.snapshot, ...change };
    for (const listener of this.listeners) listener();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How long a key pressed before the call's audio is connected waits for it (ms). */
const KEY_WAIT_MS = 5000;

/**
 * Resolves when `dtmf` can take tones, the connection fails or closes, or after `ms`. Looked at every 50 ms:
 * no event says when the sender can take tones (the connection's own state may change before it).
 */
async function audioConnected(connection: RTCPeerConnection, dtmf: RTCDTMFSender, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!dtmf.canInsertDTMF && Date.now() < deadline) {
    if (connection.connectionState === 'failed' || connection.connectionState === 'closed') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
