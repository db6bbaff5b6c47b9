// The SIP registrar (RFC 3261 section 10): extensions' phones REGISTER with their SIP credentials (digest
// authentication), and the registrar keeps where each can be reached, in the database so that every instance
// sees every binding. Scanners try passwords on every SIP port they find: failed authentications are counted
// per source address (the shared counters: Redis when configured), and an address over the limit is refused
// without a challenge until its window passes. Each nonce count is accepted once per nonce (RFC 7616 section
// 3.3): a captured Authorization replayed, with its count or a lower one, gets a fresh challenge, not a pass.
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import type { RateLimiter, RateLimitRule } from '../../../platform/rate-limit.ts';
import type { ExtensionRow } from '../extension-store.ts';
import type { ExtensionService } from '../extensions.ts';
import type { PhoneCredentialService } from '../phone-credentials.ts';
import { DigestAuth, type DigestCredentials, unquote } from './digest.ts';
import { DigestNonceStore } from './digest-nonce-store.ts';
import { RegistrationStore } from './registration-store.ts';
import type { SipMessage, SipRemote } from './stack/index.ts';

/**
 * Failed authentications one address may make in the last five minutes before it is refused outright. A
 * sliding window: a fixed one let a scanner make twice the limit across a window's edge (and split a test's
 * failures between two windows when it ran across one).
 */
export const SIP_AUTH_FAILURE_RULE: RateLimitRule = {
  name: 'sip-auth-failure',
  limit: 10,
  windowSeconds: 300,
  sliding: true,
};
/** Bounds of a registration's lifetime in seconds (a phone asking for less than the minimum gets 423). */
export const MIN_EXPIRES = 60;
export const MAX_EXPIRES = 3600;
const DEFAULT_EXPIRES = 3600;

/** What the registrar answers: a status, its reason phrase and extra headers. */
export interface RegistrarAnswer {
  status: number;
  reason: string;
  headers?: Record<string, unknown>;
}

