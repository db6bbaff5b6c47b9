// Voice-to-voice latency of an AI agent over real SIP (issue 34's bench): the whole product in one process with
// its SIP listener, the offline stack (the offline brain on the dental office's knowledge base,
// test/fixtures/dental-knowledge.json; pocketsphinx recognising the caller; espeak-ng speaking). SIPp plays the
// trunk and calls the number routed to the agent; the bench is the caller's phone: it sends the fixture's
// questions, spoken by espeak-ng, as 8 kHz µ-law RTP (then quiet, as a phone sends all along), and times from
// the end of each question's voiced audio to the first audible packet of the agent's answer. Each agent turn's
// stages (end of turn, recognition, brain, first audio) come from the agent call's transcript.
// Baseline, same run, same questions: the pipeline as it was (a fixed 800 ms of quiet, then pocketsphinx on the
// whole utterance with that quiet, the brain's whole reply, espeak-ng's whole synthesis, one after another),
// its stages timed on this machine one by one.
// Run: npm run bench:agent-turns   CALLS (4), QUESTIONS (5 per call: CALLS × QUESTIONS turns), DATABASE_URL.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import g711 from 'alawmulaw';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { concatenate, encodeWav, silence, synthesise } from '../src/modules/voice/audio.ts';
import { RtpSession } from '../src/modules/voice/sip/rtp.ts';
import { PocketsphinxTranscriber } from '../src/modules/voice/transcribers.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { freePort, runSipp, trunkCall } from '../test/helpers/sipp.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const CALLS = Number(process.env.CALLS ?? 4);
const QUESTIONS = Number(process.env.QUESTIONS ?? 5);
/** What counts as audible in what the agent sends (16-bit samples). */
const AUDIBLE = 64;

const fixture = JSON.parse(
  readFileSync(new URL('../test/fixtures/dental-knowledge.json', import.meta.url), 'utf8'),
) as { documents: { title: string; content: string }[]; questions: { question: string }[] };
if (!(await synthesise('test'))) throw new Error('espeak-ng is needed');
if (!(await PocketsphinxTranscriber.available())) throw new Error('pocketsphinx is needed');

const sipPort = await freePort();
const trunkPort = await freePort();
const config = loadConfig({
  APP_ENV: 'development',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: 'bench-admin-token-0123456789',
  ...process.env,
  SIP_TRUNK_URI: `sip:127.0.0.1:${trunkPort}`,
  TRANSCRIPTION_URL: '',
  AGENT_LLM_URL: '',
  LOG_LEVEL: 'silent',
});
const scratch = await useScratchDatabase(config, 'bench_agent_turns');
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
ctx.sipListener.start({ port: sipPort, host: '127.0.0.1' });
const progress = (what: string) => process.stderr.write(`[${new Date().toISOString()}] ${what}\n`);

// Setup (not measured): the office, its knowledge base, the agent, the number routed to it.
const org = await ctx.organizations.create({ name: 'Bench agent turns', ...UNLIMITED_SENDER });
const number = await ctx.numbers.add(org.id, { number: '+18005550100', type: 'toll_free' });
await ctx.calls.setRegion('us', 1_000_000);
const base = await ctx.knowledge.create(org.id, { name: 'Bright Smile Dental' });
for (const document of fixture.documents) await ctx.knowledge.addText(org.id, base.id, document);
const agent = await ctx.agents.create(org, {
  name: 'Front desk',
  firstMessage: 'Bright Smile Dental, how can I help?',
  knowledgeBaseIds: [base.id],
  recordCalls: false,
  maxDurationSeconds: 7200,
  endCallPhrases: ['goodbye'],
});
await ctx.numbers.update(org, number.id, { voiceRoute: { type: 'agent', target: agent.id } });
const profile = await ctx.agents.profile(org.id, agent.id);

const questions = fixture.questions.map((q) => q.question);
const spoken = new Map<string, Int16Array>();
for (const question of questions) spoken.set(question, (await synthesise(question))!);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const lastVoiced = (samples: Int16Array) => {
  let at = samples.length - 1;
  while (at > 0 && Math.abs(samples[at]!) <= AUDIBLE) at--;
  return at;
};

interface Turn {
  question: string;
  voiceToVoiceMs: number;
  latency?: Record<string, number>;
}
const turns: Turn[] = [];

