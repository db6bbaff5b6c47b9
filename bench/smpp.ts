// The SMPP carrier's submit rate (issue 20's bench). An SMSC on loopback (the npm `smpp` package's server,
// answering every submit_sm at once) takes MESSAGES single-part messages:
//   1. through our adapter (SmppCarrier.send, our PDU codec and GSM-7 encoder, WINDOW submits outstanding),
//      as the dispatch job calls it;
//   2. baseline, same run and same server: the `smpp` package's own client submitting the same texts with the
//      same window (the peer talking to itself: what the machine and that library manage with no adapter).
// The figure is submits acknowledged per second; the ratio is ours over the baseline.
// Run: npm run bench:smpp   MESSAGES (20000), WINDOW (10)
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import smpp from 'smpp';
import { SmppCarrier } from '../src/carriers/smpp/carrier.ts';

const MESSAGES = Number(process.env.MESSAGES ?? 20_000);
const WINDOW = Number(process.env.WINDOW ?? 10);
const TEXT = 'Your table for two is ready at 7:30 pm. Reply YES to confirm.';

let submitted = 0;
const server = smpp.createServer({}, (session: any) => {
  session.on('error', () => {});
  session.on('bind_transceiver', (pdu: any) => session.send(pdu.response()));
  session.on('enquire_link', (pdu: any) => session.send(pdu.response()));
  session.on('unbind', (pdu: any) => {
    session.send(pdu.response());
    session.close();
  });
  session.on('submit_sm', (pdu: any) => {
    submitted++;
    session.send(pdu.response({ message_id: String(submitted) }));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;

/** Runs `count` sends with at most `window` outstanding; returns submits per second. */
async function rate(
  count: number,
  window: number,
  sendOne: (i: number) => Promise<unknown>,
): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: window }, async () => {
      while (next < count) await sendOne(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

// 1. Our adapter.
const carrier = new SmppCarrier({
  url: `smpp://bench:secret@127.0.0.1:${port}`,
  systemType: '',
  window: WINDOW,
  tenDlcTier: 'high',
  log: pino({ level: 'silent' }),
});
carrier.start();
while (!carrier.isBound) await new Promise((resolve) => setTimeout(resolve, 10));
const outbound = (i: number) => ({
  id: `msg_bench_${i}`,
  from: '+12025550100',
  to: `+1415555${String(i % 10_000).padStart(4, '0')}`,
  body: TEXT,
  parts: [TEXT],
  encoding: 'GSM-7' as const,
  mediaUrls: [],
  mediaFiles: [],
});
await rate(1000, WINDOW, (i) => carrier.send(outbound(i))); // warm-up
const ours = await rate(MESSAGES, WINDOW, (i) => carrier.send(outbound(i)));
await carrier.stop();

// 2. The library's own client against the same server.
const client = smpp.connect({ url: `smpp://127.0.0.1:${port}` });
client.on('error', () => {});
await new Promise<void>((resolve) => client.on('connect', resolve));
await new Promise<void>((resolve) =>
  client.bind_transceiver({ system_id: 'bench', password: 'secret' }, () => resolve()),
);
const submit = (i: number) =>
  new Promise<void>((resolve) =>
    client.submit_sm(
      {
        source_addr: '12025550100',
        destination_addr: `1415555${String(i % 10_000).padStart(4, '0')}`,
        registered_delivery: 1,
        short_message: TEXT,
      },
      () => resolve(),
    ),
  );
await rate(1000, WINDOW, submit); // warm-up
const baseline = await rate(MESSAGES, WINDOW, submit);
client.close();
server.close();

console.log(
  JSON.stringify(
    {
      messages: MESSAGES,
      window: WINDOW,
      adapterSubmitsPerSecond: Math.round(ours),
      libraryClientSubmitsPerSecond: Math.round(baseline),
      ratio: Number((ours / baseline).toFixed(2)),
    },
    null,
    2,
  ),
);
process.exit(0);
