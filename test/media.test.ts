// MMS media validation (spec "Message send input", "Media limits" and the MEDIA_* codes): real minimal
// JPEG, PNG and GIF files pass byte for byte; relabelled files, refused types, broken base64, malformed
// entries, an eleventh part and oversized uploads each answer 400 with their code; and when several faults
// meet, the documented order decides which one answers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MAXIMUM_MEDIA_PARTS,
  MAXIMUM_UPLOAD_BYTES,
  type MediaInput,
  validateMedia,
} from '../src/modules/messaging/media.ts';
import { ApiError } from '../src/platform/errors.ts';
import {
  APNG_1X1,
  base64,
  GIF_1X1,
  JPEG_1X1,
  MP3_FRAME,
  MP4_HEADER,
  PNG_1X1,
  WEBP_1X1,
} from './fixtures/media-files.ts';

const png = { contentType: 'image/png', data: base64(PNG_1X1) };
const jpeg = { contentType: 'image/jpeg', data: base64(JPEG_1X1) };
const gif = { contentType: 'image/gif', data: base64(GIF_1X1) };
const URL_ = 'https://cdn.example.com/images/cat.png';

/** A file of exactly `size` bytes that starts as a real PNG (the rest is padding after IEND). */
function pngOfSize(size: number) {
  const data = Buffer.alloc(size);
  data.set(PNG_1X1);
  return { contentType: 'image/png', data: data.toString('base64') };
}

async function refusal(input: MediaInput, code: string, messagePattern?: RegExp) {
  await assert.rejects(validateMedia(input), (error: unknown) => {
    assert.ok(error instanceof ApiError, `expected ApiError, got ${error}`);
    assert.equal(error.status, 400);
    assert.equal(error.code, code, error.message);
    if (messagePattern) assert.match(error.message, messagePattern);
    return true;
  });
}

describe('accepted media', () => {
  test('no media at all is an empty result, whether fields are absent, null or empty', async () => {
    const empty = { urls: [], files: [], count: 0, totalBytes: 0 };
    assert.deepEqual(await validateMedia({}), empty);
    assert.deepEqual(await validateMedia({ media: null, mediaFiles: null }), empty);
    assert.deepEqual(await validateMedia({ media: [], mediaFiles: [] }), empty);
  });

  test('real JPEG, PNG and GIF uploads come back as exactly the bytes sent, never transcoded', async () => {
    const result = await validateMedia({ mediaFiles: [jpeg, png, { ...gif, filename: 'wave.gif' }] });
    assert.equal(result.count, 3);
    assert.deepEqual(
      result.files.map((file) => file.contentType),
      ['image/jpeg', 'image/png', 'image/gif'],
    );
    assert.deepEqual(new Uint8Array(result.files[0].bytes), JPEG_1X1);
    assert.deepEqual(new Uint8Array(result.files[1].bytes), PNG_1X1);
    assert.deepEqual(new Uint8Array(result.files[2].bytes), GIF_1X1);
    assert.equal(result.files[2].filename, 'wave.gif');
    assert.equal('filename' in result.files[0], false);
    assert.equal(result.totalBytes, JPEG_1X1.length + PNG_1X1.length + GIF_1X1.length);
  });

  test('hosted URLs and uploads together, up to 10 parts', async () => {
    const result = await validateMedia({
      media: [URL_, 'http://example.org/a.gif?size=large#x'],
      mediaFiles: Array.from({ length: 8 }, () => png),
    });
    assert.equal(result.count, MAXIMUM_MEDIA_PARTS);
    assert.deepEqual(result.urls, [URL_, 'http://example.org/a.gif?size=large#x']);
    assert.equal(result.files.length, 8);
  });

  test('declared types are case-insensitive and their parameters ignored', async () => {
    const result = await validateMedia({
      mediaFiles: [
        { ...png, contentType: 'IMAGE/PNG' },
        { ...jpeg, contentType: ' image/jpeg ; name="a.jpg"' },
      ],
    });
    assert.deepEqual(
      result.files.map((file) => file.contentType),
      ['image/png', 'image/jpeg'],
    );
  });

  test('an animated PNG declared image/png is a PNG', async () => {
    const result = await validateMedia({
      mediaFiles: [{ contentType: 'image/png', data: base64(APNG_1X1) }],
    });
    assert.deepEqual(new Uint8Array(result.files[0].bytes), APNG_1X1);
  });

  test('line-wrapped base64 (MIME, the base64 tool) is accepted; a null filename means none', async () => {
    const wrapped = base64(JPEG_1X1).replace(/.{76}/g, '$&\r\n');
    assert.ok(wrapped.includes('\r\n'));
    const result = await validateMedia({ mediaFiles: [{ ...jpeg, data: ` ${wrapped}\n`, filename: null }] });
    assert.deepEqual(new Uint8Array(result.files[0].bytes), JPEG_1X1);
    assert.equal(result.files[0].filename, undefined);
  });

  test('a file of exactly 3,500,000 bytes, and uploads totalling exactly that, are accepted', async () => {
    const one = await validateMedia({ mediaFiles: [pngOfSize(MAXIMUM_UPLOAD_BYTES)] });
    assert.equal(one.files[0].bytes.length, MAXIMUM_UPLOAD_BYTES);
    const two = await validateMedia({ mediaFiles: [pngOfSize(2_000_000), pngOfSize(1_500_000)] });
    assert.equal(two.totalBytes, MAXIMUM_UPLOAD_BYTES);
  });
});

