// POST /api/v2/messages/send and /messages/segments over a real socket: the 202 answer, recipient and sender
// validation, merge variables, opted-out recipients, GSM-7 rules, every media code with real and
// relabelled bytes, idempotency, and scope.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { base64, GIF_1X1, JPEG_1X1, PNG_1X1, WEBP_1X1 } from './fixtures/media-files.ts';
import { isShapeB, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, messagesOf, type Sender, send, sender } from './helpers/messaging.ts';

describe('messages/send', () => {
  let t: TestApp;
  let acme: Sender;
  before(async () => {
    t = await startTestApp();
    acme = await sender(t);
  });
  after(() => t.close());

  // The 30 sends per minute request limit is not what these tests are about: a minute passes between tests.
  const nextMinute = () => t.ctx.clock.advance(61);

  test('a send answers 202 with exactly the contract fields, and the message can be read', async () => {
    nextMinute();
    const to = freshNumber();
    const res = await send(t, acme, { to, message: 'Hello from Acme' });
    assert.equal(res.status, 202, res.text);
    const data = res.body.data;
    assert.deepEqual(Object.keys(data).sort(), [
      'body',
      'createdAt',
      'encoding',
      'from',
      'id',
      'mediaCount',
      'segments',
      'status',
      'to',
    ]);
    assert.match(data.id, /^msg_/);
    assert.equal(data.status, 'queued');
    assert.equal(data.from, acme.number);
    assert.equal(data.to, to);
    assert.equal(data.body, 'Hello from Acme');
    assert.equal(data.segments, 1);
    assert.equal(data.encoding, 'GSM-7');
    assert.equal(data.mediaCount, 0);
    const read = await t.request('GET', `/api/v2/messages/${data.id}`, { apiKey: acme.key });
    assert.equal(read.status, 200);
    assert.equal(read.body.data.status, 'queued');
    assert.equal(read.body.data.direction, 'outbound');
  });

  test('to is read in the organization region; an invalid number is 400 and nothing is stored', async () => {
    nextMinute();
    const national = await send(t, acme, { to: '(202) 555-0142', message: 'hi' });
    assert.equal(national.status, 202);
    assert.equal(national.body.data.to, '+12025550142');
    const before = await messagesOf(t, acme.id);
    for (const to of ['12', 'not a number', '+1202555', '']) {
      const res = await send(t, acme, { to, message: 'hi' });
      assert.equal(res.status, 400, `${to}: ${res.text}`);
      assert.ok(isShapeB(res.body));
    }
    assert.equal(await messagesOf(t, acme.id), before);
  });

  test('from must be one of our numbers; the default is used otherwise; no number at all is a clear 400', async () => {
    nextMinute();
    const second = freshNumber('800');
    assert.equal(
      (await t.admin('POST', `/organizations/${acme.id}/numbers`, { number: second, type: 'toll_free' }))
        .status,
      201,
    );
    const chosen = await send(t, acme, { to: freshNumber(), message: 'hi', from: second });
    assert.equal(chosen.status, 202);
    assert.equal(chosen.body.data.from, second);
    const byDefault = await send(t, acme, { to: freshNumber(), message: 'hi' });
    assert.equal(byDefault.body.data.from, acme.number);
    const foreign = await send(t, acme, { to: freshNumber(), message: 'hi', from: '+12025550000' });
    assert.equal(foreign.status, 400);
    assert.match(foreign.body.error, /from must be one of/);

    const numberless = await sender(t, {}, { number: null });
    const none = await send(t, numberless, { to: freshNumber(), message: 'hi' });
    assert.equal(none.status, 400);
    assert.match(none.body.error, /no phone number to send from/);
  });

  test('text or media is required', async () => {
    nextMinute();
    for (const body of [{ to: freshNumber() }, { to: freshNumber(), message: '   ' }]) {
      const res = await send(t, acme, body);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /needs text/);
    }
  });

  test('unsupported merge variables are a 422 naming each offender; supported ones render from the contact', async () => {
    nextMinute();
    const to = freshNumber();
    const bad = await send(t, acme, {
      to,
      message: 'Hi {{first_name}}, {{coupon}} {{ First_Name }} {{coupon}}',
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, 'UNSUPPORTED_MERGE_VARS');
    assert.match(bad.body.error, /\{\{coupon\}\}, \{\{First_Name\}\}/);

    await t.request('POST', '/api/v2/contacts', { apiKey: acme.key, body: { phone: to, firstName: 'Zoë' } });
    const good = await send(t, acme, { to, message: 'Hi {{first_name}}, from {{company|us}}' });
    assert.equal(good.status, 202);
    assert.equal(good.body.data.body, 'Hi Zoë, from us');
    // ë is not GSM-7: this recipient's rendered text goes as UCS-2.
    assert.equal(good.body.data.encoding, 'UCS-2');
    const stranger = await send(t, acme, { to: freshNumber(), message: 'Hi {{first_name|there}}' });
    assert.equal(stranger.body.data.body, 'Hi there');
  });

  test('an opted-out recipient is refused with 403 RECIPIENT_OPTED_OUT and nothing is counted', async () => {
    nextMinute();
    const to = freshNumber();
    const contact = await t.request('POST', '/api/v2/contacts', { apiKey: acme.key, body: { phone: to } });
    await t.request('POST', `/api/v2/contacts/${contact.body.data.id}/opt-out`, { apiKey: acme.key });
    const usage = () =>
      t.ctx.db.query<{ s: number }>(
        'SELECT coalesce(sum(segments), 0)::int AS s FROM send_usage WHERE organization_id = $1',
        [acme.id],
      );
    const counted = await usage();
    const res = await send(t, acme, { to, message: 'hi' });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'RECIPIENT_OPTED_OUT');
    assert.ok(isShapeB(res.body));
    assert.deepEqual(await usage(), counted);
    assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE to_number = $1', [to]), 0);
  });

  test('GSM-7: accented letters of the alphabet stay GSM-7; each extension character costs two septets', async () => {
    nextMinute();
    const accented = await send(t, acme, {
      to: freshNumber(),
      message: 'Café à Sao? No: Ça, Ñandu, Østerå, ÄÖÜäöüß, è ù ì ò É Æ æ',
    });
    assert.equal(accented.body.data.encoding, 'GSM-7');
    for (const character of ['€', '^', '{', '}', '[', ']', '~', '|', '\\']) {
      const seg = (message: string) =>
        t.request('POST', '/api/v2/messages/segments', { apiKey: acme.key, body: { message } });
      const fits = await seg(character.repeat(80)); // 160 septets: one segment
      assert.deepEqual(fits.body.data, { segments: 1, encoding: 'GSM-7', characters: 80 }, character);
      const spills = await seg(`${character.repeat(80)}a`); // 161 septets: two
      assert.equal(spills.body.data.segments, 2, character);
      const mixed = await seg(`${'a'.repeat(158)}${character}`); // 160 septets
      assert.equal(mixed.body.data.segments, 1, character);
    }
    const sent = await send(t, acme, { to: freshNumber(), message: '€'.repeat(81) });
    assert.equal(sent.body.data.segments, 2);
    assert.equal(sent.body.data.encoding, 'GSM-7');
    const unicode = await send(t, acme, { to: freshNumber(), message: 'ç'.repeat(71) });
    assert.deepEqual([unicode.body.data.encoding, unicode.body.data.segments], ['UCS-2', 2]);
  });

  describe('media through the send route', () => {
    const jpeg = { contentType: 'image/jpeg', data: base64(JPEG_1X1), filename: 'a.jpg' };
    const png = { contentType: 'image/png', data: base64(PNG_1X1) };
    const gif = { contentType: 'image/gif', data: base64(GIF_1X1) };

    test('real JPEG, PNG and GIF with a URL: 202, an MMS of 3 segments, bytes stored exactly', async () => {
      nextMinute();
      const res = await send(t, acme, {
        to: freshNumber(),
        message: 'Look',
        media: ['https://cdn.example.com/cat.png'],
        mediaFiles: [jpeg, png, gif],
      });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.data.mediaCount, 4);
      assert.equal(res.body.data.segments, 3);
      const stored = await t.ctx.db.query<{
        content_type: string;
        bytes: Uint8Array;
        filename: string | null;
      }>('SELECT content_type, bytes, filename FROM message_media WHERE message_id = $1 ORDER BY position', [
        res.body.data.id,
      ]);
      assert.deepEqual(
        stored.map((row) => [
          row.content_type,
          Buffer.from(row.bytes).equals(
            Buffer.from(
              row.content_type === 'image/jpeg'
                ? JPEG_1X1
                : row.content_type === 'image/png'
                  ? PNG_1X1
                  : GIF_1X1,
            ),
          ),
        ]),
        [
          ['image/jpeg', true],
          ['image/png', true],
          ['image/gif', true],
        ],
      );
      assert.equal(stored[0]!.filename, 'a.jpg');
      const read = await t.request('GET', `/api/v2/messages/${res.body.data.id}`, { apiKey: acme.key });
      assert.deepEqual(read.body.data.media.urls, ['https://cdn.example.com/cat.png']);
      assert.equal(read.body.data.media.files.length, 3);
    });

    const cases: [string, Record<string, unknown>, string][] = [
      ['eleven parts', { mediaFiles: Array(11).fill(png) }, 'TOO_MANY_MEDIA'],
      [
        'six URLs and five files',
        { media: Array(6).fill('https://x.example/a.png'), mediaFiles: Array(5).fill(gif) },
        'TOO_MANY_MEDIA',
      ],
      [
        'a 3,500,001-byte upload',
        {
          mediaFiles: [
            {
              contentType: 'image/png',
              data: Buffer.concat([Buffer.from(PNG_1X1), Buffer.alloc(3_500_001 - PNG_1X1.length)]).toString(
                'base64',
              ),
            },
          ],
        },
        'MEDIA_TOO_LARGE',
      ],
      [
        'two uploads over 3,500,000 together',
        {
          mediaFiles: [0, 1].map(() => ({
            contentType: 'image/png',
            data: Buffer.concat([Buffer.from(PNG_1X1), Buffer.alloc(1_800_000)]).toString('base64'),
          })),
        },
        'MEDIA_TOO_LARGE',
      ],
      [
        'image/webp',
        { mediaFiles: [{ contentType: 'image/webp', data: base64(WEBP_1X1) }] },
        'MEDIA_TYPE_NOT_ALLOWED',
      ],
      [
        'video/mp4',
        { mediaFiles: [{ contentType: 'video/mp4', data: base64(PNG_1X1) }] },
        'MEDIA_TYPE_NOT_ALLOWED',
      ],
      [
        'PNG bytes labelled JPEG',
        { mediaFiles: [{ contentType: 'image/jpeg', data: base64(PNG_1X1) }] },
        'MEDIA_TYPE_MISMATCH',
      ],
      [
        'GIF bytes labelled PNG',
        { mediaFiles: [{ contentType: 'image/png', data: base64(GIF_1X1) }] },
        'MEDIA_TYPE_MISMATCH',
      ],
      [
        'JPEG bytes labelled GIF',
        { mediaFiles: [{ contentType: 'image/gif', data: base64(JPEG_1X1) }] },
        'MEDIA_TYPE_MISMATCH',
      ],
      ['empty data', { mediaFiles: [{ contentType: 'image/png', data: '' }] }, 'MEDIA_MALFORMED'],
      [
        'invalid base64',
        { mediaFiles: [{ contentType: 'image/png', data: 'not base64!' }] },
        'MEDIA_MALFORMED',
      ],
      ['an entry that is a string', { mediaFiles: ['abc'] }, 'MEDIA_MALFORMED'],
      ['mediaFiles not an array', { mediaFiles: { contentType: 'image/png' } }, 'MEDIA_MALFORMED'],
    ];
    for (const [name, media, code] of cases) {
      test(`${name}: 400 ${code}, nothing stored`, async () => {
        nextMinute();
        const to = freshNumber();
        const res = await send(t, acme, { to, message: 'pic', ...media });
        assert.equal(res.status, 400, res.text.slice(0, 300));
        assert.equal(res.body.code, code);
        assert.ok(isShapeB(res.body));
        assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE to_number = $1', [to]), 0);
      });
    }
  });

  test('Idempotency-Key: same key and body gives the same answer and one message; another body is 422', async () => {
    nextMinute();
    const to = freshNumber();
    const headers = { 'idempotency-key': 'order-1234' };
    const first = await send(t, acme, { to, message: 'Your order shipped' }, headers);
    assert.equal(first.status, 202);
    const again = await send(t, acme, { message: 'Your order shipped', to }, headers);
    assert.equal(again.status, 202);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE to_number = $1', [to]), 1);

    const other = await send(t, acme, { to, message: 'Something else' }, headers);
    assert.equal(other.status, 422);
    assert.equal(other.body.code, 'IDEMPOTENCY_KEY_REUSED');

    // Concurrent twins: still one message.
    const twinTo = freshNumber();
    const twins = await Promise.all(
      [1, 2, 3].map(() => send(t, acme, { to: twinTo, message: 'once' }, { 'idempotency-key': 'twin' })),
    );
    assert.deepEqual(
      twins.map((r) => r.status),
      [202, 202, 202],
    );
    assert.equal(new Set(twins.map((r) => r.body.data.id)).size, 1);
    assert.equal(await countRows(t, 'SELECT 1 FROM messages WHERE to_number = $1', [twinTo]), 1);

    // After 24 hours the key is free again: a new message.
    t.ctx.clock.advance(24 * 3600 + 1);
    const later = await send(t, acme, { to, message: 'Your order shipped' }, headers);
    assert.equal(later.status, 202);
    assert.notEqual(later.body.data.id, first.body.data.id);

    // Keys are per organization.
    const other2 = await sender(t);
    const theirs = await send(t, other2, { to, message: 'Your order shipped' }, headers);
    assert.equal(theirs.status, 202);
    assert.notEqual(theirs.body.data.id, first.body.data.id);
  });

  test('scopes: messages:send to send, messages:read to read', async () => {
    nextMinute();
    const reader = await sender(t, {}, { scopes: ['messages:read'] });
    const refused = await send(t, reader, { to: freshNumber(), message: 'hi' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    const writer = await sender(t, {}, { scopes: ['messages:send'] });
    const sent = await send(t, writer, { to: freshNumber(), message: 'hi' });
    assert.equal(sent.status, 202);
    const list = await t.request('GET', '/api/v2/messages', { apiKey: writer.key });
    assert.equal(list.status, 403);
  });

  test('counting segments needs messages:send but does not use up the 30 sends per minute', async () => {
    const { alignClock } = await import('./helpers/portal.ts');
    const org = await sender(t);
    await alignClock(t, 60);
    for (let i = 0; i < 35; i++) {
      const count = await t.request('POST', '/api/v2/messages/segments', {
        apiKey: org.key,
        body: { message: 'hi' },
      });
      assert.equal(count.status, 200);
    }
    assert.equal((await send(t, org, { to: freshNumber(), message: 'still allowed' })).status, 202);
  });
});
