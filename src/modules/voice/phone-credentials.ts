// Phone credentials (CONTRACT section 16): the console's phone registers the signed-in member's own extension
// with SIP digest credentials the server issues, so nobody types a SIP password into a browser. They are
// short-lived (an hour, never past the session), belong to the portal session that asked (gone at sign-out,
// refused once the session is revoked or the member no longer holds the extension), and the password is shown
// in the answer that issues it only, sealed at rest like the extension's own (docs/voice.md "Phones in the
// browser"). The username is the credential's own; the address of record stays the extension's, so a phone
// registered with these rings exactly as a desk phone of the extension does.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../platform/clock.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { ExtensionRow } from './extension-store.ts';
import { type PhoneCredentialRow, PhoneCredentialStore } from './phone-credential-store.ts';

/** How long issued credentials work; the console renews them before (docs/voice.md). */
export const PHONE_CREDENTIAL_LIFETIME_SECONDS = 3600;
/** Credentials a session keeps: the newest and the ones a renewal may still be replacing. */
const CREDENTIALS_PER_SESSION = 3;
/** As many bytes of randomness as an extension's own SIP password. */
const PASSWORD_BYTES = 18;

/** What identity says of a portal session: until when it lives, or undefined when it no longer does. */
export type SessionLiveUntil = (sessionId: string) => Promise<Date | undefined>;

export interface PhoneCredentials {
  extensionId: string;
  extension: string;
  displayName: string;
  sipUri: string;
  username: string;
  password: string;
  wsUrl: string;
  expiresAt: Date;
}

/** A phone credential the registrar accepted a digest answer for. */
export interface PhoneCredentialUse {
  extension: ExtensionRow;
  credentialId: string;
  expiresAt: Date;
}

export class PhoneCredentialService {
  readonly store = new PhoneCredentialStore();

  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      box: SecretBox;
      sessionLiveUntil: SessionLiveUntil;
      sipDomain: string;
      /** `ws(s)://…/sip` of the server, from PUBLIC_URL (read when issuing: the configuration's current value). */
      wsUrl: () => string;
    },
  ) {}

  /** New credentials for the caller's own extension (the one named, else their oldest). */
  async issue(
    caller: { organizationId: string; userId: string; sessionId: string },
    extensionId?: string,
  ): Promise<PhoneCredentials> {
    const { db, clock, box } = this.deps;
    const extension = await this.store.extensionOf(db, caller.organizationId, caller.userId, extensionId);
    if (!extension) {
      throw new ApiError(
        404,
        extensionId
          ? 'That extension is not yours: only an extension assigned to you can be used in the browser'
          : 'You have no extension: an owner or admin of the organization assigns one to you (Extensions, User)',
        { code: 'NO_EXTENSION' },
      );
    }
    const now = clock.now();
    const sessionUntil = await this.deps.sessionLiveUntil(caller.sessionId);
    if (!sessionUntil) throw ApiError.unauthorized('Session has ended; sign in again', 'SESSION_EXPIRED');
    const expiresAt = new Date(
      Math.min(now.getTime() + PHONE_CREDENTIAL_LIFETIME_SECONDS * 1000, sessionUntil.getTime()),
    );
    const id = newId('phc', now.getTime());
    const password = randomBytes(PASSWORD_BYTES).toString('base64url');
    const username = `${extension.extension}_web_${randomBytes(8).toString('hex')}`;
    await db.transaction(async (tx) => {
      await this.store.insert(tx, {
        id,
        organization_id: caller.organizationId,
        extension_id: extension.id,
        user_id: caller.userId,
        session_id: caller.sessionId,
        username,
        password_sealed: box.seal(password, id),
        created_at: now,
        expires_at: expiresAt,
      });
      await this.store.trimSession(tx, caller.sessionId, CREDENTIALS_PER_SESSION);
    });
    return {
      extensionId: extension.id,
      extension: extension.extension,
      displayName: extension.name,
      sipUri: `sip:${extension.sip_username}@${this.deps.sipDomain}`,
      username,
      password,
      wsUrl: this.deps.wsUrl(),
      expiresAt,
    };
  }

  /**
   * The extension and password to check a digest answer against, for a username that is a live phone
   * credential: not expired, its session live, and the extension still its member's. Undefined otherwise
   * (the registrar then treats the username as unknown).
   */
  async forDigest(username: string): Promise<(PhoneCredentialUse & { password: string }) | undefined> {
    const { db, clock } = this.deps;
    const row = await this.store.findByUsername(db, username);
    if (!row || row.expires_at.getTime() <= clock.nowMs()) return undefined;
    const [sessionUntil, extension] = await Promise.all([
      this.deps.sessionLiveUntil(row.session_id),
      this.extensionOf(row),
    ]);
    if (!sessionUntil || !extension) return undefined;
    return {
      extension,
      credentialId: row.id,
      expiresAt: row.expires_at,
      password: this.deps.box.open(row.password_sealed, row.id),
    };
  }

  /** Whether the credential still works (a binding registered with it is rung only while it does). */
  async isLive(id: string): Promise<boolean> {
    const row = await this.store.find(this.deps.db, id);
    return row !== undefined && (await this.forDigest(row.username)) !== undefined;
  }

  /** The hourly clean-up: expired credentials go, and the bindings registered with them. */
  removeExpired(now: Date): Promise<number> {
    return this.store.removeExpired(this.deps.db, now);
  }

  /** The credential's extension while it is still assigned to the member it was issued to. */
  private extensionOf(row: PhoneCredentialRow): Promise<ExtensionRow | undefined> {
    return this.store.extensionOf(this.deps.db, row.organization_id, row.user_id, row.extension_id);
  }
}

/** The WebSocket URL of the SIP endpoint (RFC 7118) for a server reached at `publicUrl`. */
export function sipWebSocketUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = '/sip';
  url.search = '';
  url.hash = '';
  return url.toString();
}
