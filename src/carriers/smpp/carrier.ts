// A carrier reached over SMPP 3.4 (CARRIER=smpp): one bind_transceiver session to an aggregator's SMSC, kept
// up with enquire_link and rebound after a drop with a doubling backoff (1 s to 30 s). Each message goes as
// the parts the messaging module counted (GSM 03.38 septets or UCS-2, with a concatenation header when there
// are several), at most `window` submit_sm outstanding at once. Delivery receipts and inbound texts arrive as
// deliver_sm and go to the messaging module through CarrierReports; we answer deliver_sm_resp only once a
// report is stored, so a report we could not keep is sent again by the SMSC.
//
// Nothing is lost across a drop: a message whose parts were not all acknowledged makes send() throw, the
// dispatch job is retried, and the retry sends only the parts the SMSC has not acknowledged (kept here by
// message id), so a part is not sent twice. Until the session is bound, send() throws too (the message stays
// queued); a refused bind is logged with the SMSC's status and retried with the same backoff.
import { connect, type Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Carrier, CarrierSendResult, OutboundForCarrier, ReceiptStatus, TrustTier } from '../carrier.ts';
import { ProviderCarrier } from '../provider-carrier.ts';
import {
  bindBody,
  COMMAND,
  encodePdu,
  type Pdu,
  PduReader,
  parseShortMessage,
  readCString,
  STATUS,
  shortMessageBody,
  TAG,
} from './pdu.ts';
import { concatenationHeader, DATA_CODING, decodeShortMessage, encodeGsm7, encodeUcs2 } from './text.ts';

export interface SmppOptions {
  /** smpp://system_id:password@host:port */
  url: string;
  systemType: string;
  /** submit_sm outstanding at once. */
  window: number;
  tenDlcTier: TrustTier;
  log: FastifyBaseLogger;
  /** How long send() waits for a bound session before giving the message back to its job (ms). */
  bindWaitMs?: number;
  /** How long a request waits for its response (ms). */
  responseTimeoutMs?: number;
  enquireLinkSeconds?: number;
}

/** SMSC refusals that pass: the message is tried again later rather than failed. */
const TRANSIENT = new Set<number>([STATUS.ESME_RTHROTTLED, STATUS.ESME_RMSGQFUL]);

/** Receipt `stat:` words and message_state values that are final, and what they mean for us. */
const RECEIPT_STATES: Record<string, ReceiptStatus> = {
  DELIVRD: 'delivered',
  UNDELIV: 'undelivered',
  EXPIRED: 'undelivered',
  REJECTD: 'failed',
  DELETED: 'failed',
  UNKNOWN: 'failed',
};
const MESSAGE_STATES: Record<number, ReceiptStatus> = {
  2: 'delivered',
  3: 'undelivered',
  4: 'failed',
  5: 'undelivered',
  7: 'failed',
  8: 'failed',
};

class ConnectionLost extends Error {}

interface PendingRequest {
  resolve: (pdu: Pdu) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

const hex = (status: number) => `0x${status.toString(16).padStart(8, '0')}`;
const international = (number: string) => number.replace(/^\+/, '');
const e164 = (address: string) => (address.startsWith('+') ? address : `+${address}`);

export class SmppCarrier extends ProviderCarrier implements Carrier {
  readonly name = 'smpp';
  private socket?: Socket;
  private bound = false;
  private stopped = true;
  private sequence = 0;
  private reference = 0;
  private reconnectDelayMs = 1000;
  private reconnectTimer?: NodeJS.Timeout;
  private enquireTimer?: NodeJS.Timeout;
  private readonly pending = new Map<number, PendingRequest>();
  private inFlight = 0;
  private readonly windowWaiters: (() => void)[] = [];
  private boundWaiters: (() => void)[] = [];
  /**
   * For a message not yet wholly sent: its concatenation reference and the part ids the SMSC acknowledged
   * (its retry skips those parts and keeps the reference, so the handset still joins them).
   */
  private readonly acknowledged = new Map<string, { reference: number; ids: string[] }>();
  /** Parts of long inbound texts, until all have come. */
  private readonly inboundParts = new Map<string, { parts: string[]; received: number; at: number }>();
  /** The last bind refusal, for health and tests. */
  lastBindError?: string;

  constructor(private readonly options: SmppOptions) {
    super(options.tenDlcTier);
  }

  get isBound(): boolean {
    return this.bound;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    if (this.bound) await this.request(COMMAND.unbind, Buffer.alloc(0), 1000).catch(() => {});
    this.socket?.destroy();
    this.socket = undefined;
  }

