// Development logs are readable on a terminal, JSON everywhere else: the decision (a terminal and not production)
// and what the readable destination writes (the message as a line of text, redaction applied as for JSON).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger, logFormat, terminalDestination } from '../src/platform/log.ts';

test('readable only on a terminal outside production; JSON for pipes, files and production', () => {
  assert.equal(logFormat({ isTTY: true }, 'development'), 'pretty');
  assert.equal(logFormat({ isTTY: true }, 'test'), 'pretty');
  assert.equal(logFormat({ isTTY: true }, 'production'), 'json');
  assert.equal(logFormat({ isTTY: false }, 'development'), 'json');
  // A pipe or a file: Node leaves isTTY unset.
  assert.equal(logFormat({}, 'development'), 'json');
  assert.equal(logFormat({}, 'production'), 'json');
});

/** A stream that says it is a terminal and keeps what is written to it. */
function fakeTerminal(isTTY: boolean): Writable & { isTTY: boolean; text: () => string } {
  let written = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      written += chunk;
      done();
    },
  });
  return Object.assign(stream, { isTTY, text: () => written });
}

test('on a development terminal the logger writes readable lines, still redacting secrets', () => {
  const terminal = fakeTerminal(true);
  const destination = terminalDestination(terminal, 'development');
  assert.ok(destination, 'a terminal outside production gets the readable destination');
  const log = createLogger('info', destination);
  log.info({ password: 'hunter2-secret', port: 3000 }, 'server listening');
  const out = terminal.text();
  assert.match(out, /INFO/);
  assert.match(out, /server listening/);
  assert.match(out, /port: 3000/);
  assert.match(out, /\[redacted\]/);
  assert.doesNotMatch(out, /hunter2-secret/);
  assert.throws(() => JSON.parse(out.trim()), 'a readable line, not JSON');
});

test('production, or no terminal, keeps pino writing JSON lines', () => {
  assert.equal(terminalDestination(fakeTerminal(true), 'production'), undefined);
  assert.equal(terminalDestination(fakeTerminal(false), 'development'), undefined);
});
