// baresip (Debian's `baresip`), a real softphone, as an extension's phone in the SIP tests: a config directory
// of its own (G.711 only, audio from an 8 kHz WAV file, no sound card, no terminal), its account registering to
// our listener with the extension's credentials, and its console output kept for the test to read.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeWav, tone } from '../../src/modules/voice/audio.ts';
import { freePort } from './sipp.ts';

export const baresipInstalled = spawnSync('baresip', ['-h']).error === undefined;

export interface Softphone {
  /** Everything it printed so far. */
  output(): string;
  /** Resolves when `pattern` appears in its output (rejects after `ms`). */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  stop(): void;
}

/**
 * Starts baresip registered as `username` (password `password`) to our SIP listener on `sipPort`, answering
 * calls at once, sending a `frequency` Hz tone as its voice; with `dial`, it calls that number once registered;
 * it quits after `seconds`.
 */
export async function softphone(options: {
  sipPort: number;
  username: string;
  password: string;
  domain: string;
  frequency: number;
  seconds: number;
  dial?: string;
}): Promise<Softphone> {
  const dir = mkdtempSync(join(tmpdir(), 'baresip-'));
  const voice = join(dir, 'voice.wav');
  writeFileSync(voice, encodeWav(tone(options.seconds + 2, options.frequency)));
  // baresip listens on TCP at its SIP port plus one as well (TLS): both must be free.
  const port = await freePortPair();
  writeFileSync(
    join(dir, 'config'),
    [
      'module_path /usr/lib/baresip/modules',
      `sip_listen 127.0.0.1:${port}`,
      'module g711.so',
      'module aufile.so',
      'module menu.so',
      'module account.so',
      `audio_source aufile,${voice}`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'accounts'),
    `<sip:${options.username}@${options.domain}>;auth_pass=${options.password};` +
      `outbound="sip:127.0.0.1:${options.sipPort}";regint=60;answermode=auto\n`,
  );
  const child: ChildProcess = spawn(
    'baresip',
    ['-f', dir, '-t', String(options.seconds), ...(options.dial ? ['-e', `/dial ${options.dial}`] : [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let printed = '';
  child.stdout!.on('data', (chunk) => (printed += chunk.toString()));
  child.stderr!.on('data', (chunk) => (printed += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    output: () => printed,
    async waitFor(pattern, ms = 10_000) {
      for (let waited = 0; waited < ms; waited += 50) {
        const found = printed.match(pattern);
        if (found) return found;
        await sleep(50);
      }
      throw new Error(`baresip did not print ${pattern} in ${ms} ms; it printed:\n${printed}`);
    },
    exited,
    stop: () => child.kill('SIGTERM'),
  };
}

async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const next = await new Promise<boolean>((resolve) => {
      const server = createServer()
        .once('error', () => resolve(false))
        .listen(port + 1, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (next) return port;
  }
}
