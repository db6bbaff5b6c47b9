// `comms webhooks listen`: a local receiver for developing a webhook handler. Point a webhook endpoint of the
// platform at it; it checks each delivery's Standard Webhooks signature with the endpoint's secret, prints
// the event, forwards the body and the webhook-* headers unchanged to --forward-to (so the handler can verify
// the same signature itself), and answers the platform with the handler's status, so that a failing handler
// sees the platform's retries as it would in production. A delivery that fails verification is answered 400
// and not forwarded.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { WebhookVerificationError, webhooks } from '@commsplatform/sdk';

export interface ListenOptions {
  port: number;
  host: string;
  forwardTo: string;
  secret?: string;
  json: boolean;
}

const FORWARDED_HEADERS = [
  'content-type',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'user-agent',
];

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function listen(
  options: ListenOptions,
  report: (line: Record<string, unknown>) => void,
): Promise<Server> {
  const server = createServer(async (request, response) => {
    const body = await readBody(request);
    const id = String(request.headers['webhook-id'] ?? '');
    let type = '(unverified)';
    if (options.secret) {
      try {
        type = String(webhooks.verify(body, request.headers, options.secret).type);
      } catch (error) {
        const reason = error instanceof WebhookVerificationError ? error.message : String(error);
        report({ id, verified: false, error: reason });
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: reason }));
        return;
      }
    }
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    try {
      const forwarded = await fetch(options.forwardTo, {
        method: 'POST',
        headers,
        body: new Uint8Array(body),
      });
      const answer = Buffer.from(await forwarded.arrayBuffer());
      report({
        id,
        type,
        verified: Boolean(options.secret),
        forwardedTo: options.forwardTo,
        status: forwarded.status,
      });
      response.writeHead(forwarded.status, {
        'content-type': forwarded.headers.get('content-type') ?? 'text/plain',
      });
      response.end(answer);
    } catch (error) {
      const reason = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
      report({ id, type, verified: Boolean(options.secret), forwardedTo: options.forwardTo, error: reason });
      response.writeHead(502, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `Could not reach ${options.forwardTo}: ${reason}` }));
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve(server));
  });
}
