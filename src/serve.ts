// Starts the product (src/main.ts loads this module): reads the configuration, opens and migrates the
// database, then starts the roles asked for (ROLES=api,worker by default: the HTTP API and the background
// worker in one process).
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from './app.ts';
import { loadConfigOrExit } from './config.ts';
import { printDemoCredentials, seedDemoIfEmpty } from './first-run.ts';
import { openDatabase } from './platform/db/index.ts';
import { migrate } from './platform/db/migrate.ts';
import { createLogger, terminalDestination } from './platform/log.ts';
import { startTelemetry } from './platform/telemetry/index.ts';
import { createRuntime } from './runtime.ts';
import { runShutdown, shutdownBoundMs, shutdownPhases } from './shutdown.ts';

/** How long the last spans get to reach the collector at shutdown. */
const TELEMETRY_FLUSH_MS = 1_000;

async function main() {
  // Each phase of the start, in ms since the process began (performance.now() counts from there), in the
  // "ready" line: where a slow start spends its time (docs/performance.md).
  const phases: Record<string, number> = { modules: Math.round(performance.now()) };
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return Math.round((user + system) / 1000);
  };
  const cpu: Record<string, number> = { modules: cpuMs() };
  const mark = (phase: string) => {
    phases[phase] = Math.round(performance.now());
  };
  const config = loadConfigOrExit();

  const log = createLogger(config.logLevel, terminalDestination(process.stdout, config.appEnv));
  // Before the database and the app: the pg and http patches must be in place for them (docs/operations.md).
  const telemetry = config.otlpEndpoint ? await startTelemetry({ endpoint: config.otlpEndpoint }) : undefined;
  const db = await openDatabase(config);
  mark('database');
  // The migrations run while the runtime and the app are built (neither sends a statement while being built),
  // so the embedded database's boot in its thread and the migrations' check overlap the routes' registration
  // (docs/performance.md, issue 35). Nothing is served or started before they are done.
  const migrations = migrate(db);
  migrations.catch(() => {}); // awaited below, after the app is built
  if (config.appEnv !== 'production' && !isLoopback(config.host)) {
    // Development relaxes protections (the webhook SSRF guard, http webhook URLs, sk_test_ keys): fine on a
    // laptop, dangerous on an address others can reach.
    log.warn(
      { host: config.host, appEnv: config.appEnv },
      'APP_ENV is not production but the server listens beyond loopback: the webhook SSRF guard is off and ' +
        'test keys are accepted. Set APP_ENV=production for any deployment others can reach.',
    );
  }

  const built = (async () => {
    const ctx = createRuntime(config, db, log);
    await ctx.rateLimiter.store.ready();
    mark('runtime');
    const app = config.roles.includes('api') ? await buildApp(ctx) : undefined;
    mark('app');
    return { ctx, app };
  })();
  // A build that fails lets the migrations finish before the process exits, rather than cut them short.
  const { ctx, app } = await built.catch(async (error) => {
    await migrations.catch(() => {});
    throw error;
  });
  const applied = await migrations;
  mark('migrations');
  if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied');
  log.info({ engine: db.engine, appEnv: config.appEnv }, 'database ready');
  const demo = await seedDemoIfEmpty(ctx);
  mark('seed');

  if (app) {
    // Subscribed to the shared caches' invalidations before the first request, and known to the other
    // instances, so that a write this instance takes at once waits for them to forget what it changed.
    await ctx.caches.ready();
    await app.listen({ port: config.port, host: config.host });
  }
  mark('listening');
  if (config.sipPort) ctx.sipListener.start({ port: config.sipPort, host: config.sipHost });
  if (config.roles.includes('worker')) {
    // The clean-up of this hour, unless another instance already booked it; each run books the next hour.
    await ctx.retention.start();
    // A carrier with a session of its own (SMPP) is connected where messages are dispatched.
    ctx.carrier.start?.();
    ctx.jobs.start();
  }
  mark('ready');
  cpu.ready = cpuMs();
  log.info({ phases, cpu, roles: config.roles }, 'ready');
  if (demo) {
    const address = app?.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    printDemoCredentials(demo, `http://localhost:${port}`);
  }

  // Graceful shutdown: the phases of src/shutdown.ts in order, and a hard stop should they overrun their bounds.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const startedAt = Date.now();
    const graceSeconds = config.shutdownGraceSeconds;
    log.info({ signal, graceSeconds, liveCalls: ctx.calls.liveCount }, 'shutting down');
    setTimeout(() => {
      log.error({ signal, ms: Date.now() - startedAt }, 'shutdown overran its bound: exiting now');
      process.exit(1);
    }, shutdownBoundMs(graceSeconds)).unref();
    const clean = await runShutdown(shutdownPhases({ runtime: ctx, app, db, graceSeconds, startedAt }), log);
    // The spans of the shutdown itself go out last (bounded: a collector that is down does not hold the exit).
    if (telemetry) await Promise.race([telemetry.shutdown().catch(() => {}), sleep(TELEMETRY_FLUSH_MS)]);
    log.info({ signal, ms: Date.now() - startedAt, clean }, 'shut down');
    process.exit(clean ? 0 : 1);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** True for addresses only this machine can reach. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

main().catch((error) => {
  process.stderr.write(`Fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
