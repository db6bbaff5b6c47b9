// baresip (Debian's `baresip`), a real softphone, as an extension's phone in the SIP tests: a config directory
// of its own (G.711 only, audio from an 8 kHz WAV file, no sound card, no terminal), its account registering to
// our listener with the extension's credentials, and its console output kept for the test to read. On request,
// its SIP trace (every message it sent and received, as it saw them on the wire) and its control interface
// (ctrl_tcp: commands such as hangup, and its call events), so that a test drives it when it chooses instead
// of on a timer.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeWav, tone } from '../../src/modules/voice/audio.ts';
import { freePort } from './sipp.ts';

export const baresipInstalled = spawnSync('baresip', ['-h']).error === undefined;

/** One SIP message in baresip's trace (its `-s` output), as it went over the wire. */
export interface TracedMessage {
  /** `out`: baresip sent it; `in`: baresip received it. */
  direction: 'in' | 'out';
  /** The request's method, or undefined for a response. */
  method?: string;
  /** The response's status, or undefined for a request. */
  status?: number;
  callId: string;
  /** The CSeq header's value, e.g. `2 BYE`. */
  cseq: string;
  text: string;
}

/** A call event of baresip's control interface (`CALL_INCOMING`, `CALL_ESTABLISHED`, `CALL_CLOSED`, …). */
export interface SoftphoneEvent {
  type: string;
  param?: string;
  [field: string]: unknown;
}

