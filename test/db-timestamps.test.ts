// timestamptz values read from PostgreSQL (src/platform/db/timestamps.ts): the fast reading of UTC values gives
// the very Date node-postgres's own parser gives, and every other shape still goes to that parser. Then on a
// real server (DATABASE_URL when set, else a private cluster): values in UTC and in another session time zone
// read as the instants the server holds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { PostgresDatabase } from '../src/platform/db/index.ts';
import { generalTimestampParser, parseUtcTimestamp, readTimestamp } from '../src/platform/db/timestamps.ts';
import {
  type PrivatePostgres,
  privatePostgresMissing,
  startPrivatePostgres,
} from './helpers/private-servers.ts';

const general = generalTimestampParser as (text: string) => Date | number | null;

/** A deterministic spread of UTC timestamps in PostgreSQL's output, with 0 to 6 fraction digits. */
function utcSamples(count: number): string[] {
  const samples: string[] = [];
  let seed = 7;
  const next = (bound: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % bound;
  };
  const two = (n: number) => String(n).padStart(2, '0');
  for (let i = 0; i < count; i++) {
    const year = 1000 + next(9000);
    const date = `${year}-${two(1 + next(12))}-${two(1 + next(28))}`;
    const time = `${two(next(24))}:${two(next(60))}:${two(next(60))}`;
    const places = next(7);
    const fraction = places === 0 ? '' : `.${String(next(10 ** places)).padStart(places, '0')}`;
    samples.push(`${date} ${time}${fraction}+00`);
  }
  return samples;
}

describe('reading timestamptz text', () => {
  test('a UTC value reads as the same instant as node-postgres reads it, to the millisecond', () => {
    const samples = [
      ...utcSamples(20_000),
      '2026-11-27 18:15:13+00',
      '2026-11-27 18:15:13.1+00',
      '2026-11-27 18:15:13.999999+00',
      '2024-02-29 23:59:59.5+00',
      '1000-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999999+00',
    ];
    for (const text of samples) {
      const fast = parseUtcTimestamp(text);
      assert.ok(fast, `read quickly: ${text}`);
      assert.equal(fast.getTime(), (general(text) as Date).getTime(), text);
    }
  });

  test('every other shape is left to the general parser, which reads it as before', () => {
    assert.equal(pg.types.getTypeParser(1184), readTimestamp, 'installed for timestamptz');
    const parse = readTimestamp;
    const others = [
      '2026-11-27 23:45:13.25+05:30',
      '2026-11-27 10:15:13-08',
      '2026-11-27 18:15:13.123+01',
      '0099-01-01 00:00:00+00',
      '0001-01-01 00:00:00+00 BC',
      '12026-11-27 18:15:13+00',
      'infinity',
      '-infinity',
      '2026-11-27 18:15:13.+00',
      '2026-11-27 18:15:1x+00',
      '2026-11-27T18:15:13+00',
    ];
    for (const text of others) {
      assert.equal(parseUtcTimestamp(text), undefined, text);
      const expected = general(text);
      const actual = parse(text);
      if (expected instanceof Date) assert.equal((actual as Date).getTime(), expected.getTime(), text);
      else assert.deepEqual(actual, expected, text);
    }
  });
});

const shared = process.env.DATABASE_URL;
const missing = shared ? undefined : privatePostgresMissing();

describe('timestamptz from a server', { skip: missing && `${missing} and DATABASE_URL is not set` }, () => {
  let server: PrivatePostgres | undefined;
  let db: PostgresDatabase;

  before(async () => {
    if (!shared) server = await startPrivatePostgres();
    db = PostgresDatabase.open(shared ?? server!.url);
  });
  after(async () => {
    await db?.close();
    await server?.stop();
  });

  for (const zone of ['UTC', 'Asia/Kolkata', 'America/Los_Angeles']) {
    test(`values written in the session time zone ${zone} read as the instants the server holds`, async () => {
      const rows = await db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('TimeZone', $1, true)`, [zone]);
        return tx.query<{ at: Date; ms: number }>(
          `SELECT at, floor(extract(epoch FROM at) * 1000)::int8 AS ms
             FROM (VALUES (timestamptz '2026-11-27 18:15:13.123456+00'), (timestamptz '2026-11-27 18:15:13+00'),
                          (timestamptz '1999-12-31 23:59:59.9+00'), (timestamptz '2024-02-29 12:00:00.05+00'),
                          (now())) AS v (at)`,
        );
      });
      for (const row of rows) {
        assert.ok(row.at instanceof Date);
        assert.equal(row.at.getTime(), row.ms);
      }
    });
  }
});