describe('TOO_MANY_MEDIA', () => {
  test('11 uploads, 11 URLs, or 6 + 5 combined', async () => {
    await refusal(
      { mediaFiles: Array.from({ length: 11 }, () => png) },
      'TOO_MANY_MEDIA',
      /at most 10.*has 11/,
    );
    await refusal({ media: Array.from({ length: 11 }, () => URL_) }, 'TOO_MANY_MEDIA');
    await refusal(
      { media: Array.from({ length: 6 }, () => URL_), mediaFiles: Array.from({ length: 5 }, () => png) },
      'TOO_MANY_MEDIA',
    );
  });
});

describe('MEDIA_TYPE_NOT_ALLOWED', () => {
  test('WebP, MP4 and MP3 declared truthfully are refused', async () => {
    await refusal(
      { mediaFiles: [{ contentType: 'image/webp', data: base64(WEBP_1X1) }] },
      'MEDIA_TYPE_NOT_ALLOWED',
    );
    await refusal(
      { mediaFiles: [{ contentType: 'video/mp4', data: base64(MP4_HEADER) }] },
      'MEDIA_TYPE_NOT_ALLOWED',
    );
    await refusal(
      { mediaFiles: [{ contentType: 'audio/mpeg', data: base64(MP3_FRAME) }] },
      'MEDIA_TYPE_NOT_ALLOWED',
    );
  });

  test('other declarations outside the three: non-standard image/jpg, image/apng, SVG, empty, nonsense', async () => {
    for (const contentType of [
      'image/jpg',
      'image/apng',
      'image/svg+xml',
      'image/heic',
      '',
      'png',
      'image/png2',
    ]) {
      await refusal(
        { mediaFiles: [{ ...png, contentType }] },
        'MEDIA_TYPE_NOT_ALLOWED',
        /image\/jpeg, image\/png/,
      );
    }
  });
});

