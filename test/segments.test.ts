// Segment counting (spec "Message send input", CONTRACT section 6): the GSM 03.38 tables character by
// character, the exact single and concatenated boundaries of both encodings, and the rule that a part never
// ends inside an escape pair, a surrogate pair or a grapheme cluster.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  chargeableSegments,
  countSegments,
  GSM_BASIC_CHARACTERS,
  GSM_EXTENSION_CHARACTERS,
  MMS_SEGMENT_WEIGHT,
  packGraphemes,
  segmentsAtMost,
  splitGraphemes,
  splitSegments,
  unitsOf,
} from '../src/modules/messaging/segments.ts';
import { generateCorpus } from './helpers/text-corpus.ts';

// The default alphabet written out by code, from 3GPP TS 23.038 section 6.2.1 (0x1B, the escape, has no
// character). Kept apart from the module's string so a typo in either shows up.
const BASIC_TABLE: Record<number, string> = {
  0: '@',
  1: '£',
  2: '$',
  3: '¥',
  4: 'è',
  5: 'é',
  6: 'ù',
  7: 'ì',
  8: 'ò',
  9: 'Ç',
  10: '\n',
  11: 'Ø',
  12: 'ø',
  13: '\r',
  14: 'Å',
  15: 'å',
  16: 'Δ',
  17: '_',
  18: 'Φ',
  19: 'Γ',
  20: 'Λ',
  21: 'Ω',
  22: 'Π',
  23: 'Ψ',
  24: 'Σ',
  25: 'Θ',
  26: 'Ξ',
  28: 'Æ',
  29: 'æ',
  30: 'ß',
  31: 'É',
  32: ' ',
  33: '!',
  34: '"',
  35: '#',
  36: '¤',
  37: '%',
  38: '&',
  39: "'",
  40: '(',
  41: ')',
  42: '*',
  43: '+',
  44: ',',
  45: '-',
  46: '.',
  47: '/',
  58: ':',
  59: ';',
  60: '<',
  61: '=',
  62: '>',
  63: '?',
  64: '¡',
  91: 'Ä',
  92: 'Ö',
  93: 'Ñ',
  94: 'Ü',
  95: '§',
  96: '¿',
  123: 'ä',
  124: 'ö',
  125: 'ñ',
  126: 'ü',
  127: 'à',
};
for (let code = 0x30; code <= 0x39; code++) BASIC_TABLE[code] = String.fromCharCode(code);
for (let code = 0x41; code <= 0x5a; code++) BASIC_TABLE[code] = String.fromCharCode(code);
for (let code = 0x61; code <= 0x7a; code++) BASIC_TABLE[code] = String.fromCharCode(code);
// Extension table, sent as 0x1B followed by these codes.
const EXTENSION_TABLE: Record<number, string> = {
  10: '\f',
  20: '^',
  40: '{',
  41: '}',
  47: '\\',
  60: '[',
  61: '~',
  62: ']',
  64: '|',
  101: '€',
};

const repeat = (text: string, times: number) => text.repeat(times);
const CJK = '你';

