// A call flow's line on real SIP calls (sip/caller-line.ts), with real peers on loopback: SIPp plays the trunk
// calling one of our numbers, the test's own UDP socket is the caller's phone's media (named in SIPp's INVITE).
// How the call reaches the line: the flow runner that makes a number run a flow is another part of issue 33,
// so this test does not depend on it. Today an inbound call on which the PBX answers with its own media is one
// routed to voicemail; the test puts its program where the voicemail box would run (SipPbx.takeVoicemail on
// this app's PBX), and that program does what a flow runner does: SipPbx.callerLine(call) on the call the PBX
// is carrying, then steps on the line. Everything under it is the product's: the INVITE and its 200 with our
// media, the RTP both ways, the INFO through the listener and the dialog checks, the BYE at the end.
// Proven: `say` sends RTP audio; an RFC 4733 key (three end packets, as phones send) arrives once; a SIP INFO
// `application/dtmf-relay` key arrives and gets 200; an INFO of another type gets 415; one naming no dialog
// 481; a key during a gather's prompt stops the prompt (the phone hears no more of it) and counts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { silence } from '../src/modules/voice/audio.ts';
import type { CallerLine, PbxCall } from '../src/modules/voice/pbx.ts';
import { dtmfRelayKey } from '../src/modules/voice/sip/dialog-requests.ts';
import { rtpAudio } from '../src/modules/voice/sip/rtp.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';
import { PhoneMedia } from './helpers/phone-media.ts';
import { freePort, runSipp, sippInstalled, trunkCall } from './helpers/sipp.ts';

