// MMS media rules (spec "Message send input" and "Media limits", CONTRACT section 6): hosted URLs in `media`
// and base64 uploads in `mediaFiles`, at most 10 parts together; uploads are JPEG, PNG or GIF only, at most
// 3,500,000 bytes each and in total, and their bytes must be what they claim (magic numbers, via file-type).
// Nothing is transcoded or relabelled: the exact decoded bytes go to the carrier. Checks run from the
// cheapest and most fundamental to the costliest, so a request with several faults hears about the one to
// fix first and we never decode or sniff what will be refused anyway (docs/messaging.md lists the order).
import { ApiError } from '../../platform/errors.ts';

export const MAXIMUM_MEDIA_PARTS = 10;
export const MAXIMUM_UPLOAD_BYTES = 3_500_000;
export const MAXIMUM_URL_LENGTH = 2048;
export const MAXIMUM_FILENAME_LENGTH = 255;
export const ALLOWED_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif'] as const;
export type AllowedMediaType = (typeof ALLOWED_MEDIA_TYPES)[number];

// What file-type may report for bytes declared as each type. An animated PNG (APNG) is a valid PNG:
// decoders without animation support show its first frame.
const DETECTED_AS: Record<AllowedMediaType, readonly string[]> = {
  'image/jpeg': ['image/jpeg'],
  'image/png': ['image/png', 'image/apng'],
  'image/gif': ['image/gif'],
};

export interface MediaUpload {
  /** The declared type, lowercased and without parameters. */
  contentType: AllowedMediaType;
  /** Exactly the decoded bytes the client sent. */
  bytes: Buffer;
  filename?: string;
}

export interface ValidatedMedia {
  /** Hosted media, as given, in request order. */
  urls: string[];
  files: MediaUpload[];
  /** urls.length + files.length: the message is an MMS when this is above 0. */
  count: number;
  /** Sum of the uploads' sizes in bytes. */
  totalBytes: number;
}

export interface MediaInput {
  media?: unknown;
  mediaFiles?: unknown;
}

const refuse = (code: string, message: string) => new ApiError(400, message, { code });
const malformed = (message: string) => refuse('MEDIA_MALFORMED', message);

interface UploadDraft {
  field: string;
  contentType: AllowedMediaType;
  base64: string;
  size: number;
  filename?: string;
}

export async function validateMedia(input: MediaInput): Promise<ValidatedMedia> {
  // 1. Containers: each field absent, null or an array.
  const urls = listOrEmpty(input.media, 'media');
  const files = listOrEmpty(input.mediaFiles, 'mediaFiles');

  // 2. Count, before looking inside any part: the limit holds whatever the parts contain.
  const count = urls.length + files.length;
  if (count > MAXIMUM_MEDIA_PARTS) {
    throw refuse(
      'TOO_MANY_MEDIA',
      `A message carries at most ${MAXIMUM_MEDIA_PARTS} media parts (media and mediaFiles together); this one has ${count}`,
    );
  }

  // 3. Shape of every part: a client bug, fixed before anything else matters.
  const hostedUrls = urls.map((url, index) => checkUrl(url, `media[${index}]`));
  const entries = files.map((entry, index) => checkEntryShape(entry, `mediaFiles[${index}]`));

  // 4. Declared types: policy. No use decoding a video only to refuse it.
  const typed = entries.map((entry) => ({ ...entry, contentType: allowedType(entry) }));

  // 5. Base64, and 6. sizes, both known from the text without decoding it.
  const drafts: UploadDraft[] = typed.map((entry) => ({ ...entry, ...checkBase64(entry.data, entry.field) }));
  for (const draft of drafts) {
    if (draft.size > MAXIMUM_UPLOAD_BYTES) {
      throw refuse(
        'MEDIA_TOO_LARGE',
        `${draft.field} is ${draft.size} bytes; each upload may be at most ${MAXIMUM_UPLOAD_BYTES} bytes`,
      );
    }
  }
  const totalBytes = drafts.reduce((sum, draft) => sum + draft.size, 0);
  if (totalBytes > MAXIMUM_UPLOAD_BYTES) {
    throw refuse(
      'MEDIA_TOO_LARGE',
      `Uploads total ${totalBytes} bytes; together they may be at most ${MAXIMUM_UPLOAD_BYTES} bytes`,
    );
  }

  // 7. Content: decode and sniff, the only costly step, for parts that pass everything else.
  const uploads: MediaUpload[] = [];
  for (const draft of drafts) {
    const bytes = Buffer.from(draft.base64, 'base64');
    const detected = await sniff(bytes);
    if (!detected || !DETECTED_AS[draft.contentType].includes(detected.mime)) {
      const found = detected ? `${detected.mime} data` : 'data of no recognised image type';
      throw refuse(
        'MEDIA_TYPE_MISMATCH',
        `${draft.field} is declared ${draft.contentType} but holds ${found}`,
      );
    }
    uploads.push({
      contentType: draft.contentType,
      bytes,
      ...(draft.filename === undefined ? {} : { filename: draft.filename }),
    });
  }

  return { urls: hostedUrls, files: uploads, count, totalBytes };
}

