// The one place the environment is read. Everything else receives a Config, so services never touch
// process.env and tests can build any configuration they need. CONTRACT section 1 names the variables.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { TRUST_TIERS, type TrustTier } from './carriers/carrier.ts';
import { DEFAULT_DATA_DIR } from './data-dir.ts';
import { type EncryptionKey, encryptionKeyId } from './platform/crypto.ts';

export type AppEnv = 'production' | 'development' | 'test';
export type Role = 'api' | 'worker';

export interface Config {
  port: number;
  host: string;
  /**
   * How many proxies in front may name the client in X-Forwarded-For (TRUST_PROXY=true means one); never by
   * default. A count, not "trust all": otherwise a client could write its own address into the header.
   */
  trustProxy: boolean | number;
  appEnv: AppEnv;
  /** postgres://… when a PostgreSQL server is used; undefined for embedded PGlite. */
  databaseUrl?: string;
  /** Where PGlite keeps its files; `memory://` keeps nothing. */
  dataDir: string;
  adminToken?: string;
  redisUrl?: string;
  smtpUrl?: string;
  /** Signs session tokens (and cursors). Before ENCRYPTION_KEY, it was also the root of stored secrets. */
  jwtSecret: string;
  /**
   * ENCRYPTION_KEY: the keys that seal stored secrets (TOTP, webhook signing secrets), newest first. New data
   * is sealed with the first; each listed key still opens what it sealed. Empty: secrets are sealed with a
   * key derived from JWT_SECRET, as before the key ring existed.
   */
  encryptionKeys: EncryptionKey[];
  roles: Role[];
  logLevel: string;
  /** Public base URL used in links we mail out (password reset). */
  publicUrl: string;
  /** 10DLC trust tier of our brand, which sets local numbers' throughput (CARRIER_10DLC_TIER). */
  carrierTrustTier: TrustTier;
  /** CARRIER=smpp: the SMSC (SMPP_URL, SMPP_SYSTEM_TYPE, SMPP_WINDOW); unset, the simulated carrier. */
  smpp?: { url: string; systemType: string; window: number };
  /** CARRIER=http: a provider's HTTP API (CARRIER_HTTP_URL, CARRIER_HTTP_API_KEY, CARRIER_HTTP_PUBLIC_KEY). */
  httpCarrier?: { baseUrl: string; apiKey: string; publicKey: string };
  /** Seconds a client has to send a whole request, body included (REQUEST_TIMEOUT_SECONDS); then 408. */
  requestTimeoutSeconds: number;
  /** Seconds SIGTERM waits for live calls before ending them (SHUTDOWN_GRACE_SECONDS; docs/operations.md). */
  shutdownGraceSeconds: number;
  /**
   * Seconds between the keep-alive comments of a live events stream, at each of which its session is checked
   * again (LIVE_HEARTBEAT_SECONDS, default 15): under the idle timeout of any proxy in front of the server.
   */
  liveHeartbeatSeconds: number;
  /** Jobs a worker runs at once (WORKER_CONCURRENCY): its slots, shared by every queue. */
  workerConcurrency: number;
  /**
   * Webhook deliveries a worker has in flight at once (WEBHOOK_CONCURRENCY, default 128), in slots of their
   * own: a delivery waits on its receiver, not on the CPU (docs/webhooks.md, "Throughput").
   */
  webhookConcurrency: number;
  /** Connections in the PostgreSQL pool (DATABASE_POOL_SIZE); PGlite has one connection. */
  databasePoolSize: number;
  /** The SIP domain extensions register to (SIP_DOMAIN); shown with their credentials. Default `localhost`. */
  sipDomain: string;
  /** SIP_PORT: the SIP listener's port (UDP and TCP); unset: no SIP listener. */
  sipPort?: number;
  /** SIP_HOST: the address the SIP listener binds (default 0.0.0.0). */
  sipHost: string;
  /**
   * SIP_MEDIA_ADDRESS: the IP address put in our SDP for the RTP we carry (voicemail, the relay); default
   * SIP_HOST when it is an address, else this machine's first non-loopback IPv4 address.
   */
  sipMediaAddress?: string;
  /**
   * SIP_TRUNK_URI (`sip:host[:port]`): the trunk to the telephone network. INVITEs from its address (and port,
   * when named) to our numbers follow their voice routes; calls to phone numbers go out through it.
   */
  sipTrunk?: { host: string; port?: number };
  /**
   * TRANSCRIPTION_URL: the base URL of an OpenAI-compatible transcription service (`…/v1`); voicemails and
   * recordings are transcribed there. Unset: the offline pocketsphinx engine where installed, else none.
   */
  transcriptionUrl?: string;
  /** TRANSCRIPTION_API_KEY: its bearer token, if it needs one. */
  transcriptionApiKey?: string;
  /** TRANSCRIPTION_MODEL: the model asked for (default `whisper-1`). */
  transcriptionModel: string;
  /**
   * AGENT_LLM_URL: the base URL (`…/v1`) of an OpenAI-compatible chat-completions service that answers for AI
   * agents, with AGENT_LLM_API_KEY and AGENT_LLM_MODEL (default `gpt-4o-mini`). Unset: the offline responder
   * answers from the agents' knowledge bases (docs/agents.md).
   */
  agentLlm?: { url: string; apiKey?: string; model: string };
  /**
   * The deadline of a call flow's request to the customer's app (docs/voice.md "Flows from your app"); 5000
   * when unset. Not read from the environment: the contract says 5 s; tests shorten it.
   */
  flowAppTimeoutMs?: number;
  /** METRICS_TOKEN: the Bearer token `GET /metrics` asks for; unset, /metrics answers 404 (docs/operations.md). */
  metricsToken?: string;
  /**
   * OTEL_EXPORTER_OTLP_ENDPOINT: the OTLP/HTTP collector traces go to (`http://collector:4318`, spans to its
   * `/v1/traces`); unset, nothing is traced (docs/operations.md).
   */
  otlpEndpoint?: string;
}

