// A call flow's line on the simulated PBX (CallerLine, pbx.ts; simulated-line.ts and line-steps.ts), driven
// directly: the test plays the flow runner on a call record it made itself (no dial plan runs on it, so
// nothing else waits on the PBX for that call), on the app's own PBX in manual play (APP_ENV=test) and on
// one in auto play (say and prompts take their time on the clock). Gathers end by count, by finish key and
// by silence (the test moves the clock rather than waiting), keys typed ahead are kept, a key during a prompt
// stops it and counts, a hang-up ends a gather or a say at once. The operator's test control `digits`
// (CONTRACT section 13) is validated and reaches the line, typed ahead or into a waiting gather.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep, setImmediate as tick } from 'node:timers/promises';
import type { LineSteps } from '../src/modules/voice/line-steps.ts';
import type { PbxCall } from '../src/modules/voice/pbx.ts';
import { SimulatedPbx } from '../src/modules/voice/simulated-pbx.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { type Sender, sender } from './helpers/messaging.ts';

/** Whether `promise` has settled (after the microtasks and timers already due have run). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await tick();
  await tick();
  return done;
}

describe('a call flow’s line on the simulated PBX', () => {
  let t: TestApp;
  let office: Sender;
  let count = 0;

  before(async () => {
    t = await startTestApp();
    office = await sender(t);
    // The clock stands still unless a test moves it: a timeout is reached by moving it, never by a slow machine.
    t.ctx.clock.freeze();
  });
  after(() => t.close());

  /** A call record of the office's (in progress, as a flow's answered call is), and the PBX's view of it. */
  const newCall = async (): Promise<PbxCall> => {
    const now = t.ctx.clock.now();
    count += 1;
    const row = await t.ctx.calls.store.insert(t.ctx.db, {
      id: `call_line${Date.now()}${count}`,
      organizationId: office.id,
      region: 'us',
      direction: 'inbound',
      from: '+14155550100',
      to: office.number,
      extensionId: null,
      record: false,
      leaseExpiresAt: new Date(now.getTime() + 600_000),
      now,
    });
    return { id: row.id, direction: 'inbound', from: '+14155550100', to: office.number };
  };
  const lineOf = (pbx: SimulatedPbx, call: PbxCall) => pbx.callerLine(call) as LineSteps;
  const control = (callId: string, body: Record<string, unknown>) =>
    t.admin('POST', `/test/pbx/calls/${callId}`, body);

  test('manual play: say, play and pause end at once; a gather ends at numDigits and keeps the keys after it', async () => {
    const call = await newCall();
    const line = lineOf(t.ctx.simulatedPbx, call);
    assert.deepEqual(await line.say('Welcome to Bright Smile Dental.'), { kind: 'done' });
    assert.deepEqual(await line.play(new Int16Array(8000 * 30), { loop: 3 }), { kind: 'done' });
    assert.deepEqual(await line.pause(600), { kind: 'done' });

    const gathering = line.gather({ numDigits: 2, timeoutSeconds: 5 });
    await tick();
    line.press('1');
    assert.equal(await settled(gathering), false, 'one key of two');
    line.press('23');
    assert.deepEqual(await gathering, { kind: 'digits', digits: '12' });
    // The 3 was typed ahead: the next gather has it at once, its prompt unplayed.
    assert.deepEqual(
      await line.gather({ numDigits: 1, timeoutSeconds: 5, prompt: { text: 'Press a key' } }),
      {
        kind: 'digits',
        digits: '3',
      },
    );
    // The same call's line again is the same line, keys typed ahead on it kept.
    line.press('9');
    assert.equal(t.ctx.simulatedPbx.callerLine(call), line);
    assert.deepEqual(await line.gather({ numDigits: 1, timeoutSeconds: 5 }), { kind: 'digits', digits: '9' });
    await line.close();
  });

  test('a gather ends at its finish key (# unless said, not included; none with ""), and a lone finish key is no digits', async () => {
    const line = lineOf(t.ctx.simulatedPbx, await newCall());
    line.press('45#6');
    assert.deepEqual(await line.gather({ timeoutSeconds: 5 }), { kind: 'digits', digits: '45' });
    const noFinishKey = line.gather({ finishOnKey: '', numDigits: 3, timeoutSeconds: 5 });
    line.press('#*');
    assert.deepEqual(await noFinishKey, { kind: 'digits', digits: '6#*' });
    const star = line.gather({ finishOnKey: '*', timeoutSeconds: 5 });
    line.press('0#*');
    assert.deepEqual(await star, { kind: 'digits', digits: '0#' });
    const lone = line.gather({ timeoutSeconds: 5 });
    line.press('#');
    assert.deepEqual(await lone, { kind: 'digits', digits: '' });
    await line.close();
  });

  test('a gather times out after its seconds of silence: nothing pressed is a timeout, keys then silence are the keys', async () => {
    const line = lineOf(t.ctx.simulatedPbx, await newCall());
    const silent = line.gather({ timeoutSeconds: 5 });
    await tick();
    t.ctx.clock.advance(4.9);
    assert.equal(await settled(silent), false, 'not yet five seconds');
    t.ctx.clock.advance(0.2);
    assert.deepEqual(await silent, { kind: 'timeout' });

    const typing = line.gather({ timeoutSeconds: 5 });
    await tick();
    t.ctx.clock.advance(3);
    line.press('7');
    // The silence counts again from the key: eight seconds since the gather began, three since the key.
    t.ctx.clock.advance(3);
    assert.equal(await settled(typing), false, 'the timeout restarted at the key');
    t.ctx.clock.advance(2.1);
    assert.deepEqual(await typing, { kind: 'digits', digits: '7' });
    await line.close();
  });

  test('auto play: a prompt takes its time, the timeout runs from its end, and a key during it stops it and counts', async () => {
    const pbx = new SimulatedPbx(t.ctx.clock, 'auto');
    const line = lineOf(pbx, await newCall());
    // 100 characters: seven seconds of speech.
    const prompt = { text: 'x'.repeat(100) };
    const unanswered = line.gather({ timeoutSeconds: 5, prompt });
    await tick();
    assert.equal(line.current, 'prompting');
    t.ctx.clock.advance(6);
    assert.equal(await settled(unanswered), false);
    assert.equal(line.current, 'prompting', 'still speaking');
    t.ctx.clock.advance(1.1);
    await tick();
    assert.equal(line.current, 'collecting', 'the prompt ended');
    t.ctx.clock.advance(4.9);
    assert.equal(await settled(unanswered), false, 'five seconds from the prompt’s end, not its start');
    t.ctx.clock.advance(0.2);
    assert.deepEqual(await unanswered, { kind: 'timeout' });

    const barged = line.gather({ numDigits: 2, timeoutSeconds: 5, prompt });
    await tick();
    assert.equal(line.current, 'prompting');
    line.press('1');
    assert.equal(line.current, 'collecting', 'the key stopped the prompt');
    // Were the prompt still speaking, five seconds would not end the gather (seven of speech, then five).
    t.ctx.clock.advance(5.1);
    assert.deepEqual(await barged, { kind: 'digits', digits: '1' });

    // say takes its time in auto play: 20 characters are 1.4 seconds.
    const saying = line.say('x'.repeat(20));
    await tick();
    t.ctx.clock.advance(1.3);
    assert.equal(await settled(saying), false);
    t.ctx.clock.advance(0.2);
    assert.deepEqual(await saying, { kind: 'done' });
    await line.close();
    await assert.rejects(line.say('after the close'), /closed/);
  });

  test('a hang-up ends a say and a gather at once (hangup_requested), and every later step with it', async () => {
    const pbx = new SimulatedPbx(t.ctx.clock, 'auto');
    const saying = await newCall();
    const line = lineOf(pbx, saying);
    const longSay = line.say('x'.repeat(500));
    await tick();
    const at = t.ctx.clock.now();
    assert.equal(pbx.hangup(saying.id), true);
    const ended = await longSay;
    assert.equal(ended.kind, 'hangup');
    assert.equal(ended.kind === 'hangup' && ended.cause, 'hangup_requested');
    assert.ok(ended.kind === 'hangup' && ended.at.getTime() >= at.getTime());
    assert.deepEqual(await line.pause(10), ended, 'the caller is gone: the next step ends at once');
    assert.deepEqual(await line.gather({ timeoutSeconds: 5 }), ended);

    const gathering = await newCall();
    const second = lineOf(t.ctx.simulatedPbx, gathering);
    const waiting = second.gather({ timeoutSeconds: 60 });
    await tick();
    t.ctx.simulatedPbx.hangup(gathering.id);
    const gone = await waiting;
    assert.equal(gone.kind === 'hangup' && gone.cause, 'hangup_requested');
    second.press('1');
    assert.deepEqual(
      await second.gather({ numDigits: 1, timeoutSeconds: 5 }),
      gone,
      'keys after the end are not heard',
    );
  });

  test('the test control’s digits: validated, kept when nothing gathers, and into a waiting gather, which answers once the flow moves on', async () => {
    const call = await newCall();
    for (const digits of ['12x', '', 'a', '1'.repeat(65), 12]) {
      const refused = await control(call.id, { event: 'digits', digits });
      assert.equal(refused.status, 400, `${JSON.stringify(digits)}: ${refused.text}`);
    }
    assert.equal((await control(call.id, { event: 'digits' })).status, 400, 'digits without keys');
    const noLine = await control(call.id, { event: 'digits', digits: '1' });
    assert.equal(noLine.status, 409, 'no flow has the call: nobody takes keys');
    assert.equal(noLine.body.code, 'CALL_NOT_ACTIVE');

    const line = lineOf(t.ctx.simulatedPbx, call);
    // Nothing gathers: the keys are kept, and the control answers at once.
    const many = `${'1'.repeat(63)}D`;
    const ahead = await control(call.id, { event: 'digits', digits: many });
    assert.equal(ahead.status, 200, ahead.text);
    assert.equal(ahead.body.data.id, call.id);
    assert.deepEqual(await line.gather({ numDigits: 64, timeoutSeconds: 5 }), {
      kind: 'digits',
      digits: many,
    });

    // A gather waits: keys that do not end it answer at once; the ones that end it answer when the flow next
    // waits on the PBX (here its next gather).
    const menu = line.gather({ timeoutSeconds: 5 });
    await tick();
    assert.equal((await control(call.id, { event: 'digits', digits: '4' })).status, 200);
    const ending = control(call.id, { event: 'digits', digits: '2#' });
    assert.deepEqual(await menu, { kind: 'digits', digits: '42' });
    await sleep(200);
    assert.equal(await settled(ending), false, 'the control waits for the flow to move on');
    const next = line.gather({ numDigits: 1, timeoutSeconds: 5 });
    assert.equal((await ending).status, 200);

    // The caller hangs up during the gather (the test control's completed): normal_clearing.
    // It answers once the platform has taken the end in: here, released the call, as a flow's end does.
    const hangingUp = control(call.id, { event: 'completed' });
    const gone = await next;
    assert.equal(gone.kind, 'hangup');
    assert.equal(gone.kind === 'hangup' && gone.cause, 'normal_clearing');
    assert.equal((await control(call.id, { event: 'digits', digits: '1' })).status, 409, 'the line is gone');
    t.ctx.simulatedPbx.release(call.id);
    const hungUp = await hangingUp;
    assert.equal(hungUp.status, 200, hungUp.text);
  });
});