export class Registrar {
  private readonly store = new RegistrationStore();
  private readonly nonces = new DigestNonceStore();

  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      digest: DigestAuth;
      extensions: ExtensionService;
      /** The console's short-lived credentials, accepted beside each extension's own password. */
      phoneCredentials: PhoneCredentialService;
      rateLimiter: RateLimiter;
    },
  ) {}

  /**
   * Who sent the request: the extension whose digest credentials it carries (its own SIP password, or a phone
   * credential the portal issued for it, then named as `credential`), or the answer to give instead (a
   * challenge, a refusal). Shared by REGISTER and INVITE; failures count against the address either way.
   */
  async authenticate(
    request: SipMessage,
    remote: SipRemote,
  ): Promise<
    { extension: ExtensionRow; credential?: { id: string; expiresAt: Date } } | { answer: RegistrarAnswer }
  > {
    const { clock, digest, rateLimiter } = this.deps;
    const nowMs = clock.nowMs();
    if (!(await rateLimiter.peek(SIP_AUTH_FAILURE_RULE, remote.address)).allowed) {
      return { answer: { status: 403, reason: 'Too Many Failed Attempts' } };
    }
    const credentials = request.headers.authorization?.find(
      (header) => header.scheme?.toLowerCase() === 'digest' && unquote(header.realm ?? '') === digest.realm,
    ) as unknown as DigestCredentials | undefined;
    if (!credentials?.username || !credentials.response || !credentials.nonce || !credentials.uri) {
      return { answer: this.challenge(nowMs) };
    }
    const username = unquote(credentials.username);
    const own = await this.deps.extensions.store.findBySipUsername(this.deps.db, username);
    // Not an extension's username: perhaps a phone credential's (live: unexpired, its session not ended).
    const phone = own ? undefined : await this.deps.phoneCredentials.forDigest(username);
    const extension = own ?? phone?.extension;
    // An unknown user is checked against a password nobody has, so it costs what a wrong password costs.
    const password = own ? this.deps.extensions.sipPassword(own) : (phone?.password ?? '\u0000');
    const verdict = digest.verify(credentials, request.method ?? 'REGISTER', password, nowMs);
    if (verdict === 'stale' && extension) return { answer: this.challenge(nowMs, true) };
    if (verdict !== 'ok' || !extension) return { answer: await this.failed(remote) };
    // A count used before (or a lower one) is a replay: a fresh challenge, which an honest phone answers with a
    // new nonce. Not counted as a failure: it guessed no password, and counting it would let whoever captured a
    // header lock the phone's own address out.
    const rememberUntil = digest.rememberUntil(credentials.nonce);
    const nc = DigestAuth.nonceCount(credentials);
    if (
      rememberUntil === undefined ||
      nc === undefined ||
      !(await this.nonces.take(this.deps.db, unquote(credentials.nonce), nc, new Date(rememberUntil)))
    ) {
      return { answer: this.challenge(nowMs) };
    }
    return phone
      ? { extension, credential: { id: phone.credentialId, expiresAt: phone.expiresAt } }
      : { extension };
  }

  /** Registered phones now: live bindings, and the extensions with at least one (metrics). */
  activeRegistrations(): Promise<{ bindings: number; extensions: number }> {
    return this.store.countActive(this.deps.db, this.deps.clock.now());
  }

  async register(request: SipMessage, remote: SipRemote): Promise<RegistrarAnswer> {
    const authenticated = await this.authenticate(request, remote);
    if ('answer' in authenticated) return authenticated.answer;
    const { extension, credential } = authenticated;
    const nowMs = this.deps.clock.nowMs();
    // A phone registers its own address of record, never another extension's.
    const toUser = sipUser(request.headers.to.uri);
    if (toUser !== extension.sip_username) return { status: 403, reason: 'Forbidden: To Is Not Yours' };

    const now = new Date(nowMs);
    const asked = Number(request.headers.expires ?? DEFAULT_EXPIRES);
    const contacts = request.headers.contact;
    if (contacts === '*') {
      if (asked !== 0) return { status: 400, reason: 'Bad Request: Contact * Needs Expires 0' };
      await this.store.remove(this.deps.db, extension.id);
      return this.bindings(extension.id, now);
    }
    for (const contact of contacts ?? []) {
      const expires = Number(contact.params.expires ?? asked);
      if (!Number.isFinite(expires) || expires < 0) return { status: 400, reason: 'Bad Request: Expires' };
      if (expires === 0) {
        await this.store.remove(this.deps.db, extension.id, contact.uri);
        continue;
      }
      if (expires < MIN_EXPIRES) {
        return { status: 423, reason: 'Interval Too Brief', headers: { 'min-expires': String(MIN_EXPIRES) } };
      }
      // A binding made with a phone credential lives no longer than the credential (the phone renews both).
      const expiresAtMs = Math.min(
        nowMs + Math.min(expires, MAX_EXPIRES) * 1000,
        credential?.expiresAt.getTime() ?? Infinity,
      );
      await this.store.upsert(
        this.deps.db,
        {
          extension_id: extension.id,
          contact: contact.uri,
          source: `${remote.protocol.toLowerCase()}:${remote.address}:${remote.port}`,
          user_agent:
            typeof request.headers['user-agent'] === 'string' ? request.headers['user-agent'] : null,
          expires_at: new Date(expiresAtMs),
          credential_id: credential?.id ?? null,
        },
        now,
      );
    }
    return this.bindings(extension.id, now);
  }

  /**
   * The hourly clean-up (`voice.sip-registrations`): deletes expired bindings, and the nonce counts of nonces
   * past their lifetime; returns how many bindings.
   */
  async removeExpired(now: Date): Promise<number> {
    const bindings = await this.store.removeExpired(this.deps.db, now);
    await this.removeExpiredNonces(now);
    return bindings;
  }

  /** Deletes the nonce counts of nonces past their lifetime; returns how many. */
  removeExpiredNonces(now: Date): Promise<number> {
    return this.nonces.removeExpired(this.deps.db, now);
  }

  /** Removes the bindings registered through one connection (a browser's WebSocket that closed); how many. */
  removeSource(source: string): Promise<number> {
    return this.store.removeBySource(this.deps.db, source);
  }

  /**
   * The extension's live contacts (a call to it rings these). A binding made with a phone credential counts
   * while the credential does: a browser whose session was revoked is not rung, though its binding has time left.
   */
  async contacts(extensionId: string) {
    const rows = await this.store.live(this.deps.db, extensionId, this.deps.clock.now());
    const live = await Promise.all(
      rows.map((row) => row.credential_id === null || this.deps.phoneCredentials.isLive(row.credential_id)),
    );
    return rows.filter((_, index) => live[index]);
  }

  private challenge(nowMs: number, stale = false): RegistrarAnswer {
    return {
      status: 401,
      reason: 'Unauthorized',
      headers: { 'www-authenticate': [this.deps.digest.challenge(nowMs, stale)] },
    };
  }

  private async failed(remote: SipRemote): Promise<RegistrarAnswer> {
    await this.deps.rateLimiter.consume(SIP_AUTH_FAILURE_RULE, remote.address);
    return { status: 403, reason: 'Forbidden' };
  }

  /** 200 with every live binding and its remaining lifetime, as RFC 3261 section 10.3 asks. */
  private async bindings(extensionId: string, now: Date): Promise<RegistrarAnswer> {
    const rows = await this.store.live(this.deps.db, extensionId, now);
    return {
      status: 200,
      reason: 'OK',
      headers: {
        // No Contact at all when nothing is bound (an empty list would be written as `Contact: *`).
        ...(rows.length > 0
          ? {
              contact: rows.map((row) => ({
                uri: row.contact,
                params: {
                  expires: String(Math.max(0, Math.round((row.expires_at.getTime() - now.getTime()) / 1000))),
                },
              })),
            }
          : {}),
        date: now.toUTCString(),
      },
    };
  }
}

function sipUser(uri: string): string | undefined {
  return /^sips?:([^@;]+)@/i.exec(uri)?.[1];
}