  async send(message: OutboundForCarrier): Promise<CarrierSendResult> {
    if (message.mediaUrls.length > 0 || message.mediaFiles.length > 0) {
      // SMPP carries text only; MMS goes through a provider's HTTP API.
      return {
        accepted: false,
        errorCode: 'mms_not_supported',
        errorMessage: 'This carrier (SMPP) sends text only; the message had media',
      };
    }
    await this.whenBound();
    const parts = message.parts.length > 0 ? message.parts : [''];
    const ucs2 = message.encoding === 'UCS-2';
    let progress = this.acknowledged.get(message.id);
    if (!progress) {
      this.reference = (this.reference + 1) & 0xff;
      progress = { reference: this.reference, ids: [] };
    }
    const { reference, ids } = progress;
    for (const [index, text] of parts.entries()) {
      if (ids[index]) continue;
      const payload = ucs2 ? encodeUcs2(text) : encodeGsm7(text);
      const header = parts.length > 1 ? concatenationHeader(reference, parts.length, index + 1) : undefined;
      const body = shortMessageBody({
        sourceTon: 1,
        sourceNpi: 1,
        source: international(message.from),
        destinationTon: 1,
        destinationNpi: 1,
        destination: international(message.to),
        esmClass: header ? 0x40 : 0x00, // UDHI: the short message starts with a user data header
        // A receipt for the first part only: it carries the message's carrier id.
        registeredDelivery: index === 0 ? 0x01 : 0x00,
        dataCoding: ucs2 ? DATA_CODING.ucs2 : DATA_CODING.gsm7,
        shortMessage: header ? Buffer.concat([header, payload]) : payload,
      });
      const response = await this.withinWindow(() => this.request(COMMAND.submit_sm, body));
      if (response.status !== STATUS.ESME_ROK) {
        if (TRANSIENT.has(response.status)) throw new Error(`SMSC busy (${hex(response.status)}): try later`);
        this.acknowledged.delete(message.id);
        return {
          accepted: false,
          errorCode: `smpp_${hex(response.status)}`,
          errorMessage: `The SMSC refused the message (command_status ${hex(response.status)})`,
        };
      }
      ids[index] = readCString(response.body);
      this.acknowledged.set(message.id, progress);
    }
    this.acknowledged.delete(message.id);
    return { accepted: true, carrierMessageId: ids[0]! };
  }

  // The session

