// Calls in the browser with a third-party browser SIP stack (issue 37): Chromium runs JsSIP (not the console's
// SIP.js) in a test page, with a fake microphone playing a WAV tone, registers an extension over our WebSocket
// (`/sip`, RFC 7118), calls a desk phone (a UDP phone of the test), takes a call from it, and calls the office's
// number routed to an AI agent, out through the trunk and back in (the trunk is our own listener); WebRTC media (ICE,
// DTLS-SRTP, G.711) is terminated on the server and bridged to the RTP relay. Audio both ways is checked by the
// relay's packet counts and by the page's own WebRTC statistics; the call records by the API. Every SIP message
// the server sends (over the WebSocket too) passes the strict phone's check (t.close()).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from './helpers/browser.ts';
import { type SipExtension, sipOffice } from './helpers/sip-office.ts';
import { SipPhone } from './helpers/sip-phone.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip = !existsSync(CHROMIUM) && `Chromium not installed at ${CHROMIUM}`;

async function until<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await sleep(100);
    value = await read();
  }
  return value;
}

/** A 48 kHz mono 16-bit WAV of a 440 Hz tone: the fake microphone's sound. */
function toneWav(seconds: number): Buffer {
  const rate = 48_000;
  const samples = rate * seconds;
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write('WAVEfmt ', 8, 'ascii');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(rate, 24);
  wav.writeUInt32LE(rate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) {
    wav.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  }
  return wav;
}