export interface Softphone {
  /** Its SIP port on 127.0.0.1. */
  port: number;
  /** Everything it printed so far. */
  output(): string;
  /** The SIP messages of its trace so far (empty without `trace`). */
  sipTrace(): TracedMessage[];
  /** Its control interface's events so far (empty without `control`). */
  events(): SoftphoneEvent[];
  /** Resolves with the first event of `type` (and `where`, if given) once it has come; rejects after `ms`. */
  waitForEvent(
    type: string,
    ms?: number,
    where?: (event: SoftphoneEvent) => boolean,
  ): Promise<SoftphoneEvent>;
  /** Runs a command of its control interface (`hangup`, `listcalls`, …); resolves with its answer's text. */
  command(name: string, params?: string): Promise<string>;
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
  /** `manual`: it rings and never answers; `auto` (the default): it answers at once. */
  answerMode?: 'auto' | 'manual';
  /** Keep its SIP trace (baresip's `-s`) for `sipTrace()`. */
  trace?: boolean;
  /** Open its control interface (ctrl_tcp) for `command()` and `events()`. */
  control?: boolean;
}): Promise<Softphone> {
  const dir = mkdtempSync(join(tmpdir(), 'baresip-'));
  const voice = join(dir, 'voice.wav');
  writeFileSync(voice, encodeWav(tone(options.seconds + 2, options.frequency)));
  // baresip listens on TCP at its SIP port plus one as well (TLS): both must be free.
  const port = await freePortPair();
  const controlPort = options.control ? await freePort() : undefined;
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
      ...(controlPort ? ['module ctrl_tcp.so', `ctrl_tcp_listen 127.0.0.1:${controlPort}`] : []),
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'accounts'),
    `<sip:${options.username}@${options.domain}>;auth_pass=${options.password};` +
      `outbound="sip:127.0.0.1:${options.sipPort}";regint=60;answermode=${options.answerMode ?? 'auto'}\n`,
  );
  const child: ChildProcess = spawn(
    'baresip',
    [
      '-f',
      dir,
      '-t',
      String(options.seconds),
      ...(options.trace ? ['-s'] : []),
      ...(options.dial ? ['-e', `/dial ${options.dial}`] : []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let printed = '';
  child.stdout!.on('data', (chunk) => (printed += chunk.toString()));
  child.stderr!.on('data', (chunk) => (printed += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const control = controlPort ? await openControl(controlPort, exited) : undefined;
  const events = () => control?.events ?? [];
  return {
    port,
    output: () => printed,
    sipTrace: () => parseTrace(printed, port),
    events,
    async waitForEvent(type, ms = 20_000, where = () => true) {
      for (let waited = 0; waited < ms; waited += 50) {
        const found = events().find((event) => event.type === type && where(event));
        if (found) return found;
        await sleep(50);
      }
      throw new Error(`baresip sent no ${type} event in ${ms} ms; it sent ${JSON.stringify(events())}`);
    },
    command: (name, params = '') => {
      if (!control) throw new Error('softphone started without control');
      return control.command(name, params);
    },
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

const ESCAPE = '\u001b';

/**
 * baresip's trace, message by message. Each one is printed as `#`, then `UDP <from> -> <to>`, then the message
 * (ended by the colour reset); a message from its own port is one it sent.
 */
function parseTrace(printed: string, ownPort: number): TracedMessage[] {
  const messages: TracedMessage[] = [];
  for (const block of printed.split(`${ESCAPE}[36;1m#\n`).slice(1)) {
    const end = block.indexOf(`${ESCAPE}[;m`);
    if (end < 0) continue; // Still being printed.
    const [route = '', ...lines] = block.slice(0, end).split('\n');
    const from = route.split(' ')[1] ?? '';
    const text = lines.join('\n');
    const startLine = lines[0]?.trim() ?? '';
    const header = (name: RegExp) =>
      lines
        .find((line) => name.test(line))
        ?.replace(/^[^:]*:\s*/, '')
        .trim() ?? '';
    const response = /^SIP\/2\.0 (\d{3})/.exec(startLine);
    messages.push({
      direction: from.endsWith(`:${ownPort}`) ? 'out' : 'in',
      method: response ? undefined : startLine.split(' ')[0],
      status: response ? Number(response[1]) : undefined,
      callId: header(/^(call-id|i)\s*:/i),
      cseq: header(/^cseq\s*:/i),
      text,
    });
  }
  return messages;
}

/**
 * baresip's control interface: netstrings of JSON over TCP (`{"command", "params", "token"}` in; a response
 * with the same token, or an event, out).
 */
async function openControl(port: number, exited: Promise<unknown>) {
  let socket: Socket | undefined;
  // baresip opens the port once it has loaded its modules: tried until it answers.
  for (let attempt = 0; attempt < 200 && !socket; attempt++) {
    socket = await new Promise<Socket | undefined>((resolve) => {
      const tried = connect(port, '127.0.0.1');
      tried.once('connect', () => resolve(tried));
      tried.once('error', () => resolve(undefined));
    });
    if (!socket) await sleep(50);
  }
  if (!socket) throw new Error(`baresip's control port ${port} never opened`);
  const opened = socket;
  void exited.then(() => opened.destroy());
  const events: SoftphoneEvent[] = [];
  const waiting = new Map<string, (data: string) => void>();
  let buffered = '';
  opened.setEncoding('utf8');
  opened.on('error', () => {});
  opened.on('data', (chunk: string) => {
    buffered += chunk;
    for (;;) {
      const colon = buffered.indexOf(':');
      const length = Number(buffered.slice(0, colon));
      if (colon < 0 || buffered.length < colon + 1 + length + 1) return;
      const message = JSON.parse(buffered.slice(colon + 1, colon + 1 + length)) as Record<string, unknown>;
      buffered = buffered.slice(colon + 1 + length + 1);
      if (message.event) events.push(message as unknown as SoftphoneEvent);
      else if (message.response) waiting.get(String(message.token))?.(String(message.data ?? ''));
    }
  });
  let tokens = 0;
  return {
    events,
    command(name: string, params: string): Promise<string> {
      const token = String(++tokens);
      const json = JSON.stringify({ command: name, params, token });
      return new Promise((resolve) => {
        waiting.set(token, resolve);
        opened.write(`${Buffer.byteLength(json)}:${json},`);
      });
    },
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
