// The console's phone making calls (issue 37's done-when), in Chromium: two browsers, each with a fake microphone
// playing its own tone (440 Hz and 1000 Hz), signed in as two members with extensions. One dials the other's
// extension, the other sees who calls and answers, each page's remote audio receives packets and the relay
// counts packets each way; hold silences what the other hears and resume brings it back; one hangs up and both
// pages and the call record agree. A call the API places with `record` has both tones in its recording. Blind
// and attended transfers to a desk phone (a SIP phone on a UDP socket) move the caller and end the transferring
// browser's calls. Every SIP message the server sends (over the WebSocket too) passes the strict check.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { decodeWav, encodeWav, tone } from '../src/modules/voice/audio.ts';
import {
  assertAccessible,
  launchChromium,
  photograph,
  signedInPage,
  browserSkip as skip,
  until,
} from './helpers/browser.ts';
import { createUser, signIn } from './helpers/portal.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { SipPhone } from './helpers/sip-phone.ts';
import { strength } from './helpers/tones.ts';

describe('a call between two browsers', { skip }, () => {
  let office: Awaited<ReturnType<typeof sipOffice>>;
  let alice: { page: Page; extension: SipExtension };
  let bob: { page: Page; extension: SipExtension };
  /** Carol's desk phone (extension 203), answering every call at once. */
  let carol: SipPhone;
  const browsers: Browser[] = [];
  const pageErrors: string[] = [];

  /** A member with extension `digits` named `name`, signed in, in a browser whose microphone plays `hz`. */
  async function member(digits: string, name: string, hz: number) {
    const user = await createUser(office.t, { role: 'member', organizationIds: [office.office.id] });
    const extension = await office.create(digits, { name, userId: user.id });
    const wav = path.join(mkdtempSync(path.join(tmpdir(), 'phone-')), `${hz}.wav`);
    writeFileSync(wav, encodeWav(tone(10, hz)));
    const browser = await launchChromium([
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
    ]);
    browsers.push(browser);
    const page = await signedInPage(browser, office.t, await signIn(office.t, user), '/calls');
    page.on('pageerror', (error) => pageErrors.push(`${name}: ${error.message}`));
    await page.locator('[data-phone-status="ready"]').waitFor({ state: 'attached' });
    await page.getByRole('button', { name: new RegExp(`^Phone · ${digits}`) }).click();
    return { page, extension };
  }

  const dock = (page: Page) => page.getByRole('complementary', { name: 'Phone' });
  const received = async (page: Page) =>
    Number(await page.getByTestId('call-audio').getAttribute('data-received'));
  const latestCall = async () =>
    (await office.t.request('GET', '/api/v2/calls?limit=1', { apiKey: office.office.key })).body.data[0];

  before(async () => {
    office = await sipOffice();
    (office.t.ctx.config as { publicUrl: string }).publicUrl = office.t.url;
    alice = await member('201', 'Alice', 440);
    bob = await member('202', 'Bob', 1000);
    carol = await SipPhone.open(office.port, await office.create('203', { name: 'Carol' }));
    assert.equal(await carol.register(), 200);
  });
  after(async () => {
    for (const browser of browsers) await browser.close();
    carol?.close();
    office.t.ctx.sipListener.stop();
    await office.t.close();
  });

  test('Alice calls Bob’s extension; Bob sees who and answers; audio both ways; hold, resume; Bob hangs up', async () => {
    await dock(alice.page).getByLabel('Call', { exact: true }).fill('202');
    await dock(alice.page).getByRole('button', { name: 'Call', exact: true }).click();

    const ringing = bob.page.getByRole('alertdialog', { name: 'Incoming call' });
    await ringing.waitFor();
    assert.match(
      (await ringing.textContent()) ?? '',
      /Alice\s*201/,
      'caller id: the extension’s name and number',
    );
    await assertAccessible(bob.page, 'an incoming call');
    await photograph(bob.page, 'phone-incoming');
    await ringing.getByRole('button', { name: 'Answer' }).click();

    for (const side of [alice, bob]) await side.page.locator('[data-call-state="active"]').waitFor();
    const live = await latestCall();
    assert.equal(live.status, 'in_progress');
    // The relay passes packets each way, and each page's remote audio track receives the other's.
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(live.id),
      (counts) => (counts?.fromCaller ?? 0) >= 100 && (counts?.fromCallee ?? 0) >= 100,
    );
    assert.ok(relayed && relayed.fromCaller >= 100 && relayed.fromCallee >= 100, JSON.stringify(relayed));
    for (const side of [alice, bob]) {
      const count = await until(
        () => received(side.page),
        (value) => value >= 100,
      );
      assert.ok(count >= 100, `a page received ${count} packets`);
    }
    await alice.page.getByTestId('call-timer').waitFor();
    await assertAccessible(alice.page, 'a call');
    await photograph(alice.page, 'phone-in-call');

    // Hold: the page says so, and SIP.js stops sending Alice's microphone (its sender track is disabled), so
    // what Bob hears falls to silence; resumed, her tone is back. (The relay keeps passing packets both ways:
    // a held browser still sends RTP, of silence, and our answer to its sendonly hides the hold from Bob.)
    const level = async (page: Page) =>
      Number(await page.getByTestId('call-audio').getAttribute('data-level'));
    assert.ok(
      (await until(
        () => level(bob.page),
        (value) => value > 0.05,
      )) > 0.05,
      'Bob hears Alice’s tone',
    );
    await dock(alice.page).getByRole('button', { name: 'Hold' }).click();
    await alice.page.locator('[data-call-state="held"]').waitFor();
    assert.equal(
      await dock(alice.page).getByRole('button', { name: 'Resume' }).getAttribute('aria-pressed'),
      'true',
    );
    const quiet = await until(
      () => level(bob.page),
      (value) => value < 0.01,
    );
    assert.ok(quiet < 0.01, `Bob hears silence while Alice holds (level ${quiet})`);
    await photograph(alice.page, 'phone-on-hold');
    await dock(alice.page).getByRole('button', { name: 'Resume' }).click();
    await alice.page.locator('[data-call-state="active"]').waitFor();
    const back = await until(
      () => level(bob.page),
      (value) => value > 0.05,
    );
    assert.ok(back > 0.05, `Bob hears Alice again after resume (level ${back})`);
    const resumedFrom = await received(alice.page);
    const flowing = await until(
      () => received(alice.page),
      (value) => value >= resumedFrom + 50,
    );
    assert.ok(flowing >= resumedFrom + 50, 'Alice receives Bob after resume');

    await dock(bob.page).getByRole('button', { name: 'Hang up' }).click();
    for (const side of [alice, bob]) {
      await side.page.locator('[data-call-state]').waitFor({ state: 'detached' });
      await side.page.locator('[data-phone-status="ready"]').waitFor({ state: 'attached' });
    }
    const ended = await until(
      () => office.t.request('GET', `/api/v2/calls/${live.id}`, { apiKey: office.office.key }),
      (res) => res.body.data.status === 'completed',
    );
    const call = ended.body.data;
    assert.equal(call.status, 'completed');
    assert.equal(call.direction, 'internal');
    assert.equal(call.from, '201');
    assert.equal(call.to, '202');
    assert.equal(call.hangupCause, 'normal_clearing');
    assert.ok(call.answeredAt && call.durationSeconds >= 2, JSON.stringify(call));
  });

  test('a call the API places and records: both browsers answer, and the recording holds both tones', async () => {
    const placed = await office.t.request('POST', '/api/v2/calls', {
      apiKey: office.office.key,
      body: { from: '201', to: '202', extensionId: alice.extension.id, record: true },
    });
    assert.equal(placed.status, 202, placed.text);
    await alice.page
      .getByRole('alertdialog', { name: 'Incoming call' })
      .getByRole('button', { name: 'Answer' })
      .click();
    await bob.page
      .getByRole('alertdialog', { name: 'Incoming call' })
      .getByRole('button', { name: 'Answer' })
      .click();
    for (const side of [alice, bob]) await side.page.locator('[data-call-state="active"]').waitFor();
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(placed.body.data.id),
      (counts) => (counts?.fromCaller ?? 0) >= 150 && (counts?.fromCallee ?? 0) >= 150,
    );
    assert.ok(relayed && relayed.fromCaller >= 150 && relayed.fromCallee >= 150, JSON.stringify(relayed));
    const hangup = await office.t.request('POST', `/api/v2/calls/${placed.body.data.id}/hangup`, {
      apiKey: office.office.key,
    });
    assert.equal(hangup.status, 200, hangup.text);
    for (const side of [alice, bob])
      await side.page.locator('[data-call-state]').waitFor({ state: 'detached' });
    const done = await until(
      () => office.t.request('GET', `/api/v2/calls/${placed.body.data.id}`, { apiKey: office.office.key }),
      (res) => Boolean(res.body.data.recordingId),
    );
    assert.equal(done.body.data.status, 'completed');
    const audio = await fetch(`${office.t.url}/api/v2/recordings/${done.body.data.recordingId}/audio`, {
      headers: { 'x-api-key': office.office.key },
    });
    assert.equal(audio.status, 200);
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    const silent = strength(wav.samples, 700);
    assert.ok(strength(wav.samples, 440) > 50 * silent, 'Alice’s microphone is in the recording');
    assert.ok(strength(wav.samples, 1000) > 50 * silent, 'Bob’s microphone is in the recording');
    assert.deepEqual(pageErrors, []);
  });

  /** Alice dials Bob, Bob answers: the call's id once both pages are in it. */
  async function aliceCallsBob(): Promise<string> {
    await dock(alice.page).getByLabel('Call', { exact: true }).fill('202');
    await dock(alice.page).getByRole('button', { name: 'Call', exact: true }).click();
    await bob.page
      .getByRole('alertdialog', { name: 'Incoming call' })
      .getByRole('button', { name: 'Answer' })
      .click();
    for (const side of [alice, bob]) await side.page.locator('[data-call-state="active"]').waitFor();
    return (await latestCall()).id;
  }
  const callRecord = async (id: string) =>
    (await office.t.request('GET', `/api/v2/calls/${id}`, { apiKey: office.office.key })).body.data;

  test('mute: what Bob hears falls to silence, and comes back unmuted', async () => {
    const id = await aliceCallsBob();
    const level = async (page: Page) =>
      Number(await page.getByTestId('call-audio').getAttribute('data-level'));
    assert.ok(
      (await until(
        () => level(bob.page),
        (value) => value > 0.05,
      )) > 0.05,
    );
    await dock(alice.page).getByRole('button', { name: 'Mute' }).click();
    assert.equal(
      await dock(alice.page).getByRole('button', { name: 'Unmute' }).getAttribute('aria-pressed'),
      'true',
    );
    assert.ok(
      (await until(
        () => level(bob.page),
        (value) => value < 0.01,
      )) < 0.01,
      'silence while muted',
    );
    await dock(alice.page).getByRole('button', { name: 'Unmute' }).click();
    assert.ok(
      (await until(
        () => level(bob.page),
        (value) => value > 0.05,
      )) > 0.05,
      'heard again',
    );
    await dock(alice.page).getByRole('button', { name: 'Hang up' }).click();
    assert.equal(
      (
        await until(
          () => callRecord(id),
          (call) => call.status === 'completed',
        )
      ).status,
      'completed',
    );
    for (const side of [alice, bob])
      await side.page.locator('[data-call-state]').waitFor({ state: 'detached' });
  });

  test('keys pressed in a call reach the other phone as RFC 4733 telephone-events, through the relay', async () => {
    carol.telephoneEvents = true;
    try {
      await dock(alice.page).getByLabel('Call', { exact: true }).fill('203');
      await dock(alice.page).getByRole('button', { name: 'Call', exact: true }).click();
      await alice.page.locator('[data-call-state="active"]').waitFor();
      await dock(alice.page).getByRole('button', { name: 'Keys', exact: true }).click();
      const keys = dock(alice.page).getByRole('group', { name: 'Keys to send' });
      for (const name of ['5', 'Pound']) {
        await keys.getByRole('button', { name, exact: true }).click();
        // One key's events end before the next is pressed (RTCDTMFSender queues them anyway).
        await until(
          async () => carol.keysReceived,
          (got) => got.length > 0 && got.endsWith(name === '5' ? '5' : '#'),
        );
      }
      assert.equal(carol.keysReceived, '5#');
      await dock(alice.page).getByRole('button', { name: 'Hang up' }).click();
      await carol.next('BYE');
      await alice.page.locator('[data-call-state]').waitFor({ state: 'detached' });
    } finally {
      carol.telephoneEvents = false;
    }
  });

  test('blind transfer: Bob sends Alice to Carol’s desk phone and is let go; Alice and Carol talk', {
    timeout: 90_000,
  }, async () => {
    const id = await aliceCallsBob();
    await dock(bob.page).getByRole('button', { name: 'Transfer' }).click();
    await dock(bob.page).getByLabel('Transfer to').fill('203');
    await assertAccessible(bob.page, 'the transfer form');
    await dock(bob.page).getByRole('button', { name: 'Transfer now' }).click();
    await carol.next('ACK');
    await bob.page.locator('[data-call-state]').waitFor({ state: 'detached' });
    const moved = await until(
      () => callRecord(id),
      (call) => call.transferredTo !== null,
    );
    assert.deepEqual(moved.transferredTo?.type, 'extension');
    // Alice's browser is still in the call, now with Carol.
    assert.equal(await alice.page.locator('[data-call-state="active"]').count(), 1);
    // Carol's phone receives Alice's audio, though Bob's WebRTC bridge went on sending to the relay until its
    // BYE (the relay does not take the party that left for the new one: RtpRelay.replaceParty).
    const heard = carol.mediaReceived.length;
    const reached = await until(
      () => carol.mediaReceived.length,
      (count) => count >= heard + 50,
      5000,
    );
    assert.ok(reached >= heard + 50, `Carol received ${reached - heard} packets after the transfer`);
    await dock(alice.page).getByRole('button', { name: 'Hang up' }).click();
    await carol.next('BYE');
    const ended = await until(
      () => callRecord(id),
      (call) => call.status === 'completed',
    );
    assert.equal(ended.status, 'completed');
    await alice.page.locator('[data-call-state]').waitFor({ state: 'detached' });
  });

  test('attended transfer: Bob holds Alice, consults Carol, then joins them (REFER with Replaces)', {
    timeout: 90_000,
  }, async () => {
    const id = await aliceCallsBob();
    await dock(bob.page).getByRole('button', { name: 'Transfer' }).click();
    await dock(bob.page).getByLabel('Transfer to').fill('203');
    await dock(bob.page).getByRole('button', { name: 'Consult first' }).click();
    await bob.page.locator('[data-call-state="held"]').waitFor();
    await bob.page.locator('[data-call-state="active"]').waitFor();
    const consultation = (await latestCall()).id;
    assert.notEqual(consultation, id);
    await photograph(bob.page, 'phone-attended-transfer');
    await dock(bob.page).getByRole('button', { name: 'Complete transfer to 203' }).click();
    await bob.page.locator('[data-call-state]').waitFor({ state: 'detached' });
    const joined = await until(
      () => callRecord(consultation),
      (call) => call.status === 'completed',
    );
    assert.equal(joined.hangupCause, 'transferred');
    assert.equal((await callRecord(id)).status, 'in_progress', 'Alice’s call goes on, with Carol');
    assert.equal(await alice.page.locator('[data-call-state="active"]').count(), 1);
    // Carol's phone receives Alice's audio (as in the blind transfer).
    const heard = carol.mediaReceived.length;
    const reached = await until(
      () => carol.mediaReceived.length,
      (count) => count >= heard + 50,
      5000,
    );
    assert.ok(reached >= heard + 50, `Carol received ${reached - heard} packets after the transfer`);
    await dock(alice.page).getByRole('button', { name: 'Hang up' }).click();
    await carol.next('BYE');
    assert.equal(
      (
        await until(
          () => callRecord(id),
          (call) => call.status === 'completed',
        )
      ).status,
      'completed',
    );
  });
});