describe('MEDIA_TYPE_MISMATCH', () => {
  test('a PNG declared as image/jpeg, a JPEG as image/gif, a GIF as image/png', async () => {
    await refusal(
      { mediaFiles: [{ ...png, contentType: 'image/jpeg' }] },
      'MEDIA_TYPE_MISMATCH',
      /mediaFiles\[0\] is declared image\/jpeg but holds image\/png data/,
    );
    await refusal({ mediaFiles: [{ ...jpeg, contentType: 'image/gif' }] }, 'MEDIA_TYPE_MISMATCH');
    await refusal({ mediaFiles: [{ ...gif, contentType: 'image/png' }] }, 'MEDIA_TYPE_MISMATCH');
  });

  test('refused formats relabelled as allowed ones are caught by their bytes', async () => {
    await refusal(
      { mediaFiles: [{ contentType: 'image/png', data: base64(WEBP_1X1) }] },
      'MEDIA_TYPE_MISMATCH',
      /image\/webp/,
    );
    await refusal(
      { mediaFiles: [{ contentType: 'image/gif', data: base64(MP4_HEADER) }] },
      'MEDIA_TYPE_MISMATCH',
    );
    await refusal(
      { mediaFiles: [{ contentType: 'image/jpeg', data: base64(MP3_FRAME) }] },
      'MEDIA_TYPE_MISMATCH',
    );
  });

  test('bytes of no known type, and a truncated signature, do not pass', async () => {
    const text = Buffer.from('just some text, not an image').toString('base64');
    await refusal(
      { mediaFiles: [{ contentType: 'image/png', data: text }] },
      'MEDIA_TYPE_MISMATCH',
      /no recognised/,
    );
    await refusal(
      { mediaFiles: [{ contentType: 'image/png', data: base64(PNG_1X1.slice(0, 6)) }] },
      'MEDIA_TYPE_MISMATCH',
    );
  });

  test('the offending part is named: the third upload', async () => {
    await refusal(
      { mediaFiles: [png, jpeg, { ...gif, contentType: 'image/jpeg' }] },
      'MEDIA_TYPE_MISMATCH',
      /mediaFiles\[2\]/,
    );
  });
});

describe('MEDIA_TOO_LARGE', () => {
  test('one file of 3,500,001 bytes', async () => {
    await refusal(
      { mediaFiles: [pngOfSize(MAXIMUM_UPLOAD_BYTES + 1)] },
      'MEDIA_TOO_LARGE',
      /mediaFiles\[0\] is 3500001 bytes/,
    );
  });

  test('two files each under the limit but over it together', async () => {
    await refusal(
      { mediaFiles: [pngOfSize(2_000_000), pngOfSize(1_500_001)] },
      'MEDIA_TOO_LARGE',
      /total 3500001 bytes/,
    );
  });
});

