// The console's request and response types are generated from the server's OpenAPI document
// (console/scripts/generate.ts, through src/shapes.ts): this fails when the committed file is stale, so a
// change to a portal shape is seen by the console's type check rather than by a user.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { consoleSources, staleConsoleFiles } from '../console/scripts/generate.ts';
import { serverDocument } from '../sdk/scripts/generate.ts';

test('the console’s generated types match the server’s /openapi.json', async () => {
  const started = performance.now();
  const stale = await staleConsoleFiles(await consoleSources(await serverDocument()));
  assert.deepEqual(stale, [], 'run: npm run generate -w console');
  console.log(`# regenerated in ${Math.round(performance.now() - started)} ms`);
});
