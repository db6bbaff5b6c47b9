// A small secret box for secrets we must read back (TOTP and webhook secrets): AES-256-GCM with a key derived
// by HKDF-SHA256 from a root secret and a purpose label, so each use has its own key and a ciphertext of one
// purpose cannot be opened as another. The root secrets are the keys of ENCRYPTION_KEY, a key ring separate
// from JWT_SECRET, so that signing sessions and protecting stored secrets rotate independently.
// Formats: `v2.<key id>.` + base64url(iv[12] | tag[16] | ciphertext), sealed by a key of the ring; and
// `v1.` + the same, sealed by a key derived from JWT_SECRET before ENCRYPTION_KEY existed (still opened). Optional associated data (e.g. the owning
// user's id) binds a ciphertext to its row: copied to another row, it no longer opens.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const RING_VERSION = 'v2';
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Fixed, public salt: the root secret is already high-entropy; the salt only separates this application.
const SALT = 'commsplatform/secret-box';

export interface SecretBox {
  seal(plaintext: string, associatedData?: string): string;
  /** Throws if the ciphertext was altered, sealed under another key or purpose, or with other data. */
  open(ciphertext: string, associatedData?: string): string;
}

export function deriveKey(rootSecret: string, purpose: string, bytes = 32): Buffer {
  return Buffer.from(hkdfSync('sha256', rootSecret, SALT, purpose, bytes));
}

/** One key of ENCRYPTION_KEY: its id (named in every ciphertext it seals) and its secret. */
export interface EncryptionKey {
  id: string;
  secret: string;
}

/**
 * The keys a secret box may use: `keys` from ENCRYPTION_KEY, newest first (new data is sealed with the first;
 * every listed key still opens what it sealed), and `legacy`, the root secret that sealed `v1.` ciphertexts
 * before ENCRYPTION_KEY existed (JWT_SECRET), which still opens them and seals only while no key is set.
 */
export interface KeyRing {
  keys: readonly EncryptionKey[];
  legacy: string;
}

/** The id of a key: the first 8 hex characters of its SHA-256, so ciphertexts name their key without a registry. */
export function encryptionKeyId(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}

function sealWith(key: Buffer, prefix: string, plaintext: string, associatedData?: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const encrypted = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${prefix}.${Buffer.concat([iv, cipher.getAuthTag(), encrypted]).toString('base64url')}`;
}

function openWith(key: Buffer, payload: string, associatedData?: string): string {
  const raw = Buffer.from(payload, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('Secret-box ciphertext is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
    'utf8',
  );
}

/**
 * A box for one purpose. Given a root secret, it seals and opens `v1.` ciphertexts with a key derived from
 * it. Given a key ring, it seals `v2.<key id>.` ciphertexts with the newest key and opens those of every key
 * in the ring, and `v1.` ones with the legacy root.
 */
export function createSecretBox(
  keys: string | KeyRing,
  purpose: string,
): SecretBox & {
  /** Whether `ciphertext` was sealed by anything but the newest key (the rotation command re-seals those). */
  isStale(ciphertext: string): boolean;
} {
  const ring: KeyRing = typeof keys === 'string' ? { keys: [], legacy: keys } : keys;
  const label = `secret-box:${purpose}`;
  const legacyKey = deriveKey(ring.legacy, label);
  const ringKeys = new Map(ring.keys.map((key) => [key.id, deriveKey(key.secret, label)]));
  const newest = ring.keys[0];
  return {
    seal(plaintext, associatedData) {
      if (!newest) return sealWith(legacyKey, VERSION, plaintext, associatedData);
      return sealWith(ringKeys.get(newest.id)!, `${RING_VERSION}.${newest.id}`, plaintext, associatedData);
    },
    open(ciphertext, associatedData) {
      const parts = ciphertext.split('.');
      if (parts[0] === VERSION && parts.length === 2) return openWith(legacyKey, parts[1]!, associatedData);
      if (parts[0] === RING_VERSION && parts.length === 3) {
        const key = ringKeys.get(parts[1]!);
        if (!key) throw new Error(`Sealed with key ${parts[1]}, which ENCRYPTION_KEY no longer lists`);
        return openWith(key, parts[2]!, associatedData);
      }
      throw new Error('Unrecognised secret-box ciphertext');
    },
    isStale(ciphertext) {
      return newest ? !ciphertext.startsWith(`${RING_VERSION}.${newest.id}.`) : false;
    },
  };
}
