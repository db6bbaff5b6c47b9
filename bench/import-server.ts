// What the import benches share (bench/import-isolation.ts, bench/import-memory.ts): a large contacts CSV
// written to disk, the real server started as its own process on a free port (its first start prints the demo
// API key), and the file uploaded to it as one streamed multipart request, so the client's memory is never
// what is measured.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { finished } from 'node:stream/promises';

// 100 area codes in service, × 10,000 lines: a million distinct, valid numbers.
// biome-ignore format: a table
const AREA_CODES = [
  201, 202, 203, 205, 206, 207, 208, 209, 210, 212, 213, 214, 215, 216, 217, 218, 219, 224, 225, 228,
  229, 231, 234, 239, 240, 248, 251, 252, 253, 254, 256, 260, 262, 267, 269, 270, 276, 281, 301, 302,
  303, 304, 305, 307, 308, 309, 310, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321, 323, 325, 330,
  334, 336, 337, 339, 347, 351, 352, 360, 361, 385, 386, 401, 402, 404, 405, 406, 407, 408, 409, 410,
  412, 413, 414, 415, 417, 419, 423, 424, 425, 432, 434, 435, 440, 443, 469, 470, 475, 478, 479, 480,
];

/**
 * Writes `rows` contacts (phone, first and last name, and a `consent` column of `yes` when asked) to `path`;
 * three or four columns keep a million rows under the 50 MB upload limit. Returns the file's size in bytes.
 */
export async function writeContactsCsv(path: string, rows: number, options: { consent?: boolean } = {}) {
  const out = createWriteStream(path);
  out.write(options.consent ? 'phone,first_name,last_name,consent\n' : 'phone,first_name,last_name\n');
  for (let i = 0; i < rows; i++) {
    const area = AREA_CODES[Math.floor(i / 10_000) % AREA_CODES.length];
    const line = `+1${area}555${String(i % 10_000).padStart(4, '0')},First${i},Last${i}${options.consent ? ',yes' : ''}\n`;
    if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  out.end();
  await finished(out);
  return statSync(path).size;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ImportServer {
  server: ChildProcessWithoutNullStreams;
  base: string;
  /** The demo API key the server's first start printed. */
  apiKey: string;
  stop(): Promise<void>;
}

/**
 * Starts `src/main.ts` on a free loopback port in development (so its first start creates the demo
 * organization and prints its key), with `env` added and `nodeArgs` before the entry point; resolves once the
 * key is printed (within a minute).
 */
export async function startImportServer(
  env: Record<string, string>,
  nodeArgs: string[] = ['--import', 'tsx'],
): Promise<ImportServer> {
  const port = await freePort();
  const server = spawn(process.execPath, [...nodeArgs, 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      APP_ENV: 'development',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  }) as unknown as ChildProcessWithoutNullStreams;
  let output = '';
  server.stdout.on('data', (chunk) => {
    output += chunk.toString();
  });
  const stop = async () => {
    if (server.exitCode !== null) return;
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
  };
  let apiKey: string | undefined;
  for (let i = 0; i < 600 && !apiKey; i++) {
    apiKey = /API key\s+(sk_test_\w+)/.exec(output)?.[1];
    if (!apiKey) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!apiKey) {
    await stop();
    throw new Error(`the server did not start:\n${output}`);
  }
  return { server, base: `http://127.0.0.1:${port}`, apiKey, stop };
}

/** POST /api/v2/contacts/import with the file at `csvPath` streamed as the multipart field `file`. */
export function uploadCsv(
  base: string,
  apiKey: string,
  csvPath: string,
): Promise<{ status: number; body: string }> {
  const boundary = 'bench-import';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contacts.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/api/v2/contacts/import`,
      {
        method: 'POST',
        headers: {
          'x-api-key': apiKey,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(
            Buffer.byteLength(head) + statSync(csvPath).size + Buffer.byteLength(tail),
          ),
        },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.write(head);
    const file = createReadStream(csvPath);
    file.pipe(req, { end: false });
    file.on('end', () => req.end(tail));
  });
}
