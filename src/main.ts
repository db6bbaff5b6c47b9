// The server's entry point (`npm start` runs its compiled form, dist/main.js). It only turns on Node's cache of
// compiled code (Node 22.1 and later; Node 20 has none and skips it) before the server's modules are loaded:
// compiling their JavaScript is a large share of a start (docs/performance.md), and an import is compiled when
// it is loaded, so the cache must be on before `serve.ts` and everything it imports are. NODE_COMPILE_CACHE,
// when set, names the cache's directory; otherwise Node keeps it in the system's temporary directory.
import module from 'node:module';

(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
// The embedded database boots in its own thread while this one loads the server (pglite-threaded.ts); serve.ts
// takes that thread when its configuration names the same data directory.
if (!process.env.DATABASE_URL) {
  const [{ preopenPglite }, { DEFAULT_DATA_DIR }] = await Promise.all([
    import('./platform/db/pglite-threaded.ts'),
    import('./data-dir.ts'),
  ]);
  preopenPglite(process.env.DATA_DIR || DEFAULT_DATA_DIR);
}
await import('./serve.ts');
