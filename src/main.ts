// Starts the product: reads the configuration, opens and migrates the database, then starts the roles
// asked for (ROLES=api,worker by default: the HTTP API and the background worker in one process).
import { buildApp } from './app.ts';
import { loadConfigOrExit } from './config.ts';
import { printDemoCredentials, seedDemoIfEmpty } from './first-run.ts';
import { openDatabase } from './platform/db/index.ts';
import { migrate } from './platform/db/migrate.ts';
import { createLogger } from './platform/log.ts';
import { startTelemetry } from './platform/telemetry/index.ts';
import { createRuntime } from './runtime.ts';

async function main() {
  const config = loadConfigOrExit();

  const log = createLogger(config.logLevel);
  // Before the database and the app: the pg and http patches must be in place for them (docs/operations.md).
  const telemetry = config.otlpEndpoint ? startTelemetry({ endpoint: config.otlpEndpoint }) : undefined;
  const db = await openDatabase(config);
  const applied = await migrate(db);
  if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied');
  log.info({ engine: db.engine, appEnv: config.appEnv }, 'database ready');
  if (config.appEnv !== 'production' && !isLoopback(config.host)) {
    // Development relaxes protections (the webhook SSRF guard, http webhook URLs, sk_test_ keys): fine on a
    // laptop, dangerous on an address others can reach.
    log.warn(
      { host: config.host, appEnv: config.appEnv },
      'APP_ENV is not production but the server listens beyond loopback: the webhook SSRF guard is off and ' +
        'test keys are accepted. Set APP_ENV=production for any deployment others can reach.',
    );
  }

  const ctx = createRuntime(config, db, log);
  await ctx.rateLimiter.store.ready();
  const app = config.roles.includes('api') ? await buildApp(ctx) : undefined;
  const demo = await seedDemoIfEmpty(ctx);

  if (app) await app.listen({ port: config.port, host: config.host });
  if (config.sipPort) ctx.sipListener.start({ port: config.sipPort, host: config.sipHost });
  if (config.roles.includes('worker')) {
    // The clean-up of this hour, unless another instance already booked it; each run books the next hour.
    await ctx.retention.start();
    // A carrier with a session of its own (SMPP) is connected where messages are dispatched.
    ctx.carrier.start?.();
    ctx.jobs.start();
  }
  if (demo) {
    const address = app?.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    printDemoCredentials(demo, `http://localhost:${port}`);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await app?.close();
    ctx.sipListener.stop();
    await ctx.jobs.stop();
    await ctx.carrier.stop?.();
    await ctx.rateLimiter.store.close();
    await db.close();
    await telemetry?.shutdown().catch(() => {});
    process.exit(0);
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
