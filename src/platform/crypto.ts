// A small secret box for secrets we must read back (TOTP secrets now, webhook secrets later): AES-256-GCM
// with a key derived by HKDF-SHA256 from the app's root secret (config.jwtSecret) and a purpose label, so
// each use has its own key and a ciphertext of one purpose cannot be opened as another.
// Format: `v1.` + base64url(iv[12] | tag[16] | ciphertext). Optional associated data (e.g. the owning
// user's id) binds a ciphertext to its row: copied to another row, it no longer opens.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
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

export function createSecretBox(rootSecret: string, purpose: string): SecretBox {
  const key = deriveKey(rootSecret, `secret-box:${purpose}`);
  return {
    seal(plaintext, associatedData) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
      const encrypted = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), encrypted]).toString('base64url')}`;
    },
    open(ciphertext, associatedData) {
      const [version, payload] = ciphertext.split('.', 2);
      if (version !== VERSION || !payload) throw new Error('Unrecognised secret-box ciphertext');
      const raw = Buffer.from(payload, 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('Secret-box ciphertext is too short');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}
