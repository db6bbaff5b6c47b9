// Extensions (CONTRACT section 9): the internal numbers of an organization's phone system. Each has a
// voicemail box, optional forwarding, a ring time, an optional user, and SIP credentials for a phone: the
// password is generated, shown once (in the answer of create and of rotate-password) and kept sealed, because
// SIP digest authentication needs it back (docs/voice.md).
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../platform/clock.ts';
import type { SecretBox } from '../../platform/crypto.ts';
import { type Database, isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { UserService } from '../identity/index.ts';
import type { NumberService } from '../numbers/index.ts';
import type { Organization } from '../organizations/index.ts';
import { decodeWav, encodeWav, SAMPLE_RATE, telephoneAudio } from './audio.ts';
import { type ExtensionColumns, type ExtensionRow, ExtensionStore } from './extension-store.ts';
import type { VoicemailGreeting } from './pbx.ts';
import type { ExtensionCreateInput, ExtensionPatchInput, PublicExtension } from './schemas.ts';

/** Bytes of randomness in a SIP password (24 characters of base64url). */
const SIP_PASSWORD_BYTES = 18;
/** The longest uploaded greeting: long enough for any message, short enough that callers stay on the line. */
export const MAX_GREETING_SECONDS = 120;
/** What a box without a greeting of its own says. */
const DEFAULT_GREETING =
  'The person you are calling is not available. Please leave a message after the tone.';

function invalidAudio(message: string): ApiError {
  return new ApiError(400, message, { code: 'INVALID_AUDIO' });
}

export class ExtensionService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly box: SecretBox;
  private readonly users: UserService;
  private readonly numbers: NumberService;
  private readonly sipDomain: string;
  readonly store = new ExtensionStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    box: SecretBox;
    users: UserService;
    numbers: NumberService;
    sipDomain: string;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.box = deps.box;
    this.users = deps.users;
    this.numbers = deps.numbers;
    this.sipDomain = deps.sipDomain;
  }

  async create(org: Organization, input: ExtensionCreateInput): Promise<PublicExtension> {
    const columns = await this.columns(org, input);
    const now = this.clock.now();
    const id = newId('ext', now.getTime());
    const password = randomBytes(SIP_PASSWORD_BYTES).toString('base64url');
    const row = await this.inUse(input.extension, () =>
      this.store.insert(this.db, {
        ...columns,
        extension: input.extension,
        name: input.name,
        id,
        organization_id: org.id,
        sip_username: `${input.extension}_${randomBytes(5).toString('hex')}`,
        sip_password_sealed: this.box.seal(password, id),
        now,
      }),
    );
    return this.toPublic(row, password);
  }

  async get(organizationId: string, id: string): Promise<PublicExtension> {
    return this.toPublic(await this.find(this.db, organizationId, id));
  }

  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.extensions.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: (row: ExtensionRow) => this.toPublic(row),
    });
  }

  async update(org: Organization, id: string, patch: ExtensionPatchInput): Promise<PublicExtension> {
    const columns = await this.columns(org, patch);
    const row = await this.inUse(patch.extension, () =>
      this.store.update(this.db, org.id, id, columns, this.clock.now()),
    );
    if (!row) throw ApiError.notFound('Extension');
    return this.toPublic(row);
  }

  /** A new SIP password, shown in this answer only; the old one stops working at once. */
  async rotatePassword(organizationId: string, id: string): Promise<PublicExtension> {
    const password = randomBytes(SIP_PASSWORD_BYTES).toString('base64url');
    const row = await this.store.update(
      this.db,
      organizationId,
      id,
      { sip_password_sealed: this.box.seal(password, id) },
      this.clock.now(),
    );
    if (!row) throw ApiError.notFound('Extension');
    return this.toPublic(row, password);
  }

  /** Deletes the extension; numbers whose calls went to it (or to its voicemail) lose their route. */
  async delete(organizationId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (!(await this.store.remove(tx, organizationId, id))) throw ApiError.notFound('Extension');
      await this.numbers.clearRoutesTo(tx, organizationId, ['extension', 'voicemail'], id);
    });
  }

  /**
   * Keeps an uploaded WAV as the extension's voicemail greeting, converted to telephone audio (8 kHz mono):
   * played instead of the text greeting until it is removed. A file that is not a WAV we can read, holds no
   * sound, or lasts longer than two minutes is refused (400 INVALID_AUDIO) and nothing changes.
   */
  async uploadGreeting(organizationId: string, id: string, file: Buffer): Promise<PublicExtension> {
    let samples: Int16Array;
    try {
      samples = telephoneAudio(decodeWav(file));
    } catch (error) {
      throw invalidAudio(`The greeting must be a WAV file: ${(error as Error).message}`);
    }
    const seconds = samples.length / SAMPLE_RATE;
    if (samples.length === 0) throw invalidAudio('The greeting holds no audio');
    if (seconds > MAX_GREETING_SECONDS) {
      throw invalidAudio(
        `The greeting lasts ${Math.round(seconds)} seconds; a greeting may last at most ${MAX_GREETING_SECONDS}`,
      );
    }
    const greeting = { audio: encodeWav(samples), seconds: Math.ceil(seconds) };
    const row = await this.db.transaction((tx) =>
      this.store.saveGreeting(tx, organizationId, id, greeting, this.clock.now()),
    );
    if (!row) throw ApiError.notFound('Extension');
    return this.toPublic(row);
  }

  /** The uploaded greeting as WAV; 404 when the extension has none. */
  async greetingAudio(organizationId: string, id: string): Promise<Buffer> {
    await this.find(this.db, organizationId, id);
    const audio = await this.store.greeting(this.db, organizationId, id);
    if (!audio) throw ApiError.notFound('Voicemail greeting');
    return audio;
  }

  /** Goes back to the text greeting; 404 when there was no uploaded one. */
  async removeGreeting(organizationId: string, id: string): Promise<PublicExtension> {
    return this.db.transaction(async (tx) => {
      await this.find(tx, organizationId, id);
      const row = await this.store.removeGreeting(tx, organizationId, id, this.clock.now());
      if (!row) throw ApiError.notFound('Voicemail greeting');
      return this.toPublic(row);
    });
  }

  /** What the extension's voicemail box says before the beep: its uploaded audio, else its text. */
  async greetingOf(row: ExtensionRow): Promise<VoicemailGreeting> {
    const text = row.voicemail_greeting ?? DEFAULT_GREETING;
    if (row.voicemail_greeting_seconds === null) return { text };
    const wav = await this.store.greeting(this.db, row.organization_id, row.id);
    return wav ? { text, audio: decodeWav(wav).samples } : { text };
  }

  /** Whether the organization has extension `id` (a number's voice route may name it). */
  async exists(organizationId: string, id: string, tx: Queryable = this.db): Promise<boolean> {
    return (await this.store.find(tx, organizationId, id)) !== undefined;
  }

  /** The SIP password of an extension, for the registrar. */
  sipPassword(row: ExtensionRow): string {
    return this.box.open(row.sip_password_sealed, row.id);
  }

  private async find(db: Queryable, organizationId: string, id: string): Promise<ExtensionRow> {
    const row = await this.store.find(db, organizationId, id);
    if (!row) throw ApiError.notFound('Extension');
    return row;
  }

  /** The columns of a create or change, each checked: the user a member, the forward a phone number. */
  private async columns(org: Organization, input: ExtensionPatchInput): Promise<ExtensionColumns> {
    let forwardTo = input.forwardTo;
    if (forwardTo) {
      const normalised = normalisePhone(forwardTo, org.region);
      if (!normalised) throw ApiError.badRequest('forwardTo must be a valid phone number');
      forwardTo = normalised;
    }
    if (input.userId && !(await this.users.roleIn(input.userId, org.id))) {
      throw ApiError.badRequest(`userId: ${input.userId} is not a member of this organization`);
    }
    return {
      extension: input.extension,
      name: input.name,
      user_id: input.userId,
      voicemail_enabled: input.voicemail?.enabled,
      voicemail_greeting: input.voicemail ? (input.voicemail.greeting ?? null) : undefined,
      forward_to: forwardTo,
      ring_seconds: input.ringSeconds,
    };
  }

  /** Runs a write that may take an extension number the organization already uses: 409 EXTENSION_IN_USE. */
  private async inUse<T>(extension: string | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isUniqueViolation(error, 'extensions_number_in_use')) {
        throw new ApiError(409, `Extension ${extension} is already in use in this organization`, {
          code: 'EXTENSION_IN_USE',
        });
      }
      throw error;
    }
  }

  private toPublic(row: ExtensionRow, password?: string): PublicExtension {
    return {
      id: row.id,
      extension: row.extension,
      name: row.name,
      userId: row.user_id,
      voicemail: {
        enabled: row.voicemail_enabled,
        greeting: row.voicemail_greeting,
        greetingAudio:
          row.voicemail_greeting_seconds === null
            ? null
            : {
                durationSeconds: row.voicemail_greeting_seconds,
                uploadedAt: row.voicemail_greeting_uploaded_at!.toISOString(),
              },
      },
      forwardTo: row.forward_to,
      ringSeconds: row.ring_seconds,
      sip: { username: row.sip_username, domain: this.sipDomain, ...(password ? { password } : {}) },
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    };
  }
}