describe('the GSM 03.38 tables', () => {
  test('the module holds exactly the 127 basic and 10 extension characters of the standard', () => {
    assert.equal(Object.keys(BASIC_TABLE).length, 127);
    assert.deepEqual([...GSM_BASIC_CHARACTERS].sort(), Object.values(BASIC_TABLE).sort());
    assert.deepEqual([...GSM_EXTENSION_CHARACTERS].sort(), Object.values(EXTENSION_TABLE).sort());
  });

  test('every basic character alone is GSM-7 and takes one septet', () => {
    for (const character of Object.values(BASIC_TABLE)) {
      assert.deepEqual(
        countSegments(character),
        { segments: 1, encoding: 'GSM-7', characters: 1, units: 1 },
        `U+${character.charCodeAt(0).toString(16)}`,
      );
    }
  });

  test('every extension character is GSM-7 and takes two septets', () => {
    for (const character of Object.values(EXTENSION_TABLE)) {
      assert.deepEqual(countSegments(character), { segments: 1, encoding: 'GSM-7', characters: 1, units: 2 });
    }
    assert.equal(countSegments('€^{}[]~|\\\f').units, 20);
  });

  test('accented letters of the set keep a text in GSM-7', () => {
    const accented = 'éèùìòÇØøÅåÄÖÑÜ§¿äöñüàÉÆæß¡£¥¤$@ΔΦΓΛΩΠΨΣΘΞ';
    const result = countSegments(`Café crème à Zürich, señor Øystein: ${accented}`);
    assert.equal(result.encoding, 'GSM-7');
    assert.equal(countSegments(repeat('é', 160)).segments, 1);
  });

  test('letters outside the set switch the whole text to UCS-2', () => {
    // Lowercase ç is not in the default alphabet (only Ç is); neither are á, ê, í, ó, ú, â, ô, ë, ï, ã, õ, ÿ.
    for (const outsider of [
      'ç',
      'á',
      'ê',
      'í',
      'ó',
      'ú',
      'â',
      'î',
      'ô',
      'û',
      'ë',
      'ï',
      'ã',
      'õ',
      'ÿ',
      'À',
      'È',
      'Ê',
      'Ó',
      'Ú',
    ]) {
      const result = countSegments(`Hello ${outsider}`);
      assert.equal(result.encoding, 'UCS-2', outsider);
      assert.equal(result.units, 7);
    }
  });

  test('look-alikes and control characters outside the tables are UCS-2', () => {
    const lookAlikes = [
      '`', // grave accent: ASCII but not GSM
      '\u001b', // the escape itself cannot be sent as text
      '\t',
      '\u2126', // OHM SIGN, not GREEK CAPITAL OMEGA
      '\u0391', // GREEK CAPITAL ALPHA, looks like A
      '\u00a0', // no-break space
      '\u2019', // right single quotation mark (smart quote)
      '\u201c',
      '\u2013', // en dash
      '\u2026', // ellipsis
      '\u00b4',
      'µ',
    ];
    for (const character of lookAlikes) {
      assert.equal(
        countSegments(`A${character}`).encoding,
        'UCS-2',
        `U+${character.charCodeAt(0).toString(16)}`,
      );
    }
  });

  test('decomposed accents are counted as sent, not normalized: e + U+0301 is UCS-2', () => {
    assert.deepEqual(countSegments('e\u0301'), { segments: 1, encoding: 'UCS-2', characters: 1, units: 2 });
    assert.deepEqual(countSegments('\u00e9'), { segments: 1, encoding: 'GSM-7', characters: 1, units: 1 });
  });

  test('no two GSM characters form one grapheme cluster except CR LF (the GSM-7 fast path relies on it)', () => {
    const alphabet = [...GSM_BASIC_CHARACTERS, ...GSM_EXTENSION_CHARACTERS];
    for (const first of alphabet) {
      for (const second of alphabet) {
        const clusters = splitGraphemes(first + second).length;
        assert.equal(clusters, first === '\r' && second === '\n' ? 1 : 2, JSON.stringify(first + second));
      }
    }
  });
});

describe('GSM-7 boundaries', () => {
  test('160 septets are one segment, 161 are two', () => {
    assert.deepEqual(countSegments(repeat('a', 160)), {
      segments: 1,
      encoding: 'GSM-7',
      characters: 160,
      units: 160,
    });
    assert.deepEqual(countSegments(repeat('a', 161)), {
      segments: 2,
      encoding: 'GSM-7',
      characters: 161,
      units: 161,
    });
    assert.deepEqual(
      splitSegments(repeat('a', 161)).map((part) => part.length),
      [153, 8],
    );
  });

  test('306 septets are two segments, 307 three; 459 three, 460 four', () => {
    assert.equal(countSegments(repeat('a', 306)).segments, 2);
    assert.equal(countSegments(repeat('a', 307)).segments, 3);
    assert.equal(countSegments(repeat('a', 459)).segments, 3);
    assert.equal(countSegments(repeat('a', 460)).segments, 4);
  });

  test('extension characters count two septets toward the boundary', () => {
    assert.equal(countSegments(repeat('€', 80)).segments, 1); // 160 septets
    assert.equal(countSegments(`${repeat('€', 80)}a`).segments, 2);
    assert.deepEqual(countSegments(`${repeat('a', 159)}[`), {
      segments: 2,
      encoding: 'GSM-7',
      characters: 160,
      units: 161,
    });
  });

  test('an extension character that would take the 153rd and 154th septets moves whole to the next part', () => {
    const text = `${repeat('a', 152)}€${repeat('a', 152)}`; // 306 septets, yet three parts
    const parts = splitSegments(text);
    assert.deepEqual(
      parts.map((part) => unitsOf(part, 'GSM-7')),
      [152, 153, 1],
    );
    assert.ok(parts[1].startsWith('€'));
    assert.equal(countSegments(text).segments, 3);
    // One septet earlier it fits exactly.
    assert.deepEqual(
      splitSegments(`${repeat('a', 151)}€${repeat('a', 153)}`).map((part) => unitsOf(part, 'GSM-7')),
      [153, 153],
    );
  });

  test('CR LF is one character, two septets, and stays in one part', () => {
    assert.deepEqual(countSegments('a\r\nb'), { segments: 1, encoding: 'GSM-7', characters: 3, units: 4 });
    const parts = splitSegments(`${repeat('a', 152)}\r\n${repeat('a', 10)}`);
    assert.equal(parts[0], repeat('a', 152));
    assert.ok(parts[1].startsWith('\r\n'));
  });
});

