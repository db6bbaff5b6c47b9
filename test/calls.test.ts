// Calls (CONTRACT section 9) over a real socket on the simulated PBX, driven step by step by the operator's
// test controls: click-to-call, inbound by the number's route (extension, forward, voicemail box), internal
// calls, every outcome and hang-up; the record and its events; region capacity (409 VOICE_REGION_UNAVAILABLE
// with Retry-After, busy inbound with a failed record, places freed on the end and, after a crash, by the
// lease); keyset paging under inserts; every refusal with nothing changed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeWav } from '../src/modules/voice/audio.ts';
import { assertRefusedA, isShapeA, startTestApp, type TestApp } from './helpers/app.ts';
import { countRows, freshNumber, type Sender, sender } from './helpers/messaging.ts';
import { createUser, signIn } from './helpers/portal.ts';

describe('calls', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });
  const drive = (callId: string, event: string) => t.admin('POST', `/test/pbx/calls/${callId}`, { event });
  const inbound = (body: Record<string, unknown>) => t.admin('POST', '/test/pbx/inbound', body);
  const eventsOf = async (callId: string) =>
    (
      await t.ctx.db.query<{ type: string; data: { id: string; status: string } }>(
        `SELECT type, data FROM events WHERE data->>'id' = $1 OR data->>'callId' = $1 ORDER BY created_at, id`,
        [callId],
      )
    ).map((row) => `${row.type}:${row.data.status ?? ''}`);

  /** An organization with a number, an extension (ringing 20 s, voicemail on) and the number routed to it. */
  async function office(fields: Record<string, unknown> = {}, extension: Record<string, unknown> = {}) {
    const who = await sender(t, fields);
    const ext = await api(who, 'POST', '/extensions', { extension: '101', name: 'Reception', ...extension });
    assert.equal(ext.status, 201, ext.text);
    const [number] = (await api(who, 'GET', '/numbers')).body.data;
    const routed = await api(who, 'PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'extension', target: ext.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    return { who, extension: ext.body.data, numberId: number.id as string };
  }

  test('click-to-call, step by step: the extension rings, then the callee; recorded; every event', async () => {
    const { who, extension } = await office();
    const placed = await api(who, 'POST', '/calls', {
      from: who.number,
      to: '(415) 555-0123',
      extensionId: extension.id,
      record: true,
    });
    assert.equal(placed.status, 202, placed.text);
    const call = placed.body.data;
    assert.match(call.id, /^call_/);
    assert.deepEqual(
      { ...call, id: undefined, startedAt: undefined },
      {
        id: undefined,
        direction: 'outbound',
        from: who.number,
        to: '+14155550123',
        status: 'queued',
        startedAt: undefined,
        answeredAt: null,
        endedAt: null,
        durationSeconds: 0,
        hangupCause: null,
        extensionId: extension.id,
        agentId: null,
        recordingId: null,
        voicemailId: null,
        transferredTo: null,
        transferredAt: null,
      },
    );

    assert.equal((await drive(call.id, 'ringing')).body.data.status, 'ringing');
    // The extension answered: the callee is dialled, the call still rings.
    assert.equal((await drive(call.id, 'answered')).body.data.status, 'ringing');
    assert.equal((await drive(call.id, 'ringing')).body.data.status, 'ringing');
    const answered = (await drive(call.id, 'answered')).body.data;
    assert.equal(answered.status, 'in_progress');
    assert.ok(answered.answeredAt);
    t.ctx.clock.advance(42);
    const ended = (await drive(call.id, 'completed')).body.data;
    assert.equal(ended.status, 'completed');
    assert.equal(ended.hangupCause, 'normal_clearing');
    assert.ok(ended.durationSeconds >= 42 && ended.durationSeconds <= 44, String(ended.durationSeconds));
    assert.match(ended.recordingId, /^rec_/);
    assert.deepEqual((await api(who, 'GET', `/calls/${call.id}`)).body.data, ended);

    const recording = (await api(who, 'GET', `/recordings/${ended.recordingId}`)).body.data;
    assert.equal(recording.callId, call.id);
    assert.ok(recording.durationSeconds >= 42);
    assert.equal(recording.voice, 'tone'); // the callee said nothing the simulator could speak
    const audio = await fetch(`${t.url}/api/v2/recordings/${ended.recordingId}/audio`, {
      headers: { 'x-api-key': who.key },
    });
    assert.equal(audio.status, 200);
    assert.equal(audio.headers.get('content-type'), 'audio/wav');
    assert.equal(audio.headers.get('accept-ranges'), 'bytes');
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    assert.equal(wav.sampleRate, 8000);
    assert.equal(wav.channels, 1);
    assert.equal(wav.bitsPerSample, 16);
    assert.equal(wav.samples.length, recording.durationSeconds * 8000);

    assert.deepEqual(await eventsOf(call.id), [
      'call.ringing:ringing',
      'call.answered:in_progress',
      'recording.completed:',
      'call.completed:completed',
    ]);
  });

  test('every outcome of a leg: busy, no answer, failure, the caller giving up while it rings', async () => {
    const { who } = await office();
    for (const [event, status, cause] of [
      ['busy', 'busy', 'busy'],
      ['no_answer', 'no_answer', 'ring_timeout'],
      ['failed', 'failed', 'failed'],
      ['completed', 'canceled', 'caller_hangup'],
    ]) {
      const call = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550124' })).body.data;
      await drive(call.id, 'ringing');
      const ended = (await drive(call.id, event!)).body.data;
      assert.equal(ended.status, status, event);
      assert.equal(ended.hangupCause, cause, event);
      assert.equal(ended.answeredAt, null);
      assert.equal(ended.durationSeconds, 0);
      assert.ok(ended.endedAt);
      assert.deepEqual((await eventsOf(call.id)).at(-1), `call.completed:${status}`);
      // An ended call takes no more events.
      const late = await drive(call.id, 'answered');
      assert.equal(late.status, 409);
      assert.equal(late.body.code, 'CALL_NOT_ACTIVE');
      assert.ok(isShapeA(late.body));
    }
  });

  test('hang-up: canceled while ringing, completed once answered, an ended call answered as it is', async () => {
    const { who } = await office();
    const ringing = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550125' })).body.data;
    await drive(ringing.id, 'ringing');
    const canceled = await api(who, 'POST', `/calls/${ringing.id}/hangup`);
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.data.status, 'canceled');
    assert.equal(canceled.body.data.hangupCause, 'hangup_requested');

    const talking = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550126' })).body.data;
    await drive(talking.id, 'answered');
    const done = await api(who, 'POST', `/calls/${talking.id}/hangup`);
    assert.equal(done.body.data.status, 'completed');
    assert.equal(done.body.data.hangupCause, 'hangup_requested');
    const again = await api(who, 'POST', `/calls/${talking.id}/hangup`);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.data, done.body.data);
    assert.equal((await drive(talking.id, 'completed')).status, 409);
  });

  test('inbound to an extension nobody answers: voicemail with speech, a valid WAV, read, deleted', async () => {
    const { who, extension } = await office();
    const arrived = await inbound({
      from: '+14155550199',
      to: who.number,
      outcome: 'no_answer',
      voicemailText: 'Hello, this is Sam. Please call me back tomorrow.',
    });
    assert.equal(arrived.status, 201, arrived.text);
    const call = arrived.body.data;
    assert.equal(call.direction, 'inbound');
    assert.equal(call.status, 'completed');
    assert.equal(call.extensionId, extension.id);
    assert.match(call.voicemailId, /^vm_/);
    assert.ok(call.answeredAt, 'the voicemail box answered');
    assert.deepEqual(await eventsOf(call.id), [
      'call.ringing:ringing',
      'call.answered:in_progress',
      'voicemail.created:',
      'call.completed:completed',
    ]);

    const list = await api(who, 'GET', '/voicemails');
    assert.equal(list.body.pagination.total, 1);
    const voicemail = list.body.data[0];
    assert.equal(voicemail.id, call.voicemailId);
    assert.equal(voicemail.callId, call.id);
    assert.equal(voicemail.extensionId, extension.id);
    assert.equal(voicemail.from, '+14155550199');
    assert.equal(voicemail.read, false);
    assert.ok(['espeak-ng', 'tone'].includes(voicemail.voice));
    const audio = await fetch(`${t.url}/api/v2/voicemails/${voicemail.id}/audio`, {
      headers: { 'x-api-key': who.key },
    });
    const bytes = Buffer.from(await audio.arrayBuffer());
    assert.equal(audio.status, 200, bytes.toString().slice(0, 300));
    const wav = decodeWav(bytes);
    assert.equal(wav.sampleRate, 8000);
    assert.equal(Math.ceil(wav.samples.length / 8000), voicemail.durationSeconds);
    assert.ok(
      wav.samples.some((sample) => Math.abs(sample) > 1000),
      'not silence',
    );
    // A player seeking: bytes 44 on are the samples.
    const ranged = await fetch(`${t.url}/api/v2/voicemails/${voicemail.id}/audio`, {
      headers: { 'x-api-key': who.key, range: 'bytes=44-1043' },
    });
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-range'), `bytes 44-1043/${bytes.length}`);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), bytes.subarray(44, 1044));
    const beyond = await t.request('GET', `/api/v2/voicemails/${voicemail.id}/audio`, {
      apiKey: who.key,
      headers: { range: `bytes=${bytes.length}-` },
    });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers.get('content-range'), `bytes */${bytes.length}`);

    const read = await api(who, 'PATCH', `/voicemails/${voicemail.id}`, { read: true });
    assert.equal(read.body.data.read, true);
    assert.equal((await api(who, 'PATCH', `/voicemails/${voicemail.id}`, { read: 'yes' })).status, 400);
    assert.equal((await api(who, 'DELETE', `/voicemails/${voicemail.id}`)).status, 200);
    assert.equal((await api(who, 'GET', `/voicemails/${voicemail.id}`)).status, 404);
    assert.equal((await api(who, 'GET', `/voicemails/${voicemail.id}/audio`)).status, 404);
    assert.equal((await api(who, 'GET', `/calls/${call.id}`)).body.data.voicemailId, null);
  });

  test('inbound, step by step: rings the extension, then its forward, then voicemail', async () => {
    const { who, extension } = await office({}, { forwardTo: '+14155550177' });
    const arrived = await inbound({ from: '+14155550198', to: who.number, voicemailText: 'Call me.' });
    assert.equal(arrived.status, 201, arrived.text);
    const call = arrived.body.data;
    assert.equal(call.status, 'queued');
    assert.equal(call.extensionId, extension.id);
    assert.equal((await drive(call.id, 'ringing')).body.data.status, 'ringing');
    // Nobody at the extension: the forward number rings.
    assert.equal((await drive(call.id, 'no_answer')).body.data.status, 'ringing');
    // Busy there: the voicemail box answers.
    const box = (await drive(call.id, 'busy')).body.data;
    assert.equal(box.status, 'in_progress');
    const left = (await drive(call.id, 'completed')).body.data;
    assert.equal(left.status, 'completed');
    assert.match(left.voicemailId, /^vm_/);
  });

  test('inbound answered plays through with its talk time; forward and voicemail routes; no route', async () => {
    const { who, numberId } = await office();
    const answered = (
      await inbound({ from: '+14155550197', to: who.number, outcome: 'answered', durationSeconds: 95 })
    ).body.data;
    assert.equal(answered.status, 'completed');
    assert.equal(answered.durationSeconds, 95);
    assert.equal(answered.hangupCause, 'normal_clearing');
    assert.equal(new Date(answered.endedAt).getTime() - new Date(answered.answeredAt).getTime(), 95_000);

    await api(who, 'PATCH', `/numbers/${numberId}`, {
      voiceRoute: { type: 'forward', target: '+14155550176' },
    });
    const busy = (await inbound({ from: '+14155550197', to: who.number, outcome: 'busy' })).body.data;
    assert.equal(busy.status, 'busy');
    assert.equal(busy.extensionId, null);

    await api(who, 'PATCH', `/numbers/${numberId}`, { voiceRoute: null });
    const unrouted = await inbound({ from: '+14155550197', to: who.number });
    assert.equal(unrouted.status, 201);
    assert.equal(unrouted.body.data.status, 'failed');
    assert.equal(unrouted.body.data.hangupCause, 'no_route');

    const unknown = freshNumber('202');
    const nobody = await inbound({ from: '+14155550197', to: unknown });
    assert.equal(nobody.status, 404);
    assert.equal(await countRows(t, 'SELECT 1 FROM calls WHERE to_number = $1', [unknown]), 0);
  });

  test('a suspended organization: its calls are refused (403) and calls to it fail', async () => {
    const { who } = await office();
    await t.admin('PATCH', `/organizations/${who.id}`, { suspended: true });
    const placed = await api(who, 'POST', '/calls', { from: who.number, to: '+14155550127' });
    assert.equal(placed.status, 403);
    assert.equal(placed.body.code, 'ACCOUNT_SUSPENDED');
    const arrived = (await inbound({ from: '+14155550196', to: who.number, outcome: 'answered' })).body.data;
    assert.equal(arrived.status, 'failed');
    assert.equal(arrived.hangupCause, 'account_suspended');
    assert.equal(await countRows(t, 'SELECT 1 FROM calls WHERE organization_id = $1', [who.id]), 1);
  });

  test('internal: extension to extension; the callee unanswered takes a voicemail', async () => {
    const { who, extension } = await office();
    const other = (await api(who, 'POST', '/extensions', { extension: '102', name: 'Sales' })).body.data;
    const call = (await api(who, 'POST', '/calls', { from: '101', to: '102' })).body.data;
    assert.equal(call.direction, 'internal');
    assert.equal(call.from, '101');
    assert.equal(call.to, '102');
    assert.equal(call.extensionId, extension.id);
    await drive(call.id, 'answered'); // 101 picks up
    await drive(call.id, 'ringing'); // 102 rings
    assert.equal((await drive(call.id, 'no_answer')).body.data.status, 'in_progress');
    const ended = (await drive(call.id, 'completed')).body.data;
    const voicemail = (await api(who, 'GET', `/voicemails/${ended.voicemailId}`)).body.data;
    assert.equal(voicemail.extensionId, other.id);
    assert.equal(voicemail.voice, 'tone');
  });

  test('refusals: 400 for bad parties, 404 for other organizations, 402 without voice, scopes; nothing made', async () => {
    const { who, extension } = await office();
    const stranger = await office();
    const before = await countRows(t, 'SELECT 1 FROM calls');
    for (const [body, says] of [
      [{ from: who.number, to: 'not a number' }, /to/],
      [{ from: stranger.who.number, to: '+14155550128' }, /from must be one of your numbers/],
      [{ from: '+14155550100', to: '+14155550128' }, /from must be one of your numbers/],
      [{ from: who.number, to: '+14155550128', extensionId: stranger.extension.id }, /extensionId/],
      [{ from: '101', to: '109' }, /no extension 109/],
      [{ from: '109', to: '101' }, /from/],
      [{ from: '101', to: '101' }, /itself/],
      [{ from: who.number, to: '+14155550128', record: 'yes' }, /record/],
      [{ from: who.number, to: '+14155550128', extra: 1 }, /extra|additional/i],
      [{ to: '+14155550128' }, /from/],
    ] as const) {
      const res = await api(who, 'POST', '/calls', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.success, false);
      assert.match(res.body.error, says);
    }
    assert.equal(await countRows(t, 'SELECT 1 FROM calls'), before);

    const theirs = (
      await api(stranger.who, 'POST', '/calls', { from: stranger.who.number, to: '+14155550129' })
    ).body.data;
    assert.equal((await api(who, 'GET', `/calls/${theirs.id}`)).status, 404);
    assert.equal((await api(who, 'POST', `/calls/${theirs.id}/hangup`)).status, 404);
    assert.equal((await api(stranger.who, 'GET', `/calls/${theirs.id}`)).body.data.status, 'queued');
    assert.equal(
      (await api(who, 'GET', '/calls')).body.data.some((c: { id: string }) => c.id === theirs.id),
      false,
    );
    await api(stranger.who, 'POST', `/calls/${theirs.id}/hangup`);

    const messagingOnly = await sender(t, { products: ['messaging'] });
    const unsubscribed = await api(messagingOnly, 'GET', '/calls');
    assert.equal(unsubscribed.status, 402);
    assert.equal(unsubscribed.body.code, 'SUBSCRIPTION_REQUIRED');
    assert.deepEqual(unsubscribed.body.data, { product: 'voice' });

    const reader = await t.ctx.apiKeys.create(who.id, { name: 'r', scopes: ['calls:read'] as never });
    const refused = await t.request('POST', '/api/v2/calls', {
      apiKey: reader.secret,
      body: { from: who.number, to: '+14155550128' },
    });
    assert.equal(refused.status, 403);
    assert.equal((await t.request('GET', '/api/v2/calls', { apiKey: reader.secret })).status, 200);
    assert.equal((await t.request('GET', '/api/v2/voicemails', { apiKey: reader.secret })).status, 403);
    assert.equal(extension.extension, '101');
  });

  test('test controls: unknown call 404, an event the step does not take 409', async () => {
    const { who } = await office();
    assert.equal((await drive('call_nope', 'ringing')).status, 404);
    const call = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550130' })).body.data;
    await drive(call.id, 'answered');
    const wrong = await drive(call.id, 'busy');
    assert.equal(wrong.status, 409);
    assert.match(wrong.body.message, /takes completed/);
    assert.equal((await drive(call.id, 'bogus')).status, 400);
    await drive(call.id, 'completed');
  });

  test('keyset walk over calls while new ones arrive: every call once, newest first', async () => {
    const { who } = await office();
    const placed: string[] = [];
    for (let i = 0; i < 7; i++) {
      const call = (await api(who, 'POST', '/calls', { from: who.number, to: `+1415555014${i}` })).body.data;
      placed.push(call.id);
      await drive(call.id, 'busy');
    }
    const seen: string[] = [];
    let cursor = '';
    for (let page = 0; page < 10; page++) {
      const res = await api(who, 'GET', `/calls?limit=3&cursor=${cursor}`);
      assert.equal(res.status, 200, res.text);
      seen.push(...res.body.data.map((c: { id: string }) => c.id));
      const fresh = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550150' })).body.data;
      await drive(fresh.id, 'busy');
      if (!res.body.next_cursor) break;
      cursor = res.body.next_cursor;
    }
    assert.deepEqual(seen, [...placed].reverse());
    const offset = await api(who, 'GET', '/calls?page=2&limit=5');
    assert.equal(offset.body.pagination.page, 2);
  });

  test('since: only calls created at or after it, counted, and bound into the cursor; a bad instant is 400', async () => {
    const { who } = await office();
    const before = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550161' })).body.data;
    await drive(before.id, 'busy');
    const advanced = await t.admin('POST', '/test/clock', { advanceSeconds: 3600 });
    const since = advanced.body.data.now;
    const after: string[] = [];
    for (const to of ['+14155550162', '+14155550163']) {
      const call = (await api(who, 'POST', '/calls', { from: who.number, to })).body.data;
      await drive(call.id, 'busy');
      after.unshift(call.id);
    }
    const counted = await api(who, 'GET', `/calls?since=${encodeURIComponent(since)}&limit=10&page=1`);
    assert.equal(counted.status, 200, counted.text);
    assert.equal(counted.body.pagination.total, 2);
    assert.deepEqual(
      counted.body.data.map((c: { id: string }) => c.id),
      after,
    );
    const all = await api(who, 'GET', '/calls?limit=100');
    assert.ok(all.body.data.some((c: { id: string }) => c.id === before.id));
    // A cursor from one filtering is refused by another.
    const walk = await api(who, 'GET', `/calls?since=${encodeURIComponent(since)}&limit=1&cursor=`);
    assert.ok(walk.body.next_cursor, walk.text);
    const same = await api(
      who,
      'GET',
      `/calls?since=${encodeURIComponent(since)}&limit=1&cursor=${walk.body.next_cursor}`,
    );
    assert.deepEqual(
      same.body.data.map((c: { id: string }) => c.id),
      [after[1]],
    );
    const other = await api(who, 'GET', `/calls?limit=1&cursor=${walk.body.next_cursor}`);
    assert.equal(other.status, 400, other.text);
    const bad = await api(who, 'GET', '/calls?since=yesterday');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.success, false);
  });

  test('the portal: a member places and reads calls; only owners and admins delete voicemails and recordings', async () => {
    const { who } = await office();
    const member = await signIn(t, await createUser(t, { role: 'member', organizationIds: [who.id] }));
    const placed = await t.request('POST', '/v2/portal/calls', {
      token: member,
      body: { from: who.number, to: '+14155550131' },
    });
    assert.equal(placed.status, 202, placed.text);
    assert.equal((await t.request('GET', '/v2/portal/calls', { token: member })).body.data.length, 1);
    await drive(placed.body.data.id, 'busy');

    // A recorded call and a voicemail: a member reads both and marks the voicemail read, but deletes neither;
    // owners and admins delete both (docs/auth.md "Who may do what": the same roles for all call audio).
    const recorded = (
      await api(who, 'POST', '/calls', { from: who.number, to: '+14155550132', record: true })
    ).body.data;
    await drive(recorded.id, 'answered');
    const { recordingId } = (await drive(recorded.id, 'completed')).body.data;
    const missed = await inbound({ from: '+14155550133', to: who.number, outcome: 'no_answer' });
    const { voicemailId } = missed.body.data;
    assert.match(voicemailId, /^vm_/, missed.text);
    const listed = await t.request('GET', '/v2/portal/recordings', { token: member });
    assert.deepEqual(
      listed.body.data.map((r: { id: string }) => r.id),
      [recordingId],
    );
    assert.equal(listed.body.pagination.total, 1);
    const heard = await t.request('PATCH', `/v2/portal/voicemails/${voicemailId}`, {
      token: member,
      body: { read: true },
    });
    assert.equal(heard.status, 200, heard.text);
    for (const path of [`/v2/portal/recordings/${recordingId}`, `/v2/portal/voicemails/${voicemailId}`]) {
      const refused = await t.request('DELETE', path, { token: member });
      assertRefusedA(refused, 403, 'FORBIDDEN');
    }
    assert.equal((await api(who, 'GET', `/recordings/${recordingId}`)).status, 200);
    assert.equal((await api(who, 'GET', `/voicemails/${voicemailId}`)).body.data.read, true, 'kept');
    const admin = await signIn(t, await createUser(t, { role: 'admin', organizationIds: [who.id] }));
    const deleted = await t.request('DELETE', `/v2/portal/recordings/${recordingId}`, { token: admin });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await api(who, 'GET', `/recordings/${recordingId}`)).status, 404);
    assert.equal((await api(who, 'GET', `/recordings/${recordingId}/audio`)).status, 404);
    assert.equal((await api(who, 'GET', `/calls/${recorded.id}`)).body.data.recordingId, null);
    assert.equal((await api(who, 'DELETE', `/recordings/${recordingId}`)).status, 404);
    const erased = await t.request('DELETE', `/v2/portal/voicemails/${voicemailId}`, { token: admin });
    assert.equal(erased.status, 200, erased.text);
    assert.equal((await api(who, 'GET', `/voicemails/${voicemailId}`)).status, 404);
  });
});

