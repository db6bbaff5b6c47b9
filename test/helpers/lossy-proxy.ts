// A TCP proxy in front of a test server that loses the first answer: the first connection's request reaches
// the server, which acts and answers, and the proxy then drops that connection instead of passing the answer
// on, as a load balancer restarting or a mobile network dropping would. Later connections pass through.
import { createConnection, createServer } from 'node:net';

export interface LossyProxy {
  url: string;
  /** Connections made through the proxy so far. */
  connections(): number;
  close(): void;
}

export async function loseFirstAnswer(serverUrl: string): Promise<LossyProxy> {
  const target = new URL(serverUrl);
  let connections = 0;
  const proxy = createServer((client) => {
    const first = connections++ === 0;
    const upstream = createConnection(Number(target.port), target.hostname);
    client.pipe(upstream);
    upstream.on('data', (chunk) => {
      if (first) {
        client.destroy();
        upstream.destroy();
      } else client.write(chunk);
    });
    upstream.on('end', () => client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, connections: () => connections, close: () => proxy.close() };
}
