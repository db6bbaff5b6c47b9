// Extensions (CONTRACT section 9) over a real socket: create with SIP credentials shown once and sealed at rest,
// change, rotate the password, delete; 409 EXTENSION_IN_USE and every other refusal with nothing changed;
// numbers routed to an extension or its voicemail; other organizations, scopes, the product, the portal roles.
// Uploaded voicemail greetings: any readable WAV kept as 8 kHz mono telephone audio, served back, removed; every
// refusal (not multipart, not WAV, empty, too long, too large) changes nothing.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { decodeWav, encodeWav, SAMPLE_RATE, tone } from '../src/modules/voice/audio.ts';
import { isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { uploadFile } from './helpers/upload.ts';

describe('extensions', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const org = (fields: Record<string, unknown> = {}, scopes?: string[]) =>
    sender(t, fields, { number: null, scopes });

  test('create: SIP credentials shown once, sealed at rest; defaults; a member as user', async () => {
    const acme = await org();
    const user = await createUser(t, { role: 'member', organizationIds: [acme.id] });
    const created = await api(acme, 'POST', '/extensions', {
      extension: '101',
      name: 'Reception',
      userId: user.id,
      forwardTo: '(415) 555-0100',
    });
    assert.equal(created.status, 201, created.text);
    const ext = created.body.data;
    assert.match(ext.id, /^ext_/);
    assert.equal(ext.extension, '101');
    assert.equal(ext.userId, user.id);
    assert.equal(ext.forwardTo, '+14155550100');
    assert.deepEqual(ext.voicemail, { enabled: true, greeting: null, greetingAudio: null });
    assert.equal(ext.ringSeconds, 20);
    assert.equal(ext.sip.domain, 'localhost');
    assert.match(ext.sip.username, /^101_[0-9a-f]{10}$/);
    assert.match(ext.sip.password, /^[A-Za-z0-9_-]{24}$/);

    const read = await api(acme, 'GET', `/extensions/${ext.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.data.sip.password, undefined);
    assert.equal(read.body.data.sip.username, ext.sip.username);
    const list = await api(acme, 'GET', '/extensions');
    assert.equal(list.body.pagination.total, 1);
    assert.equal(list.body.data[0].sip.password, undefined);

    const [row] = await t.ctx.db.query<{ sip_password_sealed: string }>(
      'SELECT sip_password_sealed FROM extensions WHERE id = $1',
      [ext.id],
    );
    assert.ok(!row!.sip_password_sealed.includes(ext.sip.password));
    const stored = await t.ctx.db.query('SELECT * FROM extensions WHERE id = $1', [ext.id]);
    assert.equal(t.ctx.extensions.sipPassword(stored[0] as never), ext.sip.password);
  });

  test('409 EXTENSION_IN_USE on create and change; another organization may use the same digits', async () => {
    const acme = await org();
    await api(acme, 'POST', '/extensions', { extension: '200', name: 'A' });
    const other = await api(acme, 'POST', '/extensions', { extension: '201', name: 'B' });
    const twice = await api(acme, 'POST', '/extensions', { extension: '200', name: 'C' });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.code, 'EXTENSION_IN_USE');
    const moved = await api(acme, 'PATCH', `/extensions/${other.body.data.id}`, { extension: '200' });
    assert.equal(moved.status, 409);
    assert.equal(moved.body.code, 'EXTENSION_IN_USE');
    assert.equal((await api(acme, 'GET', `/extensions/${other.body.data.id}`)).body.data.extension, '201');
    assert.equal(await countRows(t, 'SELECT 1 FROM extensions WHERE organization_id = $1', [acme.id]), 2);
    const globex = await org();
    assert.equal((await api(globex, 'POST', '/extensions', { extension: '200', name: 'A' })).status, 201);
  });

  test('refusals: 400 for every malformed field, a stranger as user, a bad forward; nothing created', async () => {
    const acme = await org();
    const stranger = await createUser(t);
    for (const body of [
      {},
      { extension: '1', name: 'x' },
      { extension: '1234567', name: 'x' },
      { extension: '10a', name: 'x' },
      { extension: 101, name: 'x' },
      { extension: '101' },
      { extension: '101', name: '' },
      { extension: '101', name: 'x', ringSeconds: 4 },
      { extension: '101', name: 'x', ringSeconds: 121 },
      { extension: '101', name: 'x', forwardTo: 'nowhere' },
      { extension: '101', name: 'x', userId: stranger.id },
      { extension: '101', name: 'x', voicemail: { greeting: 'hi' } },
      { extension: '101', name: 'x', sipPassword: 'mine' },
    ]) {
      const res = await api(acme, 'POST', '/extensions', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    assert.equal(await countRows(t, 'SELECT 1 FROM extensions WHERE organization_id = $1', [acme.id]), 0);
    const ext = (await api(acme, 'POST', '/extensions', { extension: '101', name: 'x' })).body.data;
    for (const body of [{}, { ringSeconds: 0 }, { forwardTo: 'x' }, { id: 'ext_other' }]) {
      const res = await api(acme, 'PATCH', `/extensions/${ext.id}`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
  });

  test('change, rotate the password (the old one is gone), delete', async () => {
    const acme = await org();
    const ext = (await api(acme, 'POST', '/extensions', { extension: '300', name: 'Sales' })).body.data;
    const changed = await api(acme, 'PATCH', `/extensions/${ext.id}`, {
      name: 'Sales desk',
      voicemail: { enabled: true, greeting: 'You reached sales' },
      ringSeconds: 30,
      forwardTo: null,
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.data.name, 'Sales desk');
    assert.deepEqual(changed.body.data.voicemail, {
      enabled: true,
      greeting: 'You reached sales',
      greetingAudio: null,
    });
    assert.equal(changed.body.data.ringSeconds, 30);
    assert.equal(changed.body.data.sip.password, undefined);

    const rotated = await api(acme, 'POST', `/extensions/${ext.id}/rotate-password`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.data.sip.password, ext.sip.password);
    assert.equal(rotated.body.data.sip.username, ext.sip.username);
    const [row] = await t.ctx.db.query('SELECT * FROM extensions WHERE id = $1', [ext.id]);
    assert.equal(t.ctx.extensions.sipPassword(row as never), rotated.body.data.sip.password);

    const deleted = await api(acme, 'DELETE', `/extensions/${ext.id}`);
    assert.deepEqual(deleted.body.data, { id: ext.id, deleted: true });
    assert.equal((await api(acme, 'GET', `/extensions/${ext.id}`)).status, 404);
    assert.equal((await api(acme, 'DELETE', `/extensions/${ext.id}`)).status, 404);
  });

  test("a number routes to an extension or its voicemail; deleting the extension clears the number's route", async () => {
    const acme = await org();
    const ext = (await api(acme, 'POST', '/extensions', { extension: '400', name: 'Front' })).body.data;
    const found = await api(acme, 'GET', '/numbers/available?areaCode=512&limit=1');
    const number = (await api(acme, 'POST', '/numbers', { number: found.body.data[0].number })).body.data;
    for (const type of ['extension', 'voicemail']) {
      const routed = await api(acme, 'PATCH', `/numbers/${number.id}`, {
        voiceRoute: { type, target: ext.id },
      });
      assert.equal(routed.status, 200, routed.text);
      assert.deepEqual(routed.body.data.voiceRoute, { type, target: ext.id });
    }
    // Another organization's extension is not a target.
    const globex = await org();
    const theirs = (await api(globex, 'POST', '/extensions', { extension: '400', name: 'X' })).body.data;
    const foreign = await api(acme, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'extension', target: theirs.id },
    });
    assert.equal(foreign.status, 400);

    await api(acme, 'DELETE', `/extensions/${ext.id}`);
    assert.equal((await api(acme, 'GET', `/numbers/${number.id}`)).body.data.voiceRoute, null);
  });

  /** A WAV of `samples` per channel at `rate` (stereo: the second channel an octave of silence). */
  function wavAt(samples: Int16Array, rate: number, channels = 1): Buffer {
    const interleaved = new Int16Array(samples.length * channels);
    for (let i = 0; i < samples.length; i++) interleaved[i * channels] = samples[i]!;
    const wav = encodeWav(interleaved);
    wav.writeUInt16LE(channels, 22);
    wav.writeUInt32LE(rate, 24);
    wav.writeUInt32LE(rate * 2 * channels, 28);
    wav.writeUInt16LE(2 * channels, 32);
    return wav;
  }

  const uploadGreeting = (who: Sender, id: string, file: Uint8Array, field = 'file') =>
    uploadFile(`${t.url}/api/v2/extensions/${id}/voicemail-greeting`, who.key, file, {
      method: 'PUT',
      field,
      type: 'audio/wav',
      name: 'greeting.wav',
    });

  const greetingAudio = (who: Sender, id: string, headers: Record<string, string> = {}) =>
    fetch(`${t.url}/api/v2/extensions/${id}/voicemail-greeting`, {
      headers: { 'x-api-key': who.key, ...headers },
    });

  test('an uploaded greeting: any readable WAV becomes 8 kHz mono, is served back with ranges, and is removed', async () => {
    const acme = await org();
    const ext = (await api(acme, 'POST', '/extensions', { extension: '610', name: 'Sales' })).body.data;
    assert.equal((await greetingAudio(acme, ext.id)).status, 404, 'no greeting yet');

    // Three seconds of a 440 Hz tone, recorded at 16 kHz in stereo (the second channel silent).
    const source = new Int16Array(3 * 16000);
    for (let i = 0; i < source.length; i++)
      source[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16000));
    const uploaded = await uploadGreeting(acme, ext.id, wavAt(source, 16000, 2));
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    const { greetingAudio: meta } = uploaded.body.data.voicemail;
    assert.equal(meta.durationSeconds, 3);
    assert.ok(Date.parse(meta.uploadedAt) > 0);
    assert.deepEqual(
      (await api(acme, 'GET', `/extensions/${ext.id}`)).body.data.voicemail.greetingAudio,
      meta,
    );

    const served = await greetingAudio(acme, ext.id);
    assert.equal(served.status, 200);
    assert.equal(served.headers.get('content-type'), 'audio/wav');
    const bytes = Buffer.from(await served.arrayBuffer());
    const wav = decodeWav(bytes);
    assert.equal(wav.sampleRate, SAMPLE_RATE);
    assert.equal(wav.channels, 1);
    assert.equal(wav.samples.length, 3 * SAMPLE_RATE);
    // Stereo mixed (the tone at half its level), then resampled: the pitch stays 440 Hz.
    let crossings = 0;
    for (let i = 1; i < wav.samples.length; i++)
      if (wav.samples[i - 1]! < 0 !== wav.samples[i]! < 0) crossings++;
    assert.ok(Math.abs(crossings / 3 / 2 - 440) < 5, `${crossings / 6} Hz`);
    assert.ok(Math.max(...wav.samples) > 3500 && Math.max(...wav.samples) < 4500);
    const ranged = await greetingAudio(acme, ext.id, { range: 'bytes=0-43' });
    assert.equal(ranged.status, 206);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), bytes.subarray(0, 44));

    // Another upload replaces it.
    const replaced = await uploadGreeting(acme, ext.id, wavAt(tone(1.5), SAMPLE_RATE));
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.data.voicemail.greetingAudio.durationSeconds, 2);
    assert.equal(
      decodeWav(Buffer.from(await (await greetingAudio(acme, ext.id)).arrayBuffer())).samples.length,
      12000,
    );

    const removed = await api(acme, 'DELETE', `/extensions/${ext.id}/voicemail-greeting`);
    assert.equal(removed.status, 200);
    assert.equal(removed.body.data.voicemail.greetingAudio, null);
    assert.equal((await greetingAudio(acme, ext.id)).status, 404);
    const again = await api(acme, 'DELETE', `/extensions/${ext.id}/voicemail-greeting`);
    assert.equal(again.status, 404);
    assert.equal(again.body.error, 'Voicemail greeting not found');

    // Deleting the extension deletes its greeting.
    await uploadGreeting(acme, ext.id, wavAt(tone(1), SAMPLE_RATE));
    assert.equal((await api(acme, 'DELETE', `/extensions/${ext.id}`)).status, 200);
    assert.equal(
      await countRows(t, 'SELECT 1 FROM voicemail_greetings WHERE extension_id = $1', [ext.id]),
      0,
    );
  });

  test('greeting refusals: not multipart, no file, not WAV, empty, too long, too large; the greeting stays', async () => {
    const acme = await org();
    const ext = (await api(acme, 'POST', '/extensions', { extension: '620', name: 'Support' })).body.data;
    const kept = await uploadGreeting(acme, ext.id, wavAt(tone(1), SAMPLE_RATE));
    assert.equal(kept.status, 200);
    const before = Buffer.from(await (await greetingAudio(acme, ext.id)).arrayBuffer());

    const refusals: [string, { status: number; body: any }, number, RegExp][] = [
      [
        'JSON body',
        await api(acme, 'PUT', `/extensions/${ext.id}/voicemail-greeting`, { file: 'x' }),
        400,
        /multipart field "file"/,
      ],
      [
        'another field',
        await uploadGreeting(acme, ext.id, wavAt(tone(1), SAMPLE_RATE), 'audio'),
        400,
        /multipart field "file"/,
      ],
      [
        'an MP3',
        await uploadGreeting(acme, ext.id, Buffer.from('ID3\u0004\u0000 not a wav')),
        400,
        /must be a WAV file: Not a WAV/,
      ],
      [
        'ADPCM',
        await uploadGreeting(
          acme,
          ext.id,
          (() => {
            const w = wavAt(tone(1), SAMPLE_RATE);
            w.writeUInt16LE(2, 20);
            return w;
          })(),
        ),
        400,
        /format 2 .*not supported/,
      ],
      [
        'no samples',
        await uploadGreeting(acme, ext.id, wavAt(new Int16Array(0), SAMPLE_RATE)),
        400,
        /holds no audio/,
      ],
      [
        'three minutes',
        await uploadGreeting(acme, ext.id, wavAt(new Int16Array(180 * SAMPLE_RATE), SAMPLE_RATE)),
        400,
        /lasts 180 seconds; .* at most 120/,
      ],
    ];
    for (const [what, res, status, message] of refusals) {
      assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.success, false);
      assert.match(res.body.error, message, what);
      assert.equal(res.body.code, 'INVALID_AUDIO', what);
    }
    // Past 25 MB: refused as the file streams in (a declared length well above the limit is refused before).
    const huge = await uploadGreeting(acme, ext.id, new Uint8Array(25 * 1024 * 1024 + 1));
    assert.equal(huge.status, 413, JSON.stringify(huge.body));
    const declared = await new Promise<number | undefined>((resolve, reject) => {
      const request = httpRequest(`${t.url}/api/v2/extensions/${ext.id}/voicemail-greeting`, {
        method: 'PUT',
        headers: {
          'x-api-key': acme.key,
          'content-type': 'multipart/form-data; boundary=x',
          'content-length': String(26 * 1024 * 1024),
        },
      });
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode);
        request.destroy();
      });
      request.on('error', reject);
      request.flushHeaders();
    });
    assert.equal(declared, 413, 'refused before a byte of the body is read');

    const after = await greetingAudio(acme, ext.id);
    assert.deepEqual(Buffer.from(await after.arrayBuffer()), before, 'the greeting is the one kept');
    const row = (await api(acme, 'GET', `/extensions/${ext.id}`)).body.data;
    assert.equal(row.voicemail.greetingAudio.durationSeconds, 1);

    // Another organization's extension, a read-only key, the portal roles.
    const globex = await org();
    assert.equal((await uploadGreeting(globex, ext.id, wavAt(tone(1), SAMPLE_RATE))).status, 404);
    assert.equal((await greetingAudio(globex, ext.id)).status, 404);
    assert.equal((await api(globex, 'DELETE', `/extensions/${ext.id}/voicemail-greeting`)).status, 404);
    const reader = await org({}, ['extensions:read']);
    const readOnly = await uploadGreeting(reader, ext.id, wavAt(tone(1), SAMPLE_RATE));
    assert.equal(readOnly.status, 403);
    assert.equal(readOnly.body.code, 'insufficient_scope');
    assert.equal(
      await countRows(t, 'SELECT 1 FROM voicemail_greetings WHERE organization_id = $1', [acme.id]),
      1,
    );
  });

  test('other organizations 404; scopes; the voice product; portal members read, owners change', async () => {
    const acme = await org();
    const ext = (await api(acme, 'POST', '/extensions', { extension: '500', name: 'A' })).body.data;
    const globex = await org();
    for (const [method, path, body] of [
      ['GET', `/extensions/${ext.id}`, undefined],
      ['PATCH', `/extensions/${ext.id}`, { name: 'Mine' }],
      ['POST', `/extensions/${ext.id}/rotate-password`, undefined],
      ['DELETE', `/extensions/${ext.id}`, undefined],
    ] as const) {
      const res = await api(globex, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
    }
    assert.equal((await api(acme, 'GET', `/extensions/${ext.id}`)).body.data.name, 'A');

    const reader = await org({}, ['extensions:read']);
    const refused = await api(reader, 'POST', '/extensions', { extension: '10', name: 'x' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
    assert.equal((await api(reader, 'GET', '/extensions')).status, 200);

    const noVoice = await org({ products: ['messaging'] });
    const gated = await api(noVoice, 'GET', '/extensions');
    assert.equal(gated.status, 402);
    assert.deepEqual(gated.body.data, { product: 'voice' });

    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [acme.id] }));
    const admin = await signIn(t, await createUser(t, { role: 'admin', organizationIds: [acme.id] }));
    assert.equal((await t.request('GET', '/v2/portal/extensions', { token: member })).status, 200);
    const memberCreates = await t.request('POST', '/v2/portal/extensions', {
      token: member,
      body: { extension: '501', name: 'B' },
    });
    assert.equal(memberCreates.status, 403);
    assert.ok(isShapeA(memberCreates.body));
    const adminCreates = await t.request('POST', '/v2/portal/extensions', {
      token: admin,
      body: { extension: '501', name: 'B' },
    });
    assert.equal(adminCreates.status, 201, adminCreates.text);
    assert.ok(adminCreates.body.data.sip.password);
  });
});