describe('MEDIA_MALFORMED', () => {
  test('entries that are not objects', async () => {
    for (const entry of [null, 'image.png', 42, true, [png]]) {
      await refusal({ mediaFiles: [entry] }, 'MEDIA_MALFORMED', /mediaFiles\[0\] must be an object/);
    }
  });

  test('missing or mistyped fields', async () => {
    await refusal({ mediaFiles: [{ data: png.data }] }, 'MEDIA_MALFORMED', /contentType must be a string/);
    await refusal({ mediaFiles: [{ contentType: 7, data: png.data }] }, 'MEDIA_MALFORMED', /contentType/);
    await refusal(
      { mediaFiles: [{ contentType: 'image/png' }] },
      'MEDIA_MALFORMED',
      /data must be a base64 string/,
    );
    await refusal({ mediaFiles: [{ contentType: 'image/png', data: PNG_1X1 }] }, 'MEDIA_MALFORMED', /data/);
    await refusal({ mediaFiles: [{ ...png, filename: 12 }] }, 'MEDIA_MALFORMED', /filename must be a string/);
    for (const filename of ['', '../../etc/passwd', 'a\\b.png', 'line\nbreak.png', 'x'.repeat(256)]) {
      await refusal({ mediaFiles: [{ ...png, filename }] }, 'MEDIA_MALFORMED', /filename/);
    }
  });

  test('empty data, or data that is only whitespace', async () => {
    await refusal({ mediaFiles: [{ contentType: 'image/png', data: '' }] }, 'MEDIA_MALFORMED', /empty/);
    await refusal({ mediaFiles: [{ contentType: 'image/png', data: ' \r\n ' }] }, 'MEDIA_MALFORMED', /empty/);
  });

  test('invalid base64: foreign characters, bad or missing padding, stray bits, base64url, a data: URL', async () => {
    const valid = png.data;
    const cases: Array<[string, RegExp]> = [
      [`${valid.slice(0, 10)}*${valid.slice(11)}`, /outside the base64 alphabet/],
      [`${valid.slice(0, 10)}é${valid.slice(11)}`, /outside the base64 alphabet/],
      [valid.replace(/=+$/, ''), /multiple of 4/], // padding stripped
      ['QUJD=', /multiple of 4/],
      ['QQ=A', /outside the base64 alphabet/], // padding in the middle
      ['Q===', /outside the base64 alphabet/],
      ['QR==', /stray bits/], // decodes to "A" but is not the canonical QQ==
      ['QUJ=', /stray bits/],
      [Buffer.from([0xfb, 0xff, 0xbf]).toString('base64url'), /URL-safe alphabet/],
      [`data:image/png;base64,${valid}`, /data: URL/],
    ];
    for (const [data, pattern] of cases) {
      await refusal({ mediaFiles: [{ contentType: 'image/png', data }] }, 'MEDIA_MALFORMED', pattern);
    }
  });

  test('media and mediaFiles that are not arrays', async () => {
    await refusal({ media: URL_ }, 'MEDIA_MALFORMED', /media must be an array/);
    await refusal({ mediaFiles: png }, 'MEDIA_MALFORMED', /mediaFiles must be an array/);
  });

  test('hosted URLs that could never be fetched', async () => {
    const bad = [
      '',
      42,
      null,
      'cdn.example.com/cat.png', // not absolute
      'ftp://example.com/cat.png',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'data:image/png;base64,AAAA',
      'https://user:secret@example.com/cat.png',
      'https://example.com/a cat.png',
      ' https://example.com/cat.png',
      'https://example.com/\u0000.png',
      `https://example.com/${'a'.repeat(2048)}`,
      'https://',
    ];
    for (const url of bad) {
      await refusal({ media: [URL_, url] }, 'MEDIA_MALFORMED', /^media\[1\]/);
    }
  });
});

describe('which fault answers first', () => {
  const relabelled = { ...png, contentType: 'image/jpeg' };
  const tooBig = pngOfSize(MAXIMUM_UPLOAD_BYTES + 1);
  const badBase64 = { contentType: 'image/png', data: 'not base64!' };
  const video = { contentType: 'video/mp4', data: base64(MP4_HEADER) };

  test('too many parts beats every fault inside the parts', async () => {
    await refusal(
      { mediaFiles: [null, video, badBase64, ...Array.from({ length: 8 }, () => png)] },
      'TOO_MANY_MEDIA',
    );
  });

  test('a malformed entry anywhere beats a refused type earlier in the list', async () => {
    await refusal({ mediaFiles: [video, null] }, 'MEDIA_MALFORMED', /mediaFiles\[1\]/);
    await refusal({ media: ['ftp://x'], mediaFiles: [video] }, 'MEDIA_MALFORMED');
  });

  test('a refused type beats broken base64, size and content', async () => {
    await refusal(
      { mediaFiles: [badBase64, tooBig, relabelled, video] },
      'MEDIA_TYPE_NOT_ALLOWED',
      /mediaFiles\[3\]/,
    );
  });

  test('broken base64 beats size and content', async () => {
    await refusal({ mediaFiles: [relabelled, tooBig, badBase64] }, 'MEDIA_MALFORMED', /mediaFiles\[2\]/);
  });

  test('size beats a content mismatch', async () => {
    await refusal({ mediaFiles: [relabelled, tooBig] }, 'MEDIA_TOO_LARGE', /mediaFiles\[1\]/);
  });
});
