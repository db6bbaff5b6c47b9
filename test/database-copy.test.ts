// Database.copyIn: COPY's text format carries every value a bulk write can be handed, unchanged, on both
// engines (embedded PGlite always; the PostgreSQL server too when DATABASE_URL names one). Hostile values
// (the format's own escapes, quotes, line breaks, a value that reads as NULL or as the end of data, unicode
// beyond the BMP) come back byte for byte; a value COPY cannot carry (NUL, a lone surrogate) is refused and
// the statement writes nothing; a COPY the table refuses writes nothing and leaves the connection usable.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type CopyValue, CopyValueError } from '../src/platform/db/index.ts';
import { type FreshDatabase, freshDatabase } from './helpers/app.ts';

const HOSTILE_TEXTS = [
  '',
  ' ',
  'plain',
  "O'Brien",
  'say "hi"',
  '"',
  '""',
  'a,b;c|d',
  'back\\slash',
  '\\',
  '\\\\',
  '\\N',
  'N',
  'NULL',
  '\\.',
  '.',
  'tab\there',
  '\t',
  'line\nbreak',
  '\n',
  'crlf\r\nend',
  '\r',
  '\\n is not a newline',
  'trailing backslash\\',
  '\b\f\v\u0001\u001f\u007f',
  'Zoë Ångström, 東京, Привет, مرحبا',
  '😀 emoji 👩‍👩‍👧 family',
  '\uFEFFbyte order mark',
  'line\u2028separator\u2029paragraph',
  'e\u0301 combining',
  '\uFFFD replacement',
  'x'.repeat(100_000),
];

interface Stored {
  position: number;
  label: string | null;
  /** The label's UTF-8 bytes as the database holds them (base64), apart from how the driver decodes text. */
  bytes: string | null;
  document: unknown;
  at: Date | null;
  flag: boolean | null;
}

for (const engine of ['pglite', 'postgres'] as const) {
  const serverUrl = engine === 'pglite' ? '' : process.env.DATABASE_URL;
  describe(`Database.copyIn on ${engine}`, {
    skip: serverUrl === undefined && 'DATABASE_URL is not set',
  }, () => {
    let fresh: FreshDatabase;
    before(async () => {
      fresh = await freshDatabase(serverUrl);
      await fresh.db.exec(`CREATE TABLE copy_probe (
        position integer PRIMARY KEY, label text, document jsonb, at timestamptz, flag boolean)`);
    });
    after(() => fresh.drop());

    const stored = async () =>
      fresh.db.query<Stored>(
        `SELECT position, label, encode(convert_to(label, 'UTF8'), 'base64') AS bytes, document, at, flag
           FROM copy_probe ORDER BY position`,
      );
    const columns = ['position', 'label', 'document', 'at', 'flag'];

    test('hostile texts and JSON documents come back unchanged; NULL stays apart from the text \\N', async () => {
      await fresh.db.exec('TRUNCATE copy_probe');
      const at = new Date('2026-11-27T09:15:30.123Z');
      const rows: CopyValue[][] = HOSTILE_TEXTS.map((text, i) => [
        i,
        text,
        JSON.stringify({ text, nested: [text, { again: text }] }),
        at,
        i % 2 === 0,
      ]);
      rows.push([HOSTILE_TEXTS.length, null, null, null, null]);
      assert.equal(await fresh.db.copyIn('copy_probe', columns, rows), rows.length);
      const back = await stored();
      assert.equal(back.length, rows.length);
      HOSTILE_TEXTS.forEach((text, i) => {
        const what = `text ${i} ${JSON.stringify(text.slice(0, 40))}`;
        assert.equal(
          back[i]!.bytes?.replaceAll('\n', ''),
          Buffer.from(text, 'utf8').toString('base64'),
          what,
        );
        // PGlite decodes a result's text without a leading U+FEFF (a TextDecoder's default), though it stored it.
        if (!(engine === 'pglite' && text.startsWith('\uFEFF'))) assert.equal(back[i]!.label, text, what);
        assert.deepEqual(back[i]!.document, { text, nested: [text, { again: text }] });
        assert.equal(back[i]!.at?.toISOString(), at.toISOString());
        assert.equal(back[i]!.flag, i % 2 === 0);
      });
      assert.deepEqual(back.at(-1), {
        position: HOSTILE_TEXTS.length,
        label: null,
        bytes: null,
        document: null,
        at: null,
        flag: null,
      });
    });

    test('a NUL or a lone surrogate is refused before anything is written', async () => {
      await fresh.db.exec('TRUNCATE copy_probe');
      for (const bad of [
        'nul\u0000inside',
        '\u0000',
        'lone \uD83D high',
        'lone \uDE00 low',
        '\uDE00\uD83D',
      ]) {
        await assert.rejects(
          fresh.db.copyIn('copy_probe', columns, [
            [1, 'fine', null, null, null],
            [2, bad, null, null, null],
          ]),
          CopyValueError,
        );
      }
      await assert.rejects(fresh.db.copyIn('copy_probe', columns, [[1, 'too few']]), CopyValueError);
      await assert.rejects(
        fresh.db.copyIn('copy_probe', columns, [[1, 'bad date', null, new Date(Number.NaN), null]]),
        CopyValueError,
      );
      assert.deepEqual(await stored(), []);
    });

    test('a COPY the table refuses writes nothing, and the database answers the next statement', async () => {
      await fresh.db.exec('TRUNCATE copy_probe');
      await fresh.db.copyIn('copy_probe', columns, [[1, 'first', null, null, null]]);
      // Many rows before the duplicate, so that on PostgreSQL the refusal can arrive while rows are still sent.
      const rows: CopyValue[][] = Array.from({ length: 20_000 }, (_, i) => [
        i + 2,
        `row ${i}`,
        null,
        null,
        null,
      ]);
      rows.push([1, 'duplicate', null, null, null]);
      await assert.rejects(fresh.db.copyIn('copy_probe', columns, rows), { code: '23505' });
      await assert.rejects(
        fresh.db.copyIn('copy_probe', columns, [['not a number', 'x', null, null, null]]),
        {
          code: '22P02',
        },
      );
      // Every pooled connection still works (PostgreSQL): more statements than the pool has connections.
      for (let i = 0; i < 12; i++) {
        const [count] = await fresh.db.query<{ n: number }>('SELECT count(*)::int AS n FROM copy_probe');
        assert.equal(count!.n, 1);
      }
      assert.equal(await fresh.db.copyIn('copy_probe', columns, []), 0);
      assert.equal(await fresh.db.copyIn('copy_probe', columns, [[2, 'after', null, null, null]]), 1);
      assert.deepEqual(
        (await stored()).map((row) => row.label),
        ['first', 'after'],
      );
    });
  });
}
