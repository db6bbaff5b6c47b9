// Retention (src/platform/retention.ts): the hourly clean-up removes finished jobs, expired idempotency keys,
// dispatched events, expired sessions, challenges and reset requests, finished webhook deliveries and stale
// import rows once past their windows, and keeps recent rows, pending work, active sessions and the delivery
// log the API shows. Times come from the test clock. Also: one run per hour however many instances book it,
// and a failing rule does not stop the others.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { JobQueue } from '../src/platform/jobs.ts';
import { RETENTION_QUEUE, Retention, retentionKey } from '../src/platform/retention.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createUser, signIn } from './helpers/portal.ts';

const DAY_SECONDS = 24 * 60 * 60;
const HOUR_MS = 60 * 60 * 1000;

describe('retention', () => {
  let t: TestApp;
  let user: { id: string; organizationId: string; email: string; password: string };
  let endpointId: string;
  let counter = 0;
  const id = (prefix: string) => `${prefix}_retention_${++counter}`;
  const db = () => t.ctx.db;

  before(async () => {
    t = await startTestApp({ config: { trustProxy: true } });
  });
  after(() => t.close());

  /** Rows of every kind, made at the clock's now; returns their ids by kind. */
  async function seed() {
    const now = t.ctx.clock.now();
    const later = (seconds: number) => new Date(now.getTime() + seconds * 1000);
    const rows = {
      completedJob: id('job'),
      deadJob: id('job'),
      pendingJob: id('job'),
      idempotencyKey: id('key'),
      dispatchedEvent: id('evt'),
      undispatchedEvent: id('evt'),
      revokedSession: id('ses'),
      challenge: id('chl'),
      resetToken: id('prt'),
      resetRequest: id('prt'),
      finishedDelivery: id('whd'),
      pendingDelivery: id('whd'),
      importId: id('imp'),
    };
    const q = (sql: string, params: unknown[]) => db().query(sql, params);
    for (const [job, status] of [
      [rows.completedJob, 'completed'],
      [rows.deadJob, 'dead'],
      [rows.pendingJob, 'pending'],
    ] as const) {
      await q(
        `INSERT INTO jobs (id, queue, payload, status, run_at, created_at, finished_at)
         VALUES ($1, 'test.unregistered', '{}', $2, $3, $3, $4)`,
        [job, status, now, status === 'pending' ? null : now],
      );
    }
    await q(
      `INSERT INTO idempotency_keys (organization_id, operation, key, request_hash, response, created_at)
       VALUES ($1, 'test.write', $2, 'hash', '{}', $3)`,
      [user.organizationId, rows.idempotencyKey, now],
    );
    await q(
      `INSERT INTO events (id, organization_id, type, data, created_at, dispatched_at)
       VALUES ($1, $3, 'test.event', '{}', $4, $4), ($2, $3, 'test.event', '{}', $4, NULL)`,
      [rows.dispatchedEvent, rows.undispatchedEvent, user.organizationId, now],
    );
    // Revoked now, but its lifetime runs 40 days: until then its token answers TOKEN_REVOKED.
    await q(
      `INSERT INTO sessions (id, user_id, organization_id, created_at, expires_at, revoked_at, revoked_reason)
       VALUES ($1, $2, $3, $4, $5, $4, 'sign_out_everywhere')`,
      [rows.revokedSession, user.id, user.organizationId, now, later(40 * DAY_SECONDS)],
    );
    await q(
      `INSERT INTO login_challenges (id, token_hash, user_id, created_at, expires_at)
       VALUES ($1, $1, $2, $3, $4)`,
      [rows.challenge, user.id, now, later(300)],
    );
    await q(
      `INSERT INTO password_reset_tokens (id, token_hash, user_id, created_at, expires_at)
       VALUES ($1, $1, $3, $4, $5), ($2, NULL, NULL, $4, $5)`,
      [rows.resetToken, rows.resetRequest, user.id, now, later(3600)],
    );
    for (const [delivery, status] of [
      [rows.finishedDelivery, 'succeeded'],
      [rows.pendingDelivery, 'pending'],
    ] as const) {
      await q(
        `INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, body, status,
                                         attempts, last_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, 'test.event', '{}', $5, 1, $6, $6)`,
        [delivery, user.organizationId, endpointId, id('evt'), status, now],
      );
      await q(
        `INSERT INTO webhook_attempts (id, delivery_id, attempt, status_code, duration_ms, created_at)
         VALUES ($1, $2, 1, 200, 5, $3)`,
        [id('wha'), delivery, now],
      );
    }
    await q(
      `INSERT INTO contact_import_rows (import_id, phone, position, row, created_at)
       VALUES ($1, '+15555550100', 1, '{}', $2)`,
      [rows.importId, now],
    );
    return rows;
  }

  const exists = async (table: string, column: string, value: string) =>
    (await db().query(`SELECT 1 FROM ${table} WHERE ${column} = $1`, [value])).length > 0;

  test('removes rows past their windows and keeps recent ones, pending work and what the API shows', async () => {
    const owner = await createUser(t, { role: 'owner' });
    user = owner;
    const oldToken = await signIn(t, owner);
    const created = await t.request('POST', '/api/webhooks', {
      token: oldToken,
      body: { url: 'https://example.com/hooks', events: ['contact.opted_out'] },
    });
    assert.equal(created.status, 201);
    endpointId = created.body.data.id;
    const [oldSession] = await db().query<{ id: string }>('SELECT id FROM sessions WHERE user_id = $1', [
      owner.id,
    ]);
    const old = await seed();

    // 31 days on: past every window (30 days for events and the delivery log, 7 for jobs, 1 for the rest).
    t.ctx.clock.advance(31 * DAY_SECONDS);
    const token = await signIn(t, owner);
    const recent = await seed();

    await t.ctx.retention.start();
    await t.ctx.jobs.drain();

    const gone: [string, string, string][] = [
      ['jobs', 'id', old.completedJob],
      ['jobs', 'id', old.deadJob],
      ['idempotency_keys', 'key', old.idempotencyKey],
      ['events', 'id', old.dispatchedEvent],
      ['sessions', 'id', oldSession!.id],
      ['login_challenges', 'id', old.challenge],
      ['password_reset_tokens', 'id', old.resetToken],
      ['password_reset_tokens', 'id', old.resetRequest],
      ['webhook_deliveries', 'id', old.finishedDelivery],
      ['webhook_attempts', 'delivery_id', old.finishedDelivery],
      ['contact_import_rows', 'import_id', old.importId],
    ];
    for (const [table, column, value] of gone) {
      assert.equal(await exists(table, column, value), false, `${table} ${value} should be gone`);
    }
    const kept: [string, string, string][] = [
      ['jobs', 'id', old.pendingJob],
      ['events', 'id', old.undispatchedEvent],
      ['sessions', 'id', old.revokedSession],
      ['webhook_deliveries', 'id', old.pendingDelivery],
      ['webhook_attempts', 'delivery_id', old.pendingDelivery],
      ...Object.entries(recent)
        .filter(([kind]) => !kind.startsWith('pending') && kind !== 'undispatchedEvent')
        .map(([kind, value]): [string, string, string] => {
          const table: Record<string, [string, string]> = {
            completedJob: ['jobs', 'id'],
            deadJob: ['jobs', 'id'],
            idempotencyKey: ['idempotency_keys', 'key'],
            dispatchedEvent: ['events', 'id'],
            revokedSession: ['sessions', 'id'],
            challenge: ['login_challenges', 'id'],
            resetToken: ['password_reset_tokens', 'id'],
            resetRequest: ['password_reset_tokens', 'id'],
            finishedDelivery: ['webhook_deliveries', 'id'],
            importId: ['contact_import_rows', 'import_id'],
          };
          return [...table[kind]!, value];
        }),
    ];
    for (const [table, column, value] of kept) {
      assert.equal(await exists(table, column, value), true, `${table} ${value} should stay`);
    }

    // The active session still works, and the delivery log shows the recent and the pending deliveries.
    const log = await t.request('GET', `/api/webhooks/${endpointId}/deliveries?limit=100`, { token });
    assert.equal(log.status, 200);
    const shown = log.body.data.map((delivery: { id: string }) => delivery.id).sort();
    assert.deepEqual(shown, [old.pendingDelivery, recent.finishedDelivery, recent.pendingDelivery].sort());

    // The run booked the next one, at the start of the next hour.
    const next = new Date(Math.floor(t.ctx.clock.nowMs() / HOUR_MS) * HOUR_MS + HOUR_MS);
    const booked = await db().query<{ run_at: Date }>(
      `SELECT run_at FROM jobs WHERE queue = $1 AND status = 'pending'`,
      [RETENTION_QUEUE],
    );
    assert.deepEqual(
      booked.map((job) => job.run_at.getTime()),
      [next.getTime()],
    );
  });

  test('one run per hour however many instances book it', async () => {
    const second = await startTestApp({ database: t.database });
    try {
      await Promise.all([
        t.ctx.retention.scheduleNext(),
        second.ctx.retention.scheduleNext(),
        t.ctx.retention.start(),
        second.ctx.retention.start(),
      ]);
      const hour = async (at: Date) =>
        db().query('SELECT id FROM jobs WHERE queue = $1 AND dedupe_key = $2', [
          RETENTION_QUEUE,
          retentionKey(at),
        ]);
      const now = t.ctx.clock.now();
      assert.equal((await hour(now)).length, 1);
      assert.equal((await hour(new Date(now.getTime() + HOUR_MS))).length, 1);

      // An hour on, both instances drain: the hour's job runs once and books the next hour once.
      t.ctx.clock.advance(3600);
      second.ctx.clock.advance(3600);
      await Promise.all([t.ctx.jobs.drain(), second.ctx.jobs.drain()]);
      const later = t.ctx.clock.now();
      const [ran] = await db().query<{ status: string; attempts: number }>(
        'SELECT status, attempts FROM jobs WHERE dedupe_key = $1',
        [retentionKey(later)],
      );
      assert.deepEqual(ran, { status: 'completed', attempts: 1 });
      assert.equal((await hour(new Date(later.getTime() + HOUR_MS))).length, 1);
      const open = await db().query(`SELECT 1 FROM jobs WHERE queue = $1 AND status = 'pending'`, [
        RETENTION_QUEUE,
      ]);
      assert.equal(open.length, 1);
    } finally {
      await second.close();
    }
  });

  test('a failing rule is logged and the others still run', async () => {
    const errors: unknown[] = [];
    const log = { error: (entry: unknown) => errors.push(entry), info: () => {} };
    const ran: string[] = [];
    const retention = new Retention({
      db: db(),
      clock: t.ctx.clock,
      jobs: new JobQueue(db(), t.ctx.clock),
      log: log as never,
      rules: [
        {
          name: 'first',
          run: async () => {
            ran.push('first');
            return 1;
          },
        },
        {
          name: 'broken',
          run: async () => {
            throw new Error('boom');
          },
        },
        {
          name: 'last',
          run: async () => {
            ran.push('last');
            return 2;
          },
        },
      ],
    });
    assert.deepEqual(await retention.run(), { first: 1, last: 2 });
    assert.deepEqual(ran, ['first', 'last']);
    assert.equal(errors.length, 1);
    assert.equal((errors[0] as { rule: string }).rule, 'broken');
  });
});