export class ConfigError extends Error {}

function parseTrustProxy(value: string | undefined): number | false {
  if (!value || value === 'false' || value === '0') return false;
  if (value === 'true') return 1;
  const hops = Number(value);
  return Number.isInteger(hops) && hops > 0 ? hops : false;
}

const appEnvs: AppEnv[] = ['production', 'development', 'test'];

/** For a command's start: the configuration, or every problem on stderr and exit code 1. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

/** Reads and validates the environment. Throws ConfigError with every problem at once. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];

  const appEnv = (env.APP_ENV ?? 'development') as AppEnv;
  if (!appEnvs.includes(appEnv)) problems.push(`APP_ENV must be one of ${appEnvs.join(', ')}`);

  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push('PORT must be an integer 0-65535');

  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl))
    problems.push('REDIS_URL must start with redis:// or rediss://');
  const smtpUrl = env.SMTP_URL || undefined;
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl)) problems.push('SMTP_URL must start with smtp:// or smtps://');

  const dataDir = env.DATA_DIR || DEFAULT_DATA_DIR;

  const carrierTrustTier = (env.CARRIER_10DLC_TIER || 'basic') as TrustTier;
  if (!TRUST_TIERS.includes(carrierTrustTier)) {
    problems.push(`CARRIER_10DLC_TIER must be one of ${TRUST_TIERS.join(', ')}`);
  }

  const carrier = env.CARRIER || 'simulated';
  let smpp: Config['smpp'];
  if (carrier === 'smpp') {
    const url = env.SMPP_URL ?? '';
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {}
    if (parsed?.protocol !== 'smpp:' || !parsed.username || !parsed.hostname) {
      problems.push('SMPP_URL must be smpp://system_id:password@host:port when CARRIER=smpp');
    }
    const window = Number(env.SMPP_WINDOW ?? 10);
    if (!Number.isInteger(window) || window < 1 || window > 1000)
      problems.push('SMPP_WINDOW must be an integer 1-1000');
    smpp = { url, systemType: env.SMPP_SYSTEM_TYPE ?? '', window };
  }
  let httpCarrier: Config['httpCarrier'];
  if (carrier === 'http') {
    const baseUrl = env.CARRIER_HTTP_URL ?? '';
    if (!/^https?:\/\/[^/]/.test(baseUrl))
      problems.push('CARRIER_HTTP_URL must be the provider API base URL (https://…)');
    if (!env.CARRIER_HTTP_API_KEY) problems.push('CARRIER_HTTP_API_KEY is required when CARRIER=http');
    const publicKey = env.CARRIER_HTTP_PUBLIC_KEY ?? '';
    if (Buffer.from(publicKey, 'base64').length !== 32) {
      problems.push(
        'CARRIER_HTTP_PUBLIC_KEY must be the base64 of the provider’s 32-byte Ed25519 webhook key',
      );
    }
    httpCarrier = { baseUrl, apiKey: env.CARRIER_HTTP_API_KEY ?? '', publicKey };
  }
  if (!['simulated', 'smpp', 'http'].includes(carrier))
    problems.push('CARRIER must be simulated, smpp or http');

  const roles = (env.ROLES ?? 'api,worker').split(',').map((r) => r.trim()) as Role[];
  if (roles.length === 0 || roles.some((r) => r !== 'api' && r !== 'worker')) {
    problems.push('ROLES must be a comma-separated list of api and worker');
  }

  const requestTimeoutSeconds = Number(env.REQUEST_TIMEOUT_SECONDS || 60);
  if (!Number.isInteger(requestTimeoutSeconds) || requestTimeoutSeconds < 1 || requestTimeoutSeconds > 3600) {
    problems.push('REQUEST_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 3600');
  }

  const liveHeartbeatSeconds = Number(env.LIVE_HEARTBEAT_SECONDS || 15);
  if (!Number.isInteger(liveHeartbeatSeconds) || liveHeartbeatSeconds < 1 || liveHeartbeatSeconds > 300) {
    problems.push('LIVE_HEARTBEAT_SECONDS must be a whole number of seconds from 1 to 300');
  }

  const shutdownGraceSeconds = Number(env.SHUTDOWN_GRACE_SECONDS || 30);
  if (!Number.isInteger(shutdownGraceSeconds) || shutdownGraceSeconds < 0 || shutdownGraceSeconds > 3600) {
    problems.push('SHUTDOWN_GRACE_SECONDS must be a whole number of seconds from 0 to 3600');
  }

  const workerConcurrency = Number(env.WORKER_CONCURRENCY || 16);
  if (!Number.isInteger(workerConcurrency) || workerConcurrency < 1 || workerConcurrency > 256) {
    problems.push('WORKER_CONCURRENCY must be a whole number from 1 to 256');
  }

  const webhookConcurrency = Number(env.WEBHOOK_CONCURRENCY || 128);
  if (!Number.isInteger(webhookConcurrency) || webhookConcurrency < 1 || webhookConcurrency > 1024) {
    problems.push('WEBHOOK_CONCURRENCY must be a whole number from 1 to 1024');
  }

  // Each worker slot may hold a connection while the API serves requests beside it, so by default the pool
  // has room for both: 10 for the API (when it runs) plus one per slot (when the worker runs).
  const defaultPoolSize =
    (roles.includes('api') ? 10 : 0) + (roles.includes('worker') ? workerConcurrency : 0) || 10;
  const databasePoolSize = Number(env.DATABASE_POOL_SIZE || defaultPoolSize);
  if (!Number.isInteger(databasePoolSize) || databasePoolSize < 1 || databasePoolSize > 1000) {
    problems.push('DATABASE_POOL_SIZE must be a whole number from 1 to 1000');
  }

  const sipPort = env.SIP_PORT ? Number(env.SIP_PORT) : undefined;
  if (sipPort !== undefined && (!Number.isInteger(sipPort) || sipPort < 1 || sipPort > 65535)) {
    problems.push('SIP_PORT must be an integer 1-65535');
  }

  const sipMediaAddress = env.SIP_MEDIA_ADDRESS || undefined;
  if (sipMediaAddress && !isIP(sipMediaAddress)) problems.push('SIP_MEDIA_ADDRESS must be an IP address');
  let sipTrunk: { host: string; port?: number } | undefined;
  if (env.SIP_TRUNK_URI) {
    const trunk = /^sip:(?:[^@;]+@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?(?:;.*)?$/.exec(
      env.SIP_TRUNK_URI,
    );
    const port = trunk?.[2] ? Number(trunk[2]) : undefined;
    if (!trunk || (port !== undefined && (port < 1 || port > 65535))) {
      problems.push('SIP_TRUNK_URI must be a SIP URI: sip:host or sip:host:port');
    } else sipTrunk = { host: trunk[1]!.replace(/^\[|\]$/g, ''), port };
  }

  const transcriptionUrl = env.TRANSCRIPTION_URL || undefined;
  if (transcriptionUrl && !/^https?:\/\/[^/]/.test(transcriptionUrl)) {
    problems.push('TRANSCRIPTION_URL must be an http:// or https:// URL');
  }

  const agentLlmUrl = env.AGENT_LLM_URL || undefined;
  if (agentLlmUrl && !/^https?:\/\/[^/]/.test(agentLlmUrl)) {
    problems.push('AGENT_LLM_URL must be an http:// or https:// URL');
  }

  const encryptionKeys = (env.ENCRYPTION_KEY ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter((secret) => secret !== '')
    .map((secret) => ({ id: encryptionKeyId(secret), secret }));
  if (encryptionKeys.some((key) => key.secret.length < 32)) {
    problems.push('ENCRYPTION_KEY must be one or more comma-separated keys of at least 32 characters each');
  }
  if (new Set(encryptionKeys.map((key) => key.id)).size !== encryptionKeys.length) {
    problems.push('ENCRYPTION_KEY lists the same key twice');
  }

  const metricsToken = env.METRICS_TOKEN || undefined;
  if (metricsToken !== undefined && metricsToken.length < 16) {
    problems.push('METRICS_TOKEN must be at least 16 characters');
  }
  const otlpEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined;
  if (otlpEndpoint && !/^https?:\/\/[^/]/.test(otlpEndpoint)) {
    problems.push('OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL');
  }

  let jwtSecret = env.JWT_SECRET || '';
  if (appEnv === 'production') {
    if (!jwtSecret) problems.push('JWT_SECRET is required in production');
    else if (jwtSecret.length < 32) problems.push('JWT_SECRET must be at least 32 characters');
  }

  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n- ${problems.join('\n- ')}`);

  if (!jwtSecret) jwtSecret = developmentSecret(dataDir);

  return {
    port,
    host: env.HOST || '0.0.0.0',
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    appEnv,
    databaseUrl,
    dataDir,
    adminToken: env.ADMIN_TOKEN || undefined,
    redisUrl,
    smtpUrl,
    jwtSecret,
    encryptionKeys,
    roles,
    logLevel: env.LOG_LEVEL || (appEnv === 'test' ? 'silent' : 'info'),
    publicUrl: env.PUBLIC_URL || `http://localhost:${port}`,
    carrierTrustTier,
    smpp,
    httpCarrier,
    requestTimeoutSeconds,
    shutdownGraceSeconds,
    liveHeartbeatSeconds,
    workerConcurrency,
    webhookConcurrency,
    databasePoolSize,
    sipDomain: env.SIP_DOMAIN || 'localhost',
    sipPort,
    sipHost: env.SIP_HOST || '0.0.0.0',
    sipMediaAddress,
    sipTrunk,
    transcriptionUrl,
    transcriptionApiKey: env.TRANSCRIPTION_API_KEY || undefined,
    transcriptionModel: env.TRANSCRIPTION_MODEL || 'whisper-1',
    agentLlm: agentLlmUrl
      ? {
          url: agentLlmUrl,
          apiKey: env.AGENT_LLM_API_KEY || undefined,
          model: env.AGENT_LLM_MODEL || 'gpt-4o-mini',
        }
      : undefined,
    metricsToken,
    otlpEndpoint,
  };
}

/**
 * Outside production the signing secret is generated once and kept in DATA_DIR, so sessions survive a
 * restart without any set-up. With `memory://` nothing is kept, so a fresh secret per process is right.
 */
function developmentSecret(dataDir: string): string {
  if (dataDir.startsWith('memory://')) return randomBytes(32).toString('base64url');
  const file = join(dataDir, 'jwt-secret');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const secret = randomBytes(32).toString('base64url');
    writeFileSync(file, secret, { mode: 0o600 });
    return secret;
  }
}
