// Message text as SMPP carries it: GSM 03.38 septets, one per octet (unpacked, data_coding 0, the SMSC
// default alphabet) or UCS-2 big-endian (data_coding 8), and the concatenation header (UDH IE 0x00: 8-bit
// reference, parts, part number) on each part of a long message. The parts themselves are the messaging
// module's segments, so the carrier sends exactly the parts we count and charge.
import { GSM_BASIC_CHARACTERS } from '../gsm-alphabet.ts';

export const DATA_CODING = { gsm7: 0x00, ucs2: 0x08 } as const;

const ESCAPE = 0x1b;
const EXTENSION: Record<string, number> = {
  '\f': 0x0a,
  '^': 0x14,
  '{': 0x28,
  '}': 0x29,
  '\\': 0x2f,
  '[': 0x3c,
  '~': 0x3d,
  ']': 0x3e,
  '|': 0x40,
  '€': 0x65,
};
const BASIC = new Map<string, number>();
// GSM_BASIC_CHARACTERS is the table in code order without 0x1B (the escape).
[...GSM_BASIC_CHARACTERS].forEach((character, index) => {
  BASIC.set(character, index < ESCAPE ? index : index + 1);
});
const FROM_BASIC = new Map([...BASIC].map(([character, code]) => [code, character]));
const FROM_EXTENSION = new Map(Object.entries(EXTENSION).map(([character, code]) => [code, character]));

export function encodeGsm7(text: string): Buffer {
  const septets: number[] = [];
  for (const character of text) {
    const basic = BASIC.get(character);
    if (basic !== undefined) septets.push(basic);
    else if (EXTENSION[character] !== undefined) septets.push(ESCAPE, EXTENSION[character]);
    else throw new Error(`not in the GSM 03.38 alphabet: ${JSON.stringify(character)}`);
  }
  return Buffer.from(septets);
}

export function decodeGsm7(bytes: Buffer): string {
  let text = '';
  for (let i = 0; i < bytes.length; i++) {
    const code = bytes[i]! & 0x7f;
    if (code === ESCAPE && i + 1 < bytes.length) text += FROM_EXTENSION.get(bytes[++i]! & 0x7f) ?? ' ';
    else text += FROM_BASIC.get(code) ?? '?';
  }
  return text;
}

export function encodeUcs2(text: string): Buffer {
  const bytes = Buffer.alloc(text.length * 2);
  for (let i = 0; i < text.length; i++) bytes.writeUInt16BE(text.charCodeAt(i), i * 2);
  return bytes;
}

export function decodeUcs2(bytes: Buffer): string {
  let text = '';
  for (let i = 0; i + 1 < bytes.length; i += 2) text += String.fromCharCode(bytes.readUInt16BE(i));
  return text;
}

/** The concatenation header for part `number` (from 1) of `total`, sharing `reference`. */
export function concatenationHeader(reference: number, total: number, number: number): Buffer {
  return Buffer.from([0x05, 0x00, 0x03, reference & 0xff, total, number]);
}

/** A received short_message's text and, for a part of a long message, where it belongs. */
export function decodeShortMessage(
  shortMessage: Buffer,
  dataCoding: number,
  hasHeader: boolean,
): { text: string; part?: { reference: number; total: number; number: number } } {
  let payload = shortMessage;
  let part: { reference: number; total: number; number: number } | undefined;
  if (hasHeader && shortMessage.length > 0) {
    const headerLength = shortMessage[0]! + 1;
    const header = shortMessage.subarray(1, headerLength);
    for (let i = 0; i + 1 < header.length; ) {
      const id = header[i]!;
      const length = header[i + 1]!;
      const data = header.subarray(i + 2, i + 2 + length);
      if (id === 0x00 && length === 3) part = { reference: data[0]!, total: data[1]!, number: data[2]! };
      if (id === 0x08 && length === 4)
        part = { reference: data.readUInt16BE(0), total: data[2]!, number: data[3]! };
      i += 2 + length;
    }
    payload = shortMessage.subarray(headerLength);
  }
  const text =
    dataCoding === DATA_CODING.ucs2
      ? decodeUcs2(payload)
      : dataCoding === 0x03
        ? payload.toString('latin1')
        : decodeGsm7(payload);
  return { text, ...(part && { part }) };
}
