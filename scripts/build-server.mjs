// Compiles the server (src/) to JavaScript in dist/, which `npm start` runs. tsc emits each file beside where its
// source sits (rootDir src, so dist/ mirrors src/ at the same depth, and paths built from import.meta.url, such
// as ../../../migrations, still reach the repository's folders) and rewrites the relative `.ts` imports to `.js`.
// Files that are not TypeScript (the vendored phone-number time zones, licences) are copied as they are.
// Plain JavaScript so that it runs before anything is built; run it as `npm run build`. docs/architecture.md says why tsc.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// A file removed from src/ must not live on in dist/.
rmSync(join(root, 'dist'), { recursive: true, force: true });
// Run through npm (npm run build), whose PATH has node_modules/.bin.
execFileSync('tsc', ['-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(join(root, 'src'), join(root, 'dist'), {
  recursive: true,
  filter: (source) => !source.endsWith('.ts'),
});