  private connect(): void {
    const url = new URL(this.options.url);
    const systemId = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    const socket = connect(Number(url.port || 2775), url.hostname);
    this.socket = socket;
    const reader = new PduReader();
    socket.setNoDelay(true);
    socket.on('connect', () => {
      this.request(COMMAND.bind_transceiver, bindBody(systemId, password, this.options.systemType))
        .then((response) => {
          if (response.status !== STATUS.ESME_ROK) {
            this.lastBindError = `bind_transceiver refused with command_status ${hex(response.status)}`;
            this.options.log.error(
              { systemId, status: hex(response.status) },
              'SMPP bind refused: check SMPP_URL credentials and SMPP_SYSTEM_TYPE; messages stay queued',
            );
            socket.destroy();
            return;
          }
          this.bound = true;
          this.lastBindError = undefined;
          this.reconnectDelayMs = 1000;
          this.options.log.info({ host: url.hostname, systemId }, 'SMPP bound');
          const waiters = this.boundWaiters;
          this.boundWaiters = [];
          for (const wake of waiters) wake();
          this.enquireTimer = setInterval(
            () => void this.request(COMMAND.enquire_link, Buffer.alloc(0)).catch(() => socket.destroy()),
            (this.options.enquireLinkSeconds ?? 30) * 1000,
          );
          this.enquireTimer.unref();
        })
        .catch(() => socket.destroy());
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const pdu of reader.push(chunk)) this.receive(pdu);
      } catch (error) {
        this.options.log.warn({ err: error }, 'SMPP: unreadable PDU; reconnecting');
        socket.destroy();
      }
    });
    socket.on('error', (error) => this.options.log.warn({ err: error }, 'SMPP connection error'));
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      this.bound = false;
      clearInterval(this.enquireTimer);
      for (const [sequence, request] of this.pending) {
        clearTimeout(request.timer);
        request.reject(new ConnectionLost('SMPP connection lost before the response'));
        this.pending.delete(sequence);
      }
      if (this.stopped) return;
      this.options.log.warn({ retryInMs: this.reconnectDelayMs }, 'SMPP connection closed; reconnecting');
      this.reconnectTimer = setTimeout(() => this.connect(), this.reconnectDelayMs);
      this.reconnectTimer.unref();
      this.reconnectDelayMs = Math.min(30_000, this.reconnectDelayMs * 2);
    });
  }

  private request(
    commandId: number,
    body: Buffer,
    timeoutMs = this.options.responseTimeoutMs ?? 30_000,
  ): Promise<Pdu> {
    const socket = this.socket;
    if (!socket || socket.destroyed) return Promise.reject(new ConnectionLost('SMPP not connected'));
    this.sequence = (this.sequence % 0x7fffffff) + 1;
    const sequence = this.sequence;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(sequence);
        reject(new ConnectionLost('SMPP response timed out'));
        socket.destroy(); // an SMSC that stops answering is reconnected
      }, timeoutMs);
      timer.unref();
      this.pending.set(sequence, { resolve, reject, timer });
      socket.write(encodePdu(commandId, sequence, body));
    });
  }

  private respond(commandId: number, sequence: number, status = 0, body = Buffer.alloc(0)): void {
    this.socket?.write(encodePdu(commandId, sequence, body, status));
  }

  private receive(pdu: Pdu): void {
    if (pdu.commandId & 0x80000000) {
      const request = this.pending.get(pdu.sequence);
      if (!request) return;
      clearTimeout(request.timer);
      this.pending.delete(pdu.sequence);
      request.resolve(pdu);
      return;
    }
    switch (pdu.commandId) {
      case COMMAND.enquire_link:
        this.respond(COMMAND.enquire_link_resp, pdu.sequence);
        return;
      case COMMAND.deliver_sm:
        void this.deliver(pdu);
        return;
      case COMMAND.unbind:
        this.respond(COMMAND.unbind_resp, pdu.sequence);
        this.socket?.end();
        return;
      default:
        this.respond(COMMAND.generic_nack, pdu.sequence, STATUS.ESME_RINVCMDID);
    }
  }

  private async deliver(pdu: Pdu): Promise<void> {
    try {
      const message = parseShortMessage(pdu.body);
      // esm_class bits 2-5: 0001 is an SMSC delivery receipt.
      if ((message.esmClass & 0x3c) === 0x04) await this.receipt(message);
      else await this.inbound(message);
      this.respond(COMMAND.deliver_sm_resp, pdu.sequence, STATUS.ESME_ROK, Buffer.from([0]));
    } catch (error) {
      this.options.log.warn({ err: error }, 'SMPP deliver_sm not stored; the SMSC will send it again');
      this.respond(COMMAND.deliver_sm_resp, pdu.sequence, 0x08 /* ESME_RSYSERR */, Buffer.from([0]));
    }
  }

  private async receipt(message: ReturnType<typeof parseShortMessage>): Promise<void> {
    const text = message.shortMessage.toString('latin1');
    const taggedId = message.tlvs.get(TAG.receipted_message_id);
    const id = taggedId
      ? readCString(Buffer.concat([taggedId, Buffer.from([0])]))
      : /id:(\S+)/i.exec(text)?.[1];
    const state = message.tlvs.get(TAG.message_state)?.[0];
    const status =
      (state !== undefined ? MESSAGE_STATES[state] : undefined) ??
      RECEIPT_STATES[/stat:(\w+)/i.exec(text)?.[1]?.toUpperCase() ?? ''];
    if (!id || !status) return; // not final (ACCEPTD, ENROUTE) or unreadable: nothing to record
    await this.reports?.receipt(this.name, id, status);
  }

  private async inbound(message: ReturnType<typeof parseShortMessage>): Promise<void> {
    const { text, part } = decodeShortMessage(
      message.shortMessage,
      message.dataCoding,
      (message.esmClass & 0x40) !== 0,
    );
    let whole = text;
    if (part && part.total > 1) {
      const key = `${message.source}/${message.destination}/${part.reference}/${part.total}`;
      const entry = this.inboundParts.get(key) ?? { parts: [], received: 0, at: Date.now() };
      if (entry.parts[part.number - 1] === undefined) entry.received++;
      entry.parts[part.number - 1] = text;
      this.inboundParts.set(key, entry);
      if (entry.received < part.total) return;
      this.inboundParts.delete(key);
      whole = entry.parts.join('');
    }
    await this.reports?.inbound({ from: e164(message.source), to: e164(message.destination), text: whole });
  }

  private whenBound(): Promise<void> {
    if (this.bound) return Promise.resolve();
    // Refused credentials do not mend by waiting: the message goes back to its job at once.
    if (this.lastBindError)
      return Promise.reject(new Error(`SMPP ${this.lastBindError}; the message stays queued`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.boundWaiters = this.boundWaiters.filter((each) => each !== wake);
        reject(new Error(this.lastBindError ?? 'SMPP session not bound; the message stays queued'));
      }, this.options.bindWaitMs ?? 10_000);
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.boundWaiters.push(wake);
    });
  }

  private async withinWindow<T>(work: () => Promise<T>): Promise<T> {
    while (this.inFlight >= this.options.window)
      await new Promise<void>((wake) => this.windowWaiters.push(wake));
    this.inFlight++;
    try {
      return await work();
    } finally {
      this.inFlight--;
      this.windowWaiters.shift()?.();
    }
  }
}