describe('UCS-2 boundaries', () => {
  test('70 units are one segment, 71 two; 134 two, 135 three', () => {
    assert.deepEqual(countSegments(repeat(CJK, 70)), {
      segments: 1,
      encoding: 'UCS-2',
      characters: 70,
      units: 70,
    });
    assert.equal(countSegments(repeat(CJK, 71)).segments, 2);
    assert.equal(countSegments(repeat(CJK, 134)).segments, 2);
    assert.equal(countSegments(repeat(CJK, 135)).segments, 3);
    assert.deepEqual(
      splitSegments(repeat(CJK, 71)).map((part) => part.length),
      [67, 4],
    );
  });

  test('one character outside GSM makes GSM characters (even extension ones) cost one unit each', () => {
    assert.deepEqual(countSegments(`${repeat('a', 69)}😀`), {
      segments: 2,
      encoding: 'UCS-2',
      characters: 70,
      units: 71,
    });
    assert.equal(countSegments(`${repeat('€', 69)}ç`).units, 70);
    assert.equal(countSegments(`${repeat('€', 69)}ç`).segments, 1);
  });

  test('a surrogate pair counts two units and never straddles a part', () => {
    assert.deepEqual(countSegments('😀'), { segments: 1, encoding: 'UCS-2', characters: 1, units: 2 });
    assert.equal(countSegments(`${repeat(CJK, 68)}😀`).segments, 1); // exactly 70
    const parts = splitSegments(`${repeat(CJK, 66)}😀${repeat(CJK, 3)}`); // the emoji would take units 67–68
    assert.deepEqual(
      parts.map((part) => part.length),
      [66, 5],
    );
    assert.ok(parts[1].startsWith('😀'));
  });

  test('a ZWJ family is one character of 11 units and moves whole', () => {
    const family = '👨‍👩‍👧‍👦';
    assert.deepEqual(countSegments(family), { segments: 1, encoding: 'UCS-2', characters: 1, units: 11 });
    const parts = splitSegments(`${repeat(CJK, 60)}${family}${repeat(CJK, 5)}`);
    assert.deepEqual(parts, [repeat(CJK, 60), `${family}${repeat(CJK, 5)}`]);
  });

  test('flags are one character of two regional indicators; adjacent flags stay apart', () => {
    assert.deepEqual(countSegments('🇫🇷'), { segments: 1, encoding: 'UCS-2', characters: 1, units: 4 });
    assert.equal(countSegments('🇫🇷🇩🇪🇺🇸').characters, 3);
    const parts = splitSegments(`${repeat(CJK, 65)}🇫🇷${repeat(CJK, 5)}`);
    assert.deepEqual(parts, [repeat(CJK, 65), `🇫🇷${repeat(CJK, 5)}`]);
  });

  test('skin tones, keycaps and combining marks stay with their base', () => {
    assert.equal(countSegments('👍🏽').characters, 1);
    assert.equal(countSegments('1️⃣').characters, 1);
    assert.equal(countSegments('n\u0303o\u0308').characters, 2);
    const parts = splitSegments(`${repeat(CJK, 66)}e\u0301\u0323${repeat(CJK, 3)}`);
    assert.deepEqual(parts, [repeat(CJK, 66), `e\u0301\u0323${repeat(CJK, 3)}`]);
  });

  test('a single cluster longer than a part is cut between code points, never inside a surrogate pair', () => {
    const stacked = `e${repeat('\u0301', 100)}`; // one cluster of 101 units
    assert.deepEqual(countSegments(stacked), { segments: 2, encoding: 'UCS-2', characters: 1, units: 101 });
    assert.deepEqual(
      splitSegments(stacked).map((part) => part.length),
      [67, 34],
    );
    // A cluster of astral code points: a base emoji followed by 40 tag characters (each a surrogate pair).
    const tagged = `🏴${repeat('\u{E0061}', 40)}\u{E007F}`;
    assert.equal(countSegments(tagged).characters, 1);
    for (const part of splitSegments(`${CJK}${tagged}`)) {
      assert.ok(part.length <= 67);
      assert.ok(!/^[\udc00-\udfff]/.test(part) && !/[\ud800-\udbff]$/.test(part), 'surrogate pair split');
    }
    // It fills the part before it: splitting it is unavoidable, so no part is wasted.
    assert.deepEqual(
      splitSegments(`${repeat(CJK, 30)}${stacked}`).map((part) => part.length),
      [67, 64],
    );
  });
});