describe('a third-party browser SIP stack (JsSIP in Chromium) on our WebSocket', { skip }, () => {
  let office: Awaited<ReturnType<typeof sipOffice>>;
  let browserExtension: SipExtension;
  let deskExtension: SipExtension;
  let pages: Server;
  let pageUrl: string;
  let browser: Browser;
  let page: Page;
  let desk: SipPhone;

  before(async () => {
    office = await sipOffice({}, { trunkToSelf: true });
    browserExtension = await office.create('101');
    deskExtension = await office.create('102');
    desk = await SipPhone.open(office.port, deskExtension);
    assert.equal(await desk.register(), 200);
    // JsSIP ships CommonJS only: bundled for the page, as an app would.
    const bundle = await build({
      entryPoints: [join(import.meta.dirname, '..', 'node_modules', 'jssip', 'lib', 'JsSIP.js')],
      bundle: true,
      format: 'iife',
      globalName: 'JsSIP',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    });
    const script = bundle.outputFiles[0]!.text;
    const html = await import('node:fs/promises').then((fs) =>
      fs.readFile(join(import.meta.dirname, 'fixtures', 'jssip', 'phone.html'), 'utf8'),
    );
    pages = createServer((request, response) => {
      const js = request.url === '/jssip.js';
      response.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html; charset=utf-8' });
      response.end(js ? script : html);
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    const address = pages.address();
    pageUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
    const wav = join(mkdtempSync(join(tmpdir(), 'fake-mic-')), 'tone.wav');
    writeFileSync(wav, toneWav(10));
    browser = await launchChromium([
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
    ]);
    page = await browser.newPage();
    await page.goto(pageUrl);
    await page.evaluate(
      ([url, uri, password]) => (window as any).phone.register(url, uri, password),
      [
        `${office.t.url.replace(/^http/, 'ws')}/sip`,
        `sip:${browserExtension.sip.username}@localhost`,
        browserExtension.sip.password,
      ],
    );
    await page.waitForFunction(() => (window as any).phone.events.includes('registered'), undefined, {
      timeout: 15_000,
    });
  });
  after(async () => {
    await page?.evaluate(() => (window as any).phone.stop()).catch(() => {});
    await browser?.close();
    desk?.close();
    await new Promise((resolve) => pages?.close(resolve));
    await office?.t.close();
  });

  const events = (): Promise<string[]> => page.evaluate(() => [...(window as any).phone.events]);
  const stats = (): Promise<{ sent: number; received: number; codec: string }> =>
    page.evaluate(() => (window as any).phone.stats());
  const latestCall = async () =>
    (await office.t.request('GET', '/api/v2/calls', { apiKey: office.office.key })).body.data[0];

  test('JsSIP registered over the WebSocket with digest: a binding from a ws: source', async () => {
    const bindings = await office.t.ctx.registrar.contacts(browserExtension.id);
    assert.equal(bindings.length, 1);
    assert.match(bindings[0]!.source, /^ws:/);
    assert.match(bindings[0]!.contact, /transport=ws/i);
  });

  test('the browser calls the desk phone: audio both ways through the relay, hang-up, a completed call', async () => {
    await page.evaluate(() => (window as any).phone.call('sip:102@localhost'));
    const invite = await desk.next('INVITE');
    await until(events, (list) => list.includes('confirmed'));
    assert.ok((await events()).includes('confirmed'), (await events()).join());
    const relayPort = Number(/m=audio (\d+)/.exec(invite.body)![1]);
    await desk.sendRtp(relayPort, 100);
    const live = await latestCall();
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(live.id),
      (counts) => (counts?.fromCaller ?? 0) >= 50 && (counts?.fromCallee ?? 0) >= 50,
    );
    assert.ok(relayed && relayed.fromCaller >= 50 && relayed.fromCallee >= 50, JSON.stringify(relayed));
    const seen = await until(stats, (value) => value.received >= 50 && value.sent >= 50);
    assert.ok(seen.received >= 50 && seen.sent >= 50, JSON.stringify(seen));
    assert.match(seen.codec, /audio\/PCM[UA]/);
    assert.ok(desk.mediaReceived.length >= 50, `desk phone heard ${desk.mediaReceived.length}`);
    await page.evaluate(() => (window as any).phone.hangup());
    await desk.next('BYE');
    const call = await until(latestCall, (record) => record?.status === 'completed');
    assert.equal(call.status, 'completed');
    assert.equal(call.from, '101');
    assert.equal(call.to, '102');
    assert.equal(call.hangupCause, 'normal_clearing');
  });

  test('the desk phone calls the browser: JsSIP answers our WebRTC offer, audio both ways, hang-up', async () => {
    const before = (await events()).length;
    const calling = desk.call('101');
    await until(events, (list) => list.slice(before).includes('confirmed'));
    const dialog = await calling;
    const relayPort = Number(/m=audio (\d+)/.exec(desk.lastAnswer!.body)![1]);
    await desk.sendRtp(relayPort, 100);
    const live = await latestCall();
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(live.id),
      (counts) => (counts?.fromCaller ?? 0) >= 50 && (counts?.fromCallee ?? 0) >= 50,
    );
    assert.ok(relayed && relayed.fromCaller >= 50 && relayed.fromCallee >= 50, JSON.stringify(relayed));
    const seen = await until(stats, (value) => value.received >= 50 && value.sent >= 50);
    assert.ok(seen.received >= 50 && seen.sent >= 50, JSON.stringify(seen));
    assert.equal((await desk.inDialogRequest('BYE', dialog)).status, 200);
    await until(events, (list) => list.slice(before).some((event) => event.startsWith('ended:remote')));
    assert.ok((await events()).slice(before).some((event) => event.startsWith('ended:remote')));
    const call = await until(latestCall, (record) => record?.status === 'completed');
    assert.equal(call.from, '102');
    assert.equal(call.to, '101');
  });

  test('the browser calls the number routed to an AI agent, over the trunk: it hears the agent, both calls complete', async () => {
    const api = (method: string, path: string, body?: unknown) =>
      office.t.request(method, `/api/v2${path}`, { apiKey: office.office.key, body });
    const agent = await api('POST', '/agents', {
      name: 'Receptionist',
      firstMessage: 'Bright Smile Dental, how can I help?',
    });
    assert.equal(agent.status, 201, agent.text);
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'agent', target: agent.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
    const before = (await events()).length;
    await page.evaluate((target) => (window as any).phone.call(target), `sip:${number.number}@localhost`);
    await until(events, (list) => list.slice(before).includes('confirmed'));
    assert.ok((await events()).slice(before).includes('confirmed'), (await events()).join());
    // The browser's call out (through the relay, to the trunk) and the network's call in, to the agent.
    const calls = await until(
      async () => (await api('GET', '/calls')).body.data as Record<string, any>[],
      (list) =>
        list.filter((call) => call.to === number.number && call.status === 'in_progress').length === 2,
    );
    const outbound = calls.find((call) => call.direction === 'outbound' && call.to === number.number)!;
    assert.ok(outbound, JSON.stringify(calls));
    assert.ok(calls.some((call) => call.direction === 'inbound' && call.to === number.number));
    // The agent's greeting reaches the browser, and the browser's microphone the agent, through the relay.
    const relayed = await until(
      () => office.t.ctx.sipListener.pbx.mediaOf(outbound.id),
      (counts) => (counts?.fromCaller ?? 0) >= 50 && (counts?.fromCallee ?? 0) >= 50,
    );
    assert.ok(relayed && relayed.fromCaller >= 50 && relayed.fromCallee >= 50, JSON.stringify(relayed));
    const seen = await until(stats, (value) => value.received >= 50);
    assert.ok(seen.received >= 50, JSON.stringify(seen));
    await page.evaluate(() => (window as any).phone.hangup());
    const ended = await until(
      async () => (await api('GET', '/calls')).body.data as Record<string, any>[],
      (list) => list.filter((call) => call.to === number.number && call.status === 'completed').length === 2,
    );
    assert.equal(ended.filter((call) => call.to === number.number && call.status === 'completed').length, 2);
  });
});