describe('a call flow’s line on a SIP call (SIPp as the trunk)', {
  skip: !sippInstalled && 'SIPp (sip-tester) not installed',
}, () => {
  let t: TestApp;
  let port: number;
  let trunkPort: number;
  let office: Sender;

  before(async () => {
    port = await freePort();
    trunkPort = await freePort();
    t = await startTestApp({ config: { sipTrunk: { host: '127.0.0.1', port: trunkPort } } });
    t.ctx.sipListener.start({ port, host: '127.0.0.1' });
    office = await sender(t);
    const api = (method: string, path: string, body?: unknown) =>
      t.request(method, `/api/v2${path}`, { apiKey: office.key, body });
    const box = await api('POST', '/extensions', {
      extension: '400',
      name: 'Menu',
      voicemail: { enabled: true, greeting: 'unused' },
    });
    assert.equal(box.status, 201, box.text);
    const [number] = (await api('GET', '/numbers')).body.data;
    const routed = await api('PATCH', `/numbers/${number.id}`, {
      voiceRoute: { type: 'voicemail', target: box.body.data.id },
    });
    assert.equal(routed.status, 200, routed.text);
  });
  after(async () => {
    t.ctx.sipListener.stop();
    await t.close();
  });

  test('say sends audio; keys by RFC 4733 (once) and by SIP INFO (200) arrive; other INFO 415, no dialog 481; a key stops a prompt', async () => {
    const phone = await PhoneMedia.open();
    const pbx = t.ctx.sipListener.pbx;
    const seen: Record<string, unknown> = {};
    let program: Promise<void> | undefined;
    // The flow runner's stand-in (see the header): the steps a menu takes on the caller's line.
    pbx.takeVoicemail = async (call: PbxCall) => {
      const line: CallerLine = pbx.callerLine(call);
      program = (async () => {
        // The phone presses 5 (RFC 4733) while it hears the welcome: typed ahead.
        phone.onAudio = () => {
          if (phone.audioPackets === 10) void phone.press('5');
        };
        seen.say = await line.say('Welcome to Bright Smile Dental.');
        seen.audioAfterSay = phone.loudPackets;
        // The 5 and SIPp's INFO 7, in whichever order they came.
        seen.bothKeys = await line.gather({ numDigits: 2, finishOnKey: '', timeoutSeconds: 5 });
        // Neither counted twice: the end packets repeated, the INFO retransmitted or not, nothing more.
        seen.nothingMore = await line.gather({ numDigits: 1, timeoutSeconds: 1 });
        // A long prompt; half a second into it the caller presses 9. The gather wants two keys, so only the
        // barge-in can stop the prompt: the phone then hears nothing more while the gather waits on.
        const before = phone.audioPackets;
        let afterKey: Promise<void> | undefined;
        phone.onAudio = () => {
          if (phone.audioPackets !== before + 25) return;
          afterKey = phone.press('9').then(async () => {
            const atKey = phone.audioPackets;
            seen.promptPackets = atKey - before;
            await sleep(600);
            seen.packetsAfterKey = phone.audioPackets - atKey;
          });
        };
        seen.barged = await line.gather({
          numDigits: 2,
          timeoutSeconds: 2,
          prompt: {
            text: 'For appointments press one. For billing press two. For anything else stay on the line.',
          },
        });
        await afterKey;
        await line.close();
      })();
      await program;
      return { at: t.ctx.clock.now(), cause: 'normal_clearing', audio: rtpAudio(silence(1)) };
    };

    const trunk = runSipp(port, {
      username: 'trunk',
      password: 'unused',
      localPort: trunkPort,
      mediaPort: await freePort(),
      callee: office.number,
      // Answered and ACKed; three INFOs in its dialog and one naming no dialog; then our BYE.
      scenario: trunkCall({
        sdpMediaPort: phone.port,
        waitMs: 300,
        infos: [
          { contentType: 'application/dtmf-relay', body: 'Signal=7\n      Duration=160', expect: 200 },
          { contentType: 'text/plain', body: 'hello', expect: 415 },
          {
            contentType: 'application/dtmf-relay',
            body: 'Signal=8\n      Duration=160',
            expect: 481,
            toTag: ';tag=notours',
          },
        ],
        untilBye: true,
      }),
      timeoutSeconds: 40,
    });
    assert.equal(
      await trunk,
      0,
      'SIPp: 200 to the dtmf-relay INFO, 415 to text/plain, 481 to no dialog, our BYE',
    );
    await program;
    phone.close();

    assert.deepEqual(seen.say, { kind: 'done' });
    assert.ok(
      (seen.audioAfterSay as number) > 25,
      `the welcome was heard: ${seen.audioAfterSay} packets of sound`,
    );
    const both = seen.bothKeys as { kind: string; digits: string };
    assert.equal(both.kind, 'digits');
    assert.deepEqual([...both.digits].sort(), ['5', '7'], `RFC 4733 and INFO keys: ${both.digits}`);
    assert.deepEqual(seen.nothingMore, { kind: 'timeout' }, 'no key arrived twice');
    assert.deepEqual(seen.barged, { kind: 'digits', digits: '9' });
    assert.ok(
      (seen.promptPackets as number) < 75,
      `the prompt stopped at the key: ${seen.promptPackets} packets`,
    );
    assert.ok(
      (seen.packetsAfterKey as number) < 5,
      `nothing more was played: ${seen.packetsAfterKey} packets`,
    );
  });
});

describe('a dtmf-relay body’s key', () => {
  test('Signal names the key, by its character or its RFC 4733 event number; anything else is no key', () => {
    assert.equal(dtmfRelayKey('Signal=5\r\nDuration=160\r\n'), '5');
    assert.equal(dtmfRelayKey('Duration=160\nsignal= #\n'), '#');
    assert.equal(dtmfRelayKey('Signal=*'), '*');
    assert.equal(dtmfRelayKey('Signal=d'), 'D');
    assert.equal(dtmfRelayKey('Signal=10'), '*');
    assert.equal(dtmfRelayKey('Signal=11'), '#');
    assert.equal(dtmfRelayKey('Signal=16'), undefined, '16 is flash, no key');
    assert.equal(dtmfRelayKey('Signal=x'), undefined);
    assert.equal(dtmfRelayKey('Signal='), undefined);
    assert.equal(dtmfRelayKey('Duration=160'), undefined);
    assert.equal(dtmfRelayKey(''), undefined);
  });
});