describe('edges and invariants', () => {
  test('an empty text is zero segments of GSM-7', () => {
    assert.deepEqual(countSegments(''), { segments: 0, encoding: 'GSM-7', characters: 0, units: 0 });
    assert.deepEqual(splitSegments(''), []);
    assert.deepEqual(packGraphemes([], 'UCS-2'), []);
  });

  test('a lone surrogate is one UCS-2 unit', () => {
    assert.deepEqual(countSegments('a\ud83d'), { segments: 1, encoding: 'UCS-2', characters: 2, units: 2 });
  });

  test('on 3,000 generated texts the parts join back to the text, fit, and never split a pair', () => {
    for (const text of generateCorpus(7, 3000)) {
      const result = countSegments(text);
      const parts = splitSegments(text);
      assert.equal(parts.join(''), text);
      assert.equal(parts.length, result.segments);
      const single = parts.length === 1;
      const capacity = result.encoding === 'GSM-7' ? (single ? 160 : 153) : single ? 70 : 67;
      let boundary = 0;
      for (const part of parts) {
        const size = unitsOf(part, result.encoding);
        assert.ok(size > 0 && size <= capacity, `part of ${size} units`);
        boundary += part.length;
        const splitsPair =
          /[\ud800-\udbff]/.test(text[boundary - 1]) && /[\udc00-\udfff]/.test(text[boundary] ?? '');
        assert.ok(!splitsPair, 'a part ends inside a surrogate pair');
      }
      assert.equal(
        parts.reduce((sum, part) => sum + unitsOf(part, result.encoding), 0),
        result.units,
      );
    }
  });
});

describe('segmentsAtMost: the bound a campaign launch checks first', () => {
  test('never below the exact count for any text of at most that many code units', () => {
    for (const text of generateCorpus(11, 3000)) {
      const exact = countSegments(text).segments;
      assert.ok(segmentsAtMost(text.length) >= exact, `${exact} segments in ${text.length} units`);
    }
    // The worst shapes: clusters that leave parts part-empty, escapes, a single cluster longer than a part.
    const family = '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466}';
    for (const text of [family.repeat(20), '€'.repeat(200), `e${'\u0301'.repeat(150)}`, 'a'.repeat(71)]) {
      assert.ok(segmentsAtMost(text.length) >= countSegments(text).segments, text.slice(0, 20));
    }
    assert.equal(segmentsAtMost(0), 0);
    assert.equal(segmentsAtMost(70), 1);
  });
});

describe('MMS weight', () => {
  test('an SMS counts its text segments; an MMS a flat weight whatever its text', () => {
    assert.equal(chargeableSegments(4, 0), 4);
    assert.equal(chargeableSegments(0, 1), MMS_SEGMENT_WEIGHT);
    assert.equal(chargeableSegments(7, 10), MMS_SEGMENT_WEIGHT);
    assert.equal(MMS_SEGMENT_WEIGHT, 3);
  });
});