describe('region capacity', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const api = (who: Sender, method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { apiKey: who.key, body });

  test('full: 409 VOICE_REGION_UNAVAILABLE with Retry-After; inbound busy with a failed record; freed at the end', async () => {
    const who = await sender(t);
    const ext = (await api(who, 'POST', '/extensions', { extension: '101', name: 'R' })).body.data;
    const [number] = (await api(who, 'GET', '/numbers')).body.data;
    await api(who, 'PATCH', `/numbers/${number.id}`, { voiceRoute: { type: 'extension', target: ext.id } });

    const set = await t.admin('PUT', '/regions/us', { maxConcurrentCalls: 1 });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.data, { region: 'us', maxConcurrentCalls: 1, activeCalls: 0 });
    const first = (await api(who, 'POST', '/calls', { from: who.number, to: '+14155550160' })).body.data;
    assert.equal(
      (await t.admin('GET', '/regions')).body.data.find((r: any) => r.region === 'us').activeCalls,
      1,
    );

    const calls = await countRows(t, 'SELECT 1 FROM calls');
    const full = await api(who, 'POST', '/calls', { from: who.number, to: '+14155550161' });
    assert.equal(full.status, 409);
    assert.equal(full.body.code, 'VOICE_REGION_UNAVAILABLE');
    assert.equal(full.headers.get('retry-after'), '5');
    assert.equal(await countRows(t, 'SELECT 1 FROM calls'), calls);

    const busy = await t.admin('POST', '/test/pbx/inbound', { from: '+14155550162', to: who.number });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.code, 'VOICE_REGION_UNAVAILABLE');
    assert.ok(busy.headers.get('retry-after'));
    const missed = (await api(who, 'GET', `/calls/${busy.body.data.callId}`)).body.data;
    assert.equal(missed.status, 'failed');
    assert.equal(missed.hangupCause, 'region_full');
    assert.equal(missed.direction, 'inbound');

    // Another region is not this one's business.
    const canadian = await sender(t, { region: 'ca' }, { type: 'ca_local' });
    const elsewhere = await api(canadian, 'POST', '/calls', { from: canadian.number, to: '+14165550163' });
    assert.equal(elsewhere.status, 202, elsewhere.text);
    await api(canadian, 'POST', `/calls/${elsewhere.body.data.id}/hangup`);

    await api(who, 'POST', `/calls/${first.id}/hangup`);
    const next = await api(who, 'POST', '/calls', { from: who.number, to: '+14155550164' });
    assert.equal(next.status, 202, next.text);
    await api(who, 'POST', `/calls/${next.body.data.id}/hangup`);

    await t.admin('PUT', '/regions/us', { maxConcurrentCalls: 0 });
    const closed = await api(who, 'POST', '/calls', { from: who.number, to: '+14155550165' });
    assert.equal(closed.status, 409);
    assert.equal(closed.headers.get('retry-after'), '60');
    assert.equal((await t.admin('PUT', '/regions/us', { maxConcurrentCalls: -1 })).status, 400);
    assert.equal((await t.admin('PUT', '/regions/mars', { maxConcurrentCalls: 5 })).status, 400);
    await t.admin('PUT', '/regions/us', { maxConcurrentCalls: 100 });
  });

  test('a crashed PBX: its calls hold their places only until their leases run out', async () => {
    const who = await sender(t);
    await t.admin('PUT', '/regions/us', { maxConcurrentCalls: 1 });
    // A second server on the same database takes a call, then dies without ending it.
    const doomed = await startTestApp({ database: t.database });
    const lost = (
      await doomed.request('POST', '/api/v2/calls', {
        apiKey: who.key,
        body: { from: who.number, to: '+14155550170' },
      })
    ).body.data;
    await doomed.close();

    assert.equal((await api(who, 'POST', '/calls', { from: who.number, to: '+14155550171' })).status, 409);
    t.ctx.clock.advance(61);
    const taken = await api(who, 'POST', '/calls', { from: who.number, to: '+14155550172' });
    assert.equal(taken.status, 202, taken.text);
    const ended = (await api(who, 'GET', `/calls/${lost.id}`)).body.data;
    assert.equal(ended.status, 'failed');
    assert.equal(ended.hangupCause, 'pbx_lost');
    // The call this server holds is not lost when the clock jumps past its lease: it is renewed instead.
    t.ctx.clock.advance(120);
    await t.admin('PUT', '/regions/us', { maxConcurrentCalls: 2 });
    assert.equal((await api(who, 'POST', '/calls', { from: who.number, to: '+14155550173' })).status, 202);
    assert.equal((await api(who, 'GET', `/calls/${taken.body.data.id}`)).body.data.status, 'queued');
    await t.admin('PUT', '/regions/us', { maxConcurrentCalls: 100 });
  });

  test('a hang-up served by another process reaches the one holding the call', async () => {
    const who = await sender(t);
    const holder = await startTestApp({ database: t.database });
    try {
      const call = (
        await holder.request('POST', '/api/v2/calls', {
          apiKey: who.key,
          body: { from: who.number, to: '+14155550175' },
        })
      ).body.data;
      await holder.admin('POST', `/test/pbx/calls/${call.id}`, { event: 'answered' });
      const ended = await api(who, 'POST', `/calls/${call.id}/hangup`);
      assert.equal(ended.status, 200, ended.text);
      assert.equal(ended.body.data.status, 'completed');
      assert.equal(ended.body.data.hangupCause, 'hangup_requested');
    } finally {
      await holder.close();
    }
  });

  test('the hourly sweep ends lost calls in a region nobody calls in', async () => {
    const who = await sender(t);
    const doomed = await startTestApp({ database: t.database });
    doomed.ctx.clock.set(t.ctx.clock.now()); // the earlier tests moved this server's clock
    const lost = (
      await doomed.request('POST', '/api/v2/calls', {
        apiKey: who.key,
        body: { from: who.number, to: '+14155550174' },
      })
    ).body.data;
    await doomed.close();
    assert.equal(await t.ctx.calls.endLost(t.ctx.clock.now()), 0, 'its lease has not run out yet');
    t.ctx.clock.advance(61);
    assert.equal(await t.ctx.calls.endLost(t.ctx.clock.now()), 1);
    const ended = (await api(who, 'GET', `/calls/${lost.id}`)).body.data;
    assert.equal(ended.status, 'failed');
    assert.equal(ended.hangupCause, 'pbx_lost');
  });
});