async function call(first: number): Promise<void> {
  const phone = await RtpSession.open('127.0.0.1', { address: '127.0.0.1', port: 9, codec: 'PCMU' }, 600);
  const audible: number[] = [];
  phone.onAudio = (samples) => {
    if (samples.some((sample) => Math.abs(sample) > AUDIBLE)) audible.push(performance.now());
  };
  const known = new Set(
    (await ctx.calls.page(org.id, { limit: 100 }, 'api')).data.map((row: { id: string }) => row.id),
  );
  const trunk = runSipp(sipPort, {
    username: 'trunk',
    password: 'unused',
    localPort: trunkPort,
    mediaPort: await freePort(),
    callee: number.number,
    scenario: trunkCall({ sdpMediaPort: phone.port, untilBye: true }),
    timeoutSeconds: 600,
  });
  let callId: string | undefined;
  for (let i = 0; i < 200 && !callId; i++) {
    const rows = (await ctx.calls.page(org.id, { limit: 100 }, 'api')).data as { id: string }[];
    callId = rows.find((row) => !known.has(row.id))?.id;
    if (!callId) await sleep(50);
  }
  if (!callId) throw new Error('the call did not arrive');
  const quietAfter = async (since: number) => {
    for (let i = 0; i < 1200; i++) {
      const last = audible.at(-1) ?? 0;
      if (last > since && performance.now() - last >= 1000) return;
      await sleep(25);
    }
    throw new Error('the agent did not finish speaking');
  };
  await quietAfter(0);
  for (let q = 0; q < QUESTIONS; q++) {
    const question = questions[(first + q) % questions.length]!;
    const speech = spoken.get(question)!;
    const sending = performance.now();
    const speechEnd = sending + (lastVoiced(speech) / 8000) * 1000;
    await phone.play(concatenate(speech, silence(2)));
    const answeredAt = audible.find((at) => at > speechEnd);
    if (answeredAt === undefined) await quietAfter(speechEnd);
    const heard = audible.find((at) => at > speechEnd)!;
    turns.push({ question, voiceToVoiceMs: heard - speechEnd });
    await quietAfter(heard);
  }
  const row = (await ctx.agentCalls.page(org.id, { limit: 100 }, 'api')).data.find(
    (agentCall: { callId: string }) => agentCall.callId === callId,
  ) as { transcript: { role: string; latency?: Record<string, number> }[] };
  const stages = row.transcript.filter((turn) => turn.role === 'agent').slice(1);
  const mine = turns.slice(-QUESTIONS);
  // The "didn't catch that" turns carry no stages: pair by order only the turns that do.
  for (const [i, turn] of mine.entries()) turn.latency = stages[i]?.latency;
  await ctx.calls.hangup(org.id, callId).catch(() => undefined);
  await trunk.catch(() => undefined);
  phone.close();
}

progress(`${CALLS} calls × ${QUESTIONS} questions over SIP`);
for (let c = 0; c < CALLS; c++) {
  await call(c * QUESTIONS);
  progress(`call ${c + 1} done`);
}

progress('baseline: the old serial pipeline, stage by stage');
const transcriber = new PocketsphinxTranscriber();
const baseline: number[] = [];
for (const turn of turns) {
  const speech = g711.mulaw.decode(g711.mulaw.encode(spoken.get(turn.question)!));
  const utterance = concatenate(silence(0.3), speech, silence(0.8));
  let started = performance.now();
  const text = (await transcriber.transcribe(encodeWav(utterance)).catch(() => '')).trim();
  const recognitionMs = performance.now() - started;
  started = performance.now();
  const reply = await ctx.brain.reply(profile, [{ role: 'user', content: text || turn.question }]);
  const brainMs = performance.now() - started;
  started = performance.now();
  await synthesise(reply.reply);
  baseline.push(800 + recognitionMs + brainMs + (performance.now() - started));
}

const ms = (value: number) => `${Math.round(value)} ms`;
const v2v = turns.map((turn) => turn.voiceToVoiceMs);
const withStages = turns.filter((turn) => turn.latency);
const stage = (name: string) => withStages.map((turn) => turn.latency![name]!);
console.log(`\nAgent turns over SIP, offline stack, ${turns.length} turns (${CALLS} calls)`);
console.log(`voice to voice (RTP, end of the caller's speech to the agent's first audible packet):`);
console.log(`  p50 ${ms(percentile(v2v, 50))}, p95 ${ms(percentile(v2v, 95))}, max ${ms(Math.max(...v2v))}`);
console.log(`stages (p50 / p95, ${withStages.length} turns that answered from the brain):`);
for (const name of ['endOfTurnMs', 'recognitionMs', 'brainMs', 'firstAudioMs', 'totalMs'])
  console.log(`  ${name.padEnd(14)} ${ms(percentile(stage(name), 50))} / ${ms(percentile(stage(name), 95))}`);
console.log(
  `baseline (800 ms fixed end, pocketsphinx on the whole utterance, brain, espeak-ng, serially): ` +
    `p50 ${ms(percentile(baseline, 50))}, p95 ${ms(percentile(baseline, 95))}`,
);

ctx.sipListener.stop();
await ctx.jobs.stop();
await ctx.rateLimiter.store.close();
await db.close();
await scratch.drop();
process.exit(0);
