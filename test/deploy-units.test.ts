// The systemd units of docs/deployment.md (deploy/systemd/), checked by systemd's own verifier as installed: each
// template with an instance, the SIP drop-in in place. Any warning (an unknown key, a bad value, a missing
// executable) fails. Skipped where systemd-analyze is not installed (apt-get install systemd).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const UNITS = fileURLToPath(new URL('../deploy/systemd/', import.meta.url));
const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });

test('the deployment units pass systemd-analyze verify', {
  skip: analyze.error ? 'no systemd-analyze' : false,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'comms-units-'));
  try {
    for (const name of readdirSync(UNITS)) copyFileSync(join(UNITS, name), join(dir, name));
    symlinkSync('commsplatform-api@.service', join(dir, 'commsplatform-api@3001.service'));
    symlinkSync('commsplatform-worker@.service', join(dir, 'commsplatform-worker@1.service'));
    mkdirSync(join(dir, 'commsplatform-api@3001.service.d'));
    copyFileSync(
      join(UNITS, 'commsplatform-sip.conf'),
      join(dir, 'commsplatform-api@3001.service.d', 'sip.conf'),
    );
    const units = [
      'commsplatform.service',
      'commsplatform-api@3001.service',
      'commsplatform-worker@1.service',
      'commsplatform.target',
    ].map((name) => join(dir, name));
    // The units run /usr/bin/node; where Node lives elsewhere the verifier would rightly complain of that alone.
    const result = spawnSync('systemd-analyze', ['verify', ...units], { encoding: 'utf8' });
    const complaints = `${result.stdout}${result.stderr}`
      .split('\n')
      .filter((line) => line.trim() && !/\/usr\/bin\/node/.test(line));
    assert.equal(result.status, 0, complaints.join('\n'));
    assert.deepEqual(complaints, []);
    // The verifier reads drop-ins and templates: a key it does not know is reported, so silence means checked.
    writeFileSync(join(dir, 'commsplatform-api@3001.service.d', 'bad.conf'), '[Service]\nNotADirective=1\n');
    const bad = spawnSync('systemd-analyze', ['verify', units[1]!], { encoding: 'utf8' });
    assert.match(`${bad.stdout}${bad.stderr}`, /Unknown key 'NotADirective'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
