// The SIP agent line's keys (sip/agent-line.ts): keys pressed while the agent is busy come to it as one group,
// and a phone that keeps sending keys gets a group of a number's length, not one that grows without end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RtpAgentLine } from '../src/modules/voice/sip/agent-line.ts';
import { RtpSession } from '../src/modules/voice/sip/rtp.ts';
import { Clock } from '../src/platform/clock.ts';

test('keys pressed while nobody listens come as one group, at most 32 of them; the next key starts a new group', async () => {
  const line = new RtpAgentLine({
    open: () => RtpSession.open('127.0.0.1', { address: '127.0.0.1', port: 9, codec: 'PCMU' }, 10),
    clock: new Clock(),
    record: false,
    onClose: () => {},
  });
  try {
    for (let i = 0; i < 1000; i++) line.press(String(i % 10));
    const first = await line.listen();
    assert.equal(first.kind, 'keys');
    assert.equal(first.kind === 'keys' && first.digits, '01234567890123456789012345678901');
    line.press('#');
    const next = await line.listen();
    assert.deepEqual(next.kind === 'keys' && next.digits, '#');
  } finally {
    await line.close();
  }
});