/** The file's type from its first bytes; the sniffer is loaded with the first upload, not at every start. */
async function sniff(bytes: Buffer) {
  const { fileTypeFromBuffer } = await import('file-type');
  return fileTypeFromBuffer(bytes);
}

function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function listOrEmpty(value: unknown, field: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw malformed(`${field} must be an array`);
  return value;
}

// Hosted media are fetched later by the dispatcher, which is where address checks against private networks
// belong (a name can resolve differently by then); here we only refuse what can never be fetched.
export function checkUrl(url: unknown, field: string): string {
  if (typeof url !== 'string' || url.length === 0) throw malformed(`${field} must be a non-empty URL string`);
  if (url.length > MAXIMUM_URL_LENGTH) {
    throw malformed(`${field} is longer than ${MAXIMUM_URL_LENGTH} characters`);
  }
  if (/\s/.test(url) || hasControlCharacter(url)) {
    throw malformed(`${field} contains whitespace or control characters`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw malformed(`${field} is not a valid absolute URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw malformed(`${field} must be an http or https URL`);
  }
  // Credentials in a URL end up in logs and in the carrier's hands.
  if (parsed.username || parsed.password) {
    throw malformed(`${field} must not contain a user name or password`);
  }
  return url;
}

function checkEntryShape(entry: unknown, field: string) {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw malformed(`${field} must be an object with contentType and data`);
  }
  const { contentType, data, filename } = entry as Record<string, unknown>;
  if (typeof contentType !== 'string') throw malformed(`${field}.contentType must be a string`);
  if (typeof data !== 'string') throw malformed(`${field}.data must be a base64 string`);
  if (data.length === 0) throw malformed(`${field}.data is empty`);
  if (filename !== undefined && filename !== null) {
    if (typeof filename !== 'string') throw malformed(`${field}.filename must be a string`);
    // A file name is metadata, never a path: it may be shown to the recipient or used to name a stored file.
    if (
      filename.length === 0 ||
      filename.length > MAXIMUM_FILENAME_LENGTH ||
      /[/\\]/.test(filename) ||
      hasControlCharacter(filename)
    ) {
      throw malformed(
        `${field}.filename must be 1 to ${MAXIMUM_FILENAME_LENGTH} characters without slashes or control characters`,
      );
    }
    return { field, contentType, data, filename };
  }
  return { field, contentType, data };
}

// Media types are case-insensitive and parameters (`; charset=…`, `; name=…`) do not change the type
// (RFC 9110 section 8.3.1), so `IMAGE/PNG; foo=bar` is image/png.
function allowedType(entry: { field: string; contentType: string }): AllowedMediaType {
  const essence = entry.contentType.split(';')[0].trim().toLowerCase();
  const allowed = ALLOWED_MEDIA_TYPES.find((type) => type === essence);
  if (!allowed) {
    throw refuse(
      'MEDIA_TYPE_NOT_ALLOWED',
      `${entry.field}.contentType ${JSON.stringify(entry.contentType)} is not allowed; use image/jpeg, image/png or image/gif`,
    );
  }
  return allowed;
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Strict standard base64 (RFC 4648 section 4) with its padding. Line breaks, spaces and tabs are ignored,
 * since MIME encoders and the `base64` tool wrap lines; anything else outside the alphabet is refused, as are
 * base64url, missing or misplaced padding, and non-zero bits in the padding (one text, one byte string).
 */
function checkBase64(data: string, field: string): { base64: string; size: number } {
  const base64 = data.replace(/[\t\n\r ]+/g, '');
  const invalid = `${field}.data is not valid base64`;
  if (base64.length === 0) throw malformed(`${field}.data is empty`);
  if (/^data:/i.test(base64)) throw malformed(`${invalid}: send the bare base64, not a data: URL`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) {
    if (/^[A-Za-z0-9_-]*={0,2}$/.test(base64)) {
      throw malformed(`${invalid}: it uses the URL-safe alphabet (- and _); use standard base64 (+ and /)`);
    }
    throw malformed(`${invalid}: it contains characters outside the base64 alphabet, or = before the end`);
  }
  if (base64.length % 4 !== 0)
    throw malformed(`${invalid}: its length must be a multiple of 4, with = padding`);
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  if (padding > 0) {
    const lastValue = BASE64_ALPHABET.indexOf(base64[base64.length - padding - 1]);
    const unusedBits = padding === 2 ? 0b1111 : 0b11;
    if ((lastValue & unusedBits) !== 0) throw malformed(`${invalid}: its final character has stray bits`);
  }
  return { base64, size: (base64.length / 4) * 3 - padding };
}
