// How many SMS segments a text costs (spec "Message send input", CONTRACT section 6). Segments are the unit
// of every send limit and of billing, so this one function answers both POST /api/v2/messages/segments and
// the send path. A text in the GSM 03.38 default alphabet travels in 7-bit septets (160 in one segment, 153
// per part once a concatenation header is needed); the extension table's characters take an escape septet
// plus their own. Anything else sends the whole text as UCS-2 (UTF-16 code units: 70, or 67 per part).
// Parts never end inside an escape pair or a surrogate pair, and a user-perceived character (grapheme
// cluster) moves whole to the next part unless it alone is longer than a part. docs/messaging.md explains
// each choice and how we differ from the public sms-segments-calculator package.
import { GSM_BASIC_CHARACTERS, GSM_EXTENSION_CHARACTERS } from '../../carriers/gsm-alphabet.ts';

export type SmsEncoding = 'GSM-7' | 'UCS-2';

export interface SegmentCount {
  /** Parts the carrier sends; 0 for an empty text. */
  segments: number;
  encoding: SmsEncoding;
  /** User-perceived characters (grapheme clusters). */
  characters: number;
  /** Septets for GSM-7 (extension characters count 2), UTF-16 code units for UCS-2. */
  units: number;
}

// The GSM 03.38 alphabet lives with the carriers, which encode it (src/carriers/gsm-alphabet.ts).
export { GSM_BASIC_CHARACTERS, GSM_EXTENSION_CHARACTERS };

const SEPTETS = new Map<string, number>([
  ...[...GSM_BASIC_CHARACTERS].map((character): [string, number] => [character, 1]),
  ...[...GSM_EXTENSION_CHARACTERS].map((character): [string, number] => [character, 2]),
]);

const CAPACITY: Record<SmsEncoding, { single: number; concatenated: number }> = {
  'GSM-7': { single: 160, concatenated: 153 },
  'UCS-2': { single: 70, concatenated: 67 },
};

const graphemeSegmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

export function splitGraphemes(text: string): string[] {
  return Array.from(graphemeSegmenter.segment(text), (part) => part.segment);
}

// In GSM-7 text each character is its own cluster except CR LF (UAX #29 rule GB3): nothing in the GSM
// alphabet extends, joins or prepends. The common case so skips the segmenter, which costs a microsecond a
// character; a test checks this against Intl.Segmenter for every pair of GSM characters.
function graphemesOf(text: string, encoding: SmsEncoding): string[] {
  if (encoding === 'GSM-7') return text.match(/\r\n|[\s\S]/g) ?? [];
  return splitGraphemes(text);
}

export function encodingFor(text: string): SmsEncoding {
  for (const character of text) if (!SEPTETS.has(character)) return 'UCS-2';
  return 'GSM-7';
}

/** Units a piece of text takes in the given encoding (it must be representable in it). */
export function unitsOf(text: string, encoding: SmsEncoding): number {
  if (encoding === 'UCS-2') return text.length;
  let septets = 0;
  for (const character of text) septets += SEPTETS.get(character) ?? 0;
  return septets;
}

/**
 * Packs grapheme clusters into segment texts. Exported so tests can pack another library's clusters and
 * show that a difference in counts comes from where the clusters end, not from the packing.
 */
export function packGraphemes(graphemes: readonly string[], encoding: SmsEncoding): string[] {
  const { single, concatenated } = CAPACITY[encoding];
  const total = graphemes.reduce((sum, grapheme) => sum + unitsOf(grapheme, encoding), 0);
  if (total === 0) return [];
  if (total <= single) return [graphemes.join('')];

  const parts: string[] = [];
  let current = '';
  let used = 0;
  const startPart = () => {
    if (used > 0) parts.push(current);
    current = '';
    used = 0;
  };
  for (const grapheme of graphemes) {
    const size = unitsOf(grapheme, encoding);
    if (used + size > concatenated) {
      if (size <= concatenated) {
        startPart();
      } else {
        // One cluster longer than a part (e.g. a letter under dozens of combining marks) must be split:
        // fill the current part and cut only between code points, so a surrogate pair or an escape
        // pair stays whole.
        for (const codePoint of grapheme) {
          const codePointSize = unitsOf(codePoint, encoding);
          if (used + codePointSize > concatenated) startPart();
          current += codePoint;
          used += codePointSize;
        }
        continue;
      }
    }
    current += grapheme;
    used += size;
  }
  startPart();
  return parts;
}

/** The text of each segment, in order; joined they give back the text. Empty text has no segments. */
export function splitSegments(text: string): string[] {
  const encoding = encodingFor(text);
  return packGraphemes(graphemesOf(text, encoding), encoding);
}

export function countSegments(text: string): SegmentCount {
  const encoding = encodingFor(text);
  const graphemes = graphemesOf(text, encoding);
  return {
    segments: packGraphemes(graphemes, encoding).length,
    encoding,
    characters: graphemes.length,
    units: unitsOf(text, encoding),
  };
}

/**
 * At most how many segments a text of at most `units` UTF-16 code units takes, whatever its characters: one
 * when it fits a single UCS-2 segment (and so, at two septets a character at most, a single GSM-7 one);
 * beyond that, a part holds at least one whole character cluster unless a cluster is split across parts, so
 * there are no more parts than characters plus the splits. Loose on purpose: a cheap bound for when the
 * exact count would mean rendering every recipient's text.
 */
export function segmentsAtMost(units: number): number {
  if (units <= CAPACITY['UCS-2'].single) return units > 0 ? 1 : 0;
  return units + Math.ceil(units / (CAPACITY['UCS-2'].concatenated - 1));
}

// An MMS is one carrier message whatever its text length (the text rides as a part of the MMS, it is not cut
// into SMS segments), and US carriers charge it at about three SMS segments. Send limits are counted in
// segments, so an MMS counts a flat MMS_SEGMENT_WEIGHT: predictable for the customer, close to our cost.
export const MMS_SEGMENT_WEIGHT = 3;

/** Segments a message counts against send limits: the text's segments for an SMS, a flat weight for MMS. */
export function chargeableSegments(textSegments: number, mediaCount: number): number {
  return mediaCount > 0 ? MMS_SEGMENT_WEIGHT : textSegments;
}
