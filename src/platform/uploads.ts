// Uploads are received whole before they are processed: a file is written to a temporary file as fast as
// the client sends it, then the route reads it back at its own pace. Receiving and processing are thereby
// decoupled: a slow import cannot keep the request open past REQUEST_TIMEOUT_SECONDS (the server's limit for
// receiving a request), and a slow client cannot hold a database batch loop. Memory stays flat: the file
// goes to disk, never into the heap.
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface SpooledUpload {
  /** A fresh stream over the received bytes. */
  open(): Readable;
  /** The upload stopped at its size limit (the multipart file stream says so once it has ended). */
  truncated: boolean;
  /** Deletes the temporary file. */
  discard(): Promise<void>;
}

export async function spoolUpload(file: Readable & { truncated?: boolean }): Promise<SpooledUpload> {
  const path = join(tmpdir(), `commsplatform-upload-${randomUUID()}`);
  const discard = () => rm(path, { force: true });
  try {
    await pipeline(file, createWriteStream(path, { mode: 0o600 }));
  } catch (error) {
    await discard();
    throw error;
  }
  return { open: () => createReadStream(path), truncated: file.truncated === true, discard };
}
