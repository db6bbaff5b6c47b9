// AI agents (issue 16's targets), in one process on the bench's own database.
//   1. Search latency over CHUNKS chunks (10,000): SEARCHES questions of four words drawn from the corpus's
//      vocabulary, one at a time, through KnowledgeService.search (the query the search endpoint and every
//      agent turn make): p50 and p95. Baseline, same run: the same number of primary-key reads of one chunk
//      (the cheapest query the engine answers), so the ratio says what full-text ranking costs over a lookup.
//   2. Chat turns per second of the offline brain: AgentBrain.reply for a question, CONCURRENCY at a time, for
//      TURN_SECONDS; each turn is a search plus the ranking of the best chunk's sentences. Baseline, same run:
//      searches alone at the same concurrency.
// Run: npm run bench:agents   CHUNKS (10000), SEARCHES (500), CONCURRENCY (8), TURN_SECONDS (5), DATABASE_URL
// for PostgreSQL (a scratch database is created and dropped).
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { createRuntime } from '../src/runtime.ts';
import { UNLIMITED_SENDER } from './fixtures.ts';
import { useScratchDatabase } from './scratch-database.ts';

const CHUNKS = Number(process.env.CHUNKS ?? 10_000);
const SEARCHES = Number(process.env.SEARCHES ?? 500);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const TURN_SECONDS = Number(process.env.TURN_SECONDS ?? 5);
const CHUNKS_PER_DOCUMENT = 10;

const config = loadConfig({
  APP_ENV: 'development',
  DATA_DIR: 'memory://',
  ADMIN_TOKEN: 'bench-admin-token-0123456789',
  ...process.env,
  LOG_LEVEL: 'silent',
});
const scratch = await useScratchDatabase(config, 'bench_agents');
const db = await openDatabase(config);
await migrate(db);
const ctx = createRuntime(config, db, pino({ level: 'silent' }));
const progress = (what: string) => process.stderr.write(`[${new Date().toISOString()}] ${what}\n`);

// A deterministic corpus: sentences of words from a 3,000-word vocabulary (Zipf-like: some words common).
let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const syllables = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'pe', 'da', 'fi', 'go', 'hu', 'ja', 'ze'];
const vocabulary = Array.from({ length: 3000 }, (_, i) => {
  let word = '';
  for (let n = i + 1, parts = 0; n > 0 || parts < 3; n = Math.floor(n / 15), parts++)
    word += syllables[n % 15];
  return word;
});
const word = () => vocabulary[Math.floor(vocabulary.length * random() ** 2)]!;
const sentence = () => `${Array.from({ length: 8 + Math.floor(random() * 8) }, word).join(' ')}.`;
const chunkText = () => Array.from({ length: 8 }, sentence).join(' ');

progress(`indexing ${CHUNKS} chunks`);
const org = await ctx.organizations.create({ name: 'Bench agents', ...UNLIMITED_SENDER });
const base = await ctx.knowledge.create(org.id, { name: 'Corpus' });
for (let d = 0; d < CHUNKS / CHUNKS_PER_DOCUMENT; d++) {
  const id = `doc_bench_${d}`;
  await db.query(
    `INSERT INTO knowledge_documents (id, knowledge_base_id, organization_id, title, source, content, chunk_count,
                                      created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'text', '', $5, now(), now())`,
    [id, base.id, org.id, `${word()} ${word()}`, CHUNKS_PER_DOCUMENT],
  );
  await ctx.knowledge.store.index(db, id, Array.from({ length: CHUNKS_PER_DOCUMENT }, chunkText));
}
await db.query('ANALYZE knowledge_chunks');
const agent = await ctx.agents.create(org, { name: 'Bench', knowledgeBaseIds: [base.id] });
const profile = await ctx.agents.profile(org.id, agent.id);
const question = () => `What about ${word()} ${word()} and ${word()} ${word()}?`;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
async function timed(run: () => Promise<unknown>, times: number): Promise<number[]> {
  const durations: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await run();
    durations.push(performance.now() - started);
  }
  return durations;
}
async function perSecond(run: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const until = performance.now() + TURN_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        await run();
        done++;
      }
    }),
  );
  return done / TURN_SECONDS;
}

progress('search latency');
await timed(() => ctx.knowledge.search(org.id, [base.id], question(), 5), 50); // warm-up
const lookups = await timed(
  () =>
    db.query('SELECT text FROM knowledge_chunks WHERE document_id = $1 AND position = $2', [
      `doc_bench_${Math.floor(random() * (CHUNKS / CHUNKS_PER_DOCUMENT))}`,
      Math.floor(random() * CHUNKS_PER_DOCUMENT),
    ]),
  SEARCHES,
);
const searches = await timed(() => ctx.knowledge.search(org.id, [base.id], question(), 5), SEARCHES);
const hits = (await ctx.knowledge.search(org.id, [base.id], question(), 5)).length;

progress('chat turns');
const searchesPerSecond = await perSecond(() => ctx.knowledge.search(org.id, [base.id], question(), 3));
const turnsPerSecond = await perSecond(() =>
  ctx.brain.reply(profile, [{ role: 'user', content: question() }]),
);

const engine = config.databaseUrl ? 'PostgreSQL' : 'PGlite';
const ms = (value: number) => `${value.toFixed(2)} ms`;
console.log(
  `\nAgents on ${engine}, ${CHUNKS} chunks (${CHUNKS / CHUNKS_PER_DOCUMENT} documents); a search returns ${hits} hits`,
);
console.log(
  `search:  p50 ${ms(percentile(searches, 50))}, p95 ${ms(percentile(searches, 95))} over ${SEARCHES} questions`,
);
console.log(
  `baseline primary-key read: p50 ${ms(percentile(lookups, 50))}, p95 ${ms(percentile(lookups, 95))}; ` +
    `search p50 is ${(percentile(searches, 50) / percentile(lookups, 50)).toFixed(1)}× a lookup`,
);
console.log(
  `chat turns (offline brain, ${CONCURRENCY} at a time): ${turnsPerSecond.toFixed(0)}/s; ` +
    `baseline searches alone: ${searchesPerSecond.toFixed(0)}/s (${(turnsPerSecond / searchesPerSecond).toFixed(2)}×)`,
);

await ctx.jobs.stop();
await ctx.rateLimiter.store.close();
await db.close();
await scratch.drop();
