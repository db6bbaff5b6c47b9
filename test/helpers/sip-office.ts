// An app with its SIP listener on a free loopback port and one office (an organization with a number and a key)
// whose extensions a SIP test creates, phones not yet registered: the start of every SIP test file.
import assert from 'node:assert/strict';
import { startTestApp } from './app.ts';
import { sender } from './messaging.ts';
import { freePort } from './sipp.ts';

export type SipExtension = { id: string; extension: string; sip: { username: string; password: string } };

export async function sipOffice(
  options: Parameters<typeof startTestApp>[0] = {},
  /**
   * `trunkToSelf`: the SIP trunk is our own listener, so a number dialled out comes back in as the network's
   * call to it (a phone reaching one of the office's own numbers, routed to an agent or a flow, over the trunk).
   */
  { trunkToSelf = false }: { trunkToSelf?: boolean } = {},
) {
  const port = await freePort();
  const t = await startTestApp(
    trunkToSelf
      ? { ...options, config: { ...options.config, sipTrunk: { host: '127.0.0.1', port } } }
      : options,
  );
  t.ctx.sipListener.start({ port, host: '127.0.0.1' });
  const office = await sender(t);
  /** Creates extension `extension` (its number is also its name) with `fields`; 201 or the test fails. */
  const create = async (extension: string, fields: Record<string, unknown> = {}) => {
    const res = await t.request('POST', '/api/v2/extensions', {
      apiKey: office.key,
      body: { extension, name: extension, ...fields },
    });
    assert.equal(res.status, 201, res.text);
    return res.body.data as SipExtension;
  };
  return { t, port, office, create };
}
