// A lossy network path between the SIP listener and one phone, over UDP: the phone sends everything to this
// path's port (as its outbound proxy) and the path passes it on to the listener, with the phone's address in
// the headers (Via, Contact) written as the path's own, so that the listener sends its requests and answers
// back through the path too. Each message from the listener is passed on to the phone unless the test's `lose`
// chooses it: the network losing a datagram, which only retransmission can make up for (RFC 3261 section 17).
// (test/helpers/lossy-proxy.ts is the same idea for HTTP over TCP.)
import { createSocket } from 'node:dgram';
import { freePort } from './sipp.ts';

export interface LossySipPath {
  /** Where the phone sends its SIP (its outbound proxy), and where the listener sees the phone. */
  port: number;
  /** The messages lost so far, as the listener sent them. */
  lost(): string[];
  close(): void;
}

/**
 * Opens the path to the listener on `listenerPort`. `lose` sees each message from the listener to the phone
 * (its text, before the path's address is written back as the phone's) and drops it when it returns true.
 */
export async function lossySipPath(
  listenerPort: number,
  lose: (message: string) => boolean,
): Promise<LossySipPath> {
  // Two five-digit ports (freePort's range), so that writing one for the other keeps every length the same.
  const port = await freePort();
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
  const lost: string[] = [];
  let phonePort: number | undefined;
  socket.on('message', (datagram, from) => {
    const text = datagram.toString('latin1');
    if (from.port === listenerPort) {
      if (phonePort === undefined) return;
      if (lose(text)) return void lost.push(text);
      const back = text.replaceAll(`127.0.0.1:${port}`, `127.0.0.1:${phonePort}`);
      socket.send(Buffer.from(back, 'latin1'), phonePort, '127.0.0.1');
      return;
    }
    phonePort = from.port;
    const on = text.replaceAll(`127.0.0.1:${phonePort}`, `127.0.0.1:${port}`);
    socket.send(Buffer.from(on, 'latin1'), listenerPort, '127.0.0.1');
  });
  return { port, lost: () => [...lost], close: () => socket.close() };
}
