// A real HTTP receiver for webhook tests: node:http on 127.0.0.1, port 0. It records every request with the
// app clock's time of arrival and answers what the test says, so retries, signatures and timing can be
// checked exactly as a customer's server would see them.
import http from 'node:http';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** App clock (ms) when it arrived. */
  at: number;
  /** Real time (performance.now(), ms) when it arrived: the app clock is real time plus the test's moves. */
  realAt: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Decides the answer to the n-th request (1-based). Default: 200. */
  respond: (n: number, request: Received) => Answer;
  close(): Promise<void>;
}

export async function startReceiver(now: () => number): Promise<Receiver> {
  const receiver = {
    received: [] as Received[],
    respond: (() => ({ status: 200, body: 'ok' })) as Receiver['respond'],
  } as Receiver;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (typeof value === 'string') headers[name] = value;
      }
      const entry = {
        path: request.url ?? '/',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: now(),
        realAt: performance.now(),
      };
      receiver.received.push(entry);
      const answer = receiver.respond(receiver.received.length, entry);
      response.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      response.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  receiver.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/**
 * Verifies a received delivery with both public verifiers. They check webhook-timestamp against the wall
 * clock (5 minutes' tolerance), so the check runs with Date.now reading the app clock at arrival.
 */
export function verifyWithBoth(secret: string, delivery: Received): { standard: unknown; svix: unknown } {
  const realNow = Date.now;
  Date.now = () => delivery.at;
  try {
    const headers = {
      'webhook-id': delivery.headers['webhook-id']!,
      'webhook-timestamp': delivery.headers['webhook-timestamp']!,
      'webhook-signature': delivery.headers['webhook-signature']!,
    };
    return {
      standard: new StandardWebhook(secret).verify(delivery.body, headers),
      svix: new SvixWebhook(secret).verify(delivery.body, headers),
    };
  } finally {
    Date.now = realNow;
  }
}

/** True when neither verifier accepts the delivery with `secret`; false when both do; throws if they disagree. */
export function rejectedByBoth(secret: string, delivery: Received): boolean {
  const realNow = Date.now;
  Date.now = () => delivery.at;
  const headers = {
    'webhook-id': delivery.headers['webhook-id']!,
    'webhook-timestamp': delivery.headers['webhook-timestamp']!,
    'webhook-signature': delivery.headers['webhook-signature']!,
  };
  const accepts = (verify: () => unknown) => {
    try {
      verify();
      return true;
    } catch {
      return false;
    }
  };
  try {
    const standard = accepts(() => new StandardWebhook(secret).verify(delivery.body, headers));
    const svix = accepts(() => new SvixWebhook(secret).verify(delivery.body, headers));
    if (standard !== svix) throw new Error(`verifiers disagree: standardwebhooks ${standard}, svix ${svix}`);
    return !standard;
  } finally {
    Date.now = realNow;
  }
}
