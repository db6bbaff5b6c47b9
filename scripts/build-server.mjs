// Compiles the server (src/) to JavaScript in dist/, which `npm start` runs. Two steps:
// 1. tsc emits each file beside where its source sits (rootDir src, so dist/ mirrors src/ at the same depth, and
//    paths built from import.meta.url, such as ../../../migrations, still reach the repository's folders) and
//    rewrites the relative `.ts` imports to `.js`. Files that are not TypeScript (the vendored phone-number time
//    zones, the recogniser's telephone-band files, licences) are copied as they are. Scripts run on their own
//    (reseal-secrets.js) and the entry point (main.js) are this output.
// 2. esbuild bundles what main.js loads, serve.ts and everything it imports, into dist/serve.js (over tsc's), with
//    the pure-JavaScript packages inside it: loading ~1,400 modules one by one (typebox alone is 683 files) was
//    half of the start's CPU on Node 20, and one file of the same code loads in about half the time
//    (docs/performance.md). Packages that find files of their own next to their code (WebAssembly, native
//    addons, worker scripts, static assets) or that load only when configured stay outside (EXTERNAL). Each
//    bundled source file's `import.meta.url` is rewritten to the URL its own compiled file has in the mirror,
//    so the paths built from it do not move; modules loaded with `import()` become chunks beside serve.js (same
//    depth, so the rewrite holds for them too) and still load only when asked for.
// Plain JavaScript so that it runs before anything is built; run it as `npm run build`. docs/architecture.md says why.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

/** Packages loaded from node_modules at run time rather than bundled, and why. */
const EXTERNAL = [
  '@electric-sql/pglite', // its WebAssembly and data files, found from its own module's URL
  '@node-rs/*', // a native addon
  '@echogarden/*', // the voice activity detector's WebAssembly
  '@scalar/*', // the API reference page's assets
  'werift', // WebRTC: large and only needed once a browser calls
  '@opentelemetry/*', // loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set
  'ioredis', // loaded only when REDIS_URL is set
  'pino', // its transports run worker scripts by file path
  'pino-pretty',
  'unpdf', // pdf.js and its worker
];

// A file removed from src/ must not live on in dist/.
rmSync(dist, { recursive: true, force: true });
// Run through npm (npm run build), whose PATH has node_modules/.bin.
execFileSync('tsc', ['-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(src, dist, { recursive: true, filter: (source) => !source.endsWith('.ts') });

await build({
  entryPoints: [join(src, 'serve.ts')],
  outdir: dist,
  bundle: true,
  splitting: true,
  chunkNames: 'serve-[name]-[hash]',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  // Whitespace and syntax only: names stay, so a stack trace stays readable without its source map. Less to
  // parse is a shorter start (1.6 s of CPU loading the modules one by one, 1.0 s bundled, 0.85 s minified so).
  minifyWhitespace: true,
  minifySyntax: true,
  external: EXTERNAL,
  logLevel: 'warning',
  // CommonJS packages inside an ES module bundle call require(): give them Node's.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  plugins: [
    {
      name: 'import-meta-url-of-the-mirror',
      setup(builder) {
        builder.onLoad({ filter: /\.ts$/ }, (args) => {
          let contents = readFileSync(args.path, 'utf8');
          if (args.path.startsWith(src) && contents.includes('import.meta.url')) {
            const own = `./${relative(src, args.path).replace(/\.ts$/, '.js')}`;
            contents = contents.replaceAll(
              'import.meta.url',
              `new URL(${JSON.stringify(own)}, import.meta.url).href`,
            );
          }
          return { contents, loader: 'ts' };
        });
      },
    },
  ],
});
