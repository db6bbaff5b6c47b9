// The rule every JSON body and every imported row passes (src/platform/text.ts): no NUL, no UTF-16 surrogate
// without its pair, in values and keys alike, reported by the path of the first one found.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findUnstorableText } from '../src/platform/text.ts';

test('NUL and lone surrogates are found by path; pairs, bytes and ordinary text pass', () => {
  assert.equal(findUnstorableText('plain text, emoji 😀, accents é', 'body'), undefined);
  assert.equal(findUnstorableText('a\u0000b', 'body'), 'body');
  assert.equal(findUnstorableText({ name: 'x\uD800' }, 'body'), 'body.name', 'a high surrogate alone');
  assert.equal(findUnstorableText({ name: '\uDC00x' }, 'body'), 'body.name', 'a low surrogate alone');
  assert.equal(
    findUnstorableText({ name: '\uDC00\uD800' }, 'body'),
    'body.name',
    'a pair the wrong way round',
  );
  assert.equal(findUnstorableText({ name: '\uD83D\uDE00' }, 'body'), undefined, 'a pair');
  assert.equal(findUnstorableText({ a: { b: ['ok', 'bad\u0000'] } }, 'body'), 'body.a.b.1');
  assert.equal(findUnstorableText({ ok: 'fine', 'k\u0000ey': 'fine' }, 'body'), 'body', 'a key: its object');
  assert.equal(
    findUnstorableText({ first: 'a\u0000', second: 'b\u0000' }, 'q'),
    'q.first',
    'the first in order',
  );
  assert.equal(findUnstorableText({ data: Buffer.from([0, 0xd8]) }, 'body'), undefined, 'bytes are not text');
  assert.equal(findUnstorableText([null, 1, true, { x: null }], 'body'), undefined);
});

test('a value nested far deeper than any stack is walked without recursion', () => {
  let deep: unknown = 'end\u0000';
  for (let i = 0; i < 100_000; i++) deep = { d: deep };
  const found = findUnstorableText(deep, 'body');
  assert.ok(found?.startsWith('body.d.d.'));
  assert.equal(found!.split('.').length, 100_001);
});
