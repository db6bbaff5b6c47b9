// The layering of src/ holds (docs/architecture.md, "Layering"): platform/ imports nothing from modules/,
// carriers/ or the app; a module uses another only through its index.ts; nothing below imports the app.
// Lint enforces it (biome.json, noRestrictedImports): these tests run the project's real Biome
// configuration on deliberately bad imports and show that each is refused, and that good ones pass. They also
// walk every import in src/ and show there is no circle of imports.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');
const BIOME = join(ROOT, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');

/** Lints `files` (path → source) in a scratch copy of the project's Biome configuration. */
function lint(files: Record<string, string>): { ok: boolean; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'layering-'));
  try {
    copyFileSync(join(ROOT, 'biome.json'), join(dir, 'biome.json'));
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), source);
    }
    const run = spawnSync(process.execPath, [BIOME, 'lint', '--max-diagnostics=100', ...Object.keys(files)], {
      cwd: dir,
      encoding: 'utf8',
    });
    return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const uses = (specifier: string) => `import { thing } from '${specifier}';\nexport const used = thing;\n`;

describe('lint refuses an import that breaks the layering', () => {
  const refusals: [string, string, string][] = [
    ['platform importing a module', 'src/platform/probe.ts', '../modules/contacts/index.ts'],
    [
      'platform (nested) importing a module',
      'src/platform/http/probe.ts',
      '../../modules/contacts/service.ts',
    ],
    ['platform importing the app', 'src/platform/probe.ts', '../app.ts'],
    ['platform importing the composition root', 'src/platform/probe.ts', '../runtime.ts'],
    ['platform importing a carrier', 'src/platform/probe.ts', '../carriers/carrier.ts'],
    ['a carrier importing a module', 'src/carriers/probe.ts', '../modules/numbers/index.ts'],
    [
      "a module importing another module's inner file",
      'src/modules/contacts/probe.ts',
      '../messaging/service.ts',
    ],
    ['a module importing the app', 'src/modules/contacts/probe.ts', '../../app.ts'],
    ['a module importing the module list', 'src/modules/contacts/probe.ts', '../../modules.ts'],
  ];
  for (const [name, path, specifier] of refusals) {
    test(name, () => {
      const result = lint({ [path]: uses(specifier) });
      assert.equal(result.ok, false, `${path} importing ${specifier} passed lint`);
      assert.match(result.output, /noRestrictedImports/);
    });
  }

  test('the imports the layering allows pass', () => {
    const result = lint({
      'src/modules/contacts/probe.ts': `${uses('../messaging/index.ts')}export * from '../../platform/errors.ts';\nexport * from './service.ts';\nexport * from '../../carriers/carrier.ts';\n`,
      'src/platform/http/probe.ts': `${uses('../errors.ts')}export * from '../../config.ts';\n`,
      'src/carriers/probe.ts': uses('../platform/clock.ts'),
    });
    assert.equal(result.ok, true, result.output);
  });
});

describe('src/ has no circle of imports', () => {
  /** Every relative import and re-export of every TypeScript file under src/, type-only ones included. */
  function importGraph(): Map<string, string[]> {
    const graph = new Map<string, string[]>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.ts')) {
          const source = readFileSync(path, 'utf8');
          const targets = [
            ...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+['"](\.[^'"]+)['"]/g),
          ]
            .concat([...source.matchAll(/(?:^|\n)\s*import\s+['"](\.[^'"]+)['"]/g)])
            .map((match) => relative(ROOT, resolve(dirname(path), match[1]!)));
          graph.set(relative(ROOT, path), targets);
        }
      }
    };
    walk(join(ROOT, 'src'));
    return graph;
  }

  function findCycle(graph: Map<string, string[]>): string[] | undefined {
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (node: string): string[] | undefined => {
      if (state.get(node) === 'done') return undefined;
      if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
      state.set(node, 'open');
      stack.push(node);
      for (const next of graph.get(node) ?? []) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
      stack.pop();
      state.set(node, 'done');
      return undefined;
    };
    for (const node of graph.keys()) {
      const cycle = visit(node);
      if (cycle) return cycle;
    }
    return undefined;
  }

  test('the walker sees imports (a sanity check on the graph itself)', () => {
    const graph = importGraph();
    assert.ok(graph.get('src/app.ts')?.includes('src/platform/errors.ts'));
    assert.ok(graph.get('src/modules.ts')?.includes('src/modules/messaging/index.ts'));
    assert.ok(graph.size > 50);
    assert.deepEqual(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
      ['a', 'b', 'c', 'a'],
    );
  });

  test('no file reaches itself through its imports', () => {
    const cycle = findCycle(importGraph());
    assert.equal(cycle, undefined, `a circle of imports: ${cycle?.join(' → ')}`);
  });
});
