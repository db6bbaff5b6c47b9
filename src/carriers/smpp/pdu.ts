// SMPP 3.4 PDUs, the few an ESME (our side) needs: bind_transceiver, submit_sm, deliver_sm, enquire_link,
// unbind and their responses, generic_nack. Our own codec rather than a library's, so that the tests' peer (the
// npm `smpp` package's server) checks it instead of sharing it. Layout per the SMPP v3.4 specification, 4.1-4.6.

export const COMMAND = {
  generic_nack: 0x80000000,
  bind_transceiver: 0x00000009,
  bind_transceiver_resp: 0x80000009,
  submit_sm: 0x00000004,
  submit_sm_resp: 0x80000004,
  deliver_sm: 0x00000005,
  deliver_sm_resp: 0x80000005,
  unbind: 0x00000006,
  unbind_resp: 0x80000006,
  enquire_link: 0x00000015,
  enquire_link_resp: 0x80000015,
} as const;

export const STATUS = {
  ESME_ROK: 0x00000000,
  ESME_RINVCMDID: 0x00000003,
  ESME_RBINDFAIL: 0x0000000d,
  ESME_RINVPASWD: 0x0000000e,
  ESME_RINVSYSID: 0x0000000f,
  ESME_RTHROTTLED: 0x00000058,
  ESME_RMSGQFUL: 0x00000014,
} as const;

/** TLV tags we read. */
export const TAG = { receipted_message_id: 0x001e, message_state: 0x0427 } as const;

export interface Pdu {
  commandId: number;
  status: number;
  sequence: number;
  body: Buffer;
}

/** Fields of submit_sm and deliver_sm (they share a layout). */
export interface ShortMessage {
  serviceType: string;
  sourceTon: number;
  sourceNpi: number;
  source: string;
  destinationTon: number;
  destinationNpi: number;
  destination: string;
  esmClass: number;
  protocolId: number;
  priority: number;
  registeredDelivery: number;
  dataCoding: number;
  shortMessage: Buffer;
  tlvs: Map<number, Buffer>;
}

export function encodePdu(
  commandId: number,
  sequence: number,
  body: Buffer = Buffer.alloc(0),
  status = 0,
): Buffer {
  const header = Buffer.alloc(16);
  header.writeUInt32BE(16 + body.length, 0);
  header.writeUInt32BE(commandId, 4);
  header.writeUInt32BE(status, 8);
  header.writeUInt32BE(sequence, 12);
  return Buffer.concat([header, body]);
}

const cString = (value: string) => Buffer.from(`${value}\0`, 'latin1');
const octet = (value: number) => Buffer.from([value]);

export function bindBody(systemId: string, password: string, systemType: string): Buffer {
  return Buffer.concat([
    cString(systemId),
    cString(password),
    cString(systemType),
    octet(0x34), // interface_version: 3.4
    octet(0),
    octet(0),
    cString(''), // address_range
  ]);
}

export function shortMessageBody(
  message: Omit<ShortMessage, 'tlvs' | 'serviceType' | 'protocolId' | 'priority'>,
): Buffer {
  if (message.shortMessage.length > 254) throw new Error('short_message longer than 254 octets');
  return Buffer.concat([
    cString(''), // service_type
    octet(message.sourceTon),
    octet(message.sourceNpi),
    cString(message.source),
    octet(message.destinationTon),
    octet(message.destinationNpi),
    cString(message.destination),
    octet(message.esmClass),
    octet(0), // protocol_id
    octet(0), // priority_flag
    cString(''), // schedule_delivery_time: now
    cString(''), // validity_period: the SMSC's default
    octet(message.registeredDelivery),
    octet(0), // replace_if_present_flag
    octet(message.dataCoding),
    octet(0), // sm_default_msg_id
    octet(message.shortMessage.length),
    message.shortMessage,
  ]);
}

/** Reads a body field by field; a field running past the end throws (a malformed PDU). */
class Reader {
  private offset = 0;
  constructor(private readonly buffer: Buffer) {}
  cString(): string {
    const end = this.buffer.indexOf(0, this.offset);
    if (end < 0) throw new Error('unterminated C-Octet string');
    const value = this.buffer.toString('latin1', this.offset, end);
    this.offset = end + 1;
    return value;
  }
  octet(): number {
    if (this.offset >= this.buffer.length) throw new Error('PDU body too short');
    return this.buffer[this.offset++]!;
  }
  bytes(length: number): Buffer {
    if (this.offset + length > this.buffer.length) throw new Error('PDU body too short');
    const value = this.buffer.subarray(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }
  tlvs(): Map<number, Buffer> {
    const tlvs = new Map<number, Buffer>();
    while (this.offset + 4 <= this.buffer.length) {
      const tag = this.buffer.readUInt16BE(this.offset);
      const length = this.buffer.readUInt16BE(this.offset + 2);
      this.offset += 4;
      tlvs.set(tag, this.bytes(length));
    }
    return tlvs;
  }
}

export function readCString(body: Buffer): string {
  return body.length === 0 ? '' : new Reader(body).cString();
}

export function parseShortMessage(body: Buffer): ShortMessage {
  const reader = new Reader(body);
  const serviceType = reader.cString();
  const sourceTon = reader.octet();
  const sourceNpi = reader.octet();
  const source = reader.cString();
  const destinationTon = reader.octet();
  const destinationNpi = reader.octet();
  const destination = reader.cString();
  const esmClass = reader.octet();
  const protocolId = reader.octet();
  const priority = reader.octet();
  reader.cString(); // schedule_delivery_time
  reader.cString(); // validity_period
  const registeredDelivery = reader.octet();
  reader.octet(); // replace_if_present_flag
  const dataCoding = reader.octet();
  reader.octet(); // sm_default_msg_id
  const shortMessage = Buffer.from(reader.bytes(reader.octet()));
  return {
    serviceType,
    sourceTon,
    sourceNpi,
    source,
    destinationTon,
    destinationNpi,
    destination,
    esmClass,
    protocolId,
    priority,
    registeredDelivery,
    dataCoding,
    shortMessage,
    tlvs: reader.tlvs(),
  };
}

/** Splits a stream of bytes into PDUs; what is left waits for the next chunk. */
export class PduReader {
  private pending: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): Pdu[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const pdus: Pdu[] = [];
    while (this.pending.length >= 16) {
      const length = this.pending.readUInt32BE(0);
      if (length < 16 || length > 64 * 1024) throw new Error(`implausible PDU length ${length}`);
      if (this.pending.length < length) break;
      pdus.push({
        commandId: this.pending.readUInt32BE(4),
        status: this.pending.readUInt32BE(8),
        sequence: this.pending.readUInt32BE(12),
        body: this.pending.subarray(16, length),
      });
      this.pending = this.pending.subarray(length);
    }
    return pdus;
  }
}
