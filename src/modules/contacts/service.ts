// Contacts: the audience of the messaging product. One contact per phone number (E.164) per organization.
// Opt-outs are kept apart, per phone, in `opt_outs`: a contact is opted out when its phone is there, so no
// delete, update or import of a contact can clear an opt-out. Every consent change is written to the consent
// history, and opt-outs and opt-ins are recorded as domain events in the same transaction.
import type { Clock } from '../../platform/clock.ts';
import type { SqlFragment } from '../../platform/db/fragment.ts';
import { type Database, isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { ContactOptedIn, ContactOptedOut } from './events.ts';
import { contactProfileProblem, storedTimeZone } from './rules.ts';
import type { ConsentEvent, Contact, ContactInput, OptOutMethod } from './schemas.ts';
import {
  type ConsentAction,
  type ConsentEventRow,
  type ContactChanges,
  type ContactRow,
  ContactStore,
  recipientOfRow,
} from './store.ts';

/** Who made a change, for the consent history: `api_key:key_…`, `user:usr_…`, or `sms:+1…`. */
export type Actor = string;

export class ContactService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;
  private readonly store = new ContactStore();

  constructor(deps: { db: Database; clock: Clock; events: EventOutbox; pagination: Paginator }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.events = deps.events;
    this.pagination = deps.pagination;
  }

  async create(
    organizationId: string,
    region: Region,
    input: ContactInput & { phone: string },
    actor: Actor,
  ) {
    const phone = normalisePhone(input.phone, region);
    if (!phone) throw ApiError.badRequest('phone must be a valid phone number');
    checkProfile(input);
    const consent = checkConsent(input.consent, this.clock.now());
    const now = this.clock.now();
    const id = newId('ct', now.getTime());
    try {
      return await this.db.transaction(async (tx) => {
        await this.store.insert(tx, {
          id,
          organizationId,
          phone,
          firstName: input.firstName ?? null,
          lastName: input.lastName ?? null,
          email: input.email ?? null,
          company: input.company ?? null,
          customFields: input.customFields ?? {},
          timezone: storedTimeZone(input.timezone) ?? null,
          consentStatus: consent?.status ?? 'unknown',
          consentDate: consent?.date ?? null,
          consentMethod: consent?.method ?? null,
          now,
        });
        if (consent) {
          await this.recordConsent(
            tx,
            organizationId,
            phone,
            id,
            'consent_recorded',
            consent.method,
            null,
            actor,
          );
        }
        return this.get(organizationId, id, tx);
      });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // Looked up after the transaction has ended: the failed one can run no more queries.
      const existing = await this.findByPhone(organizationId, phone);
      throw new ApiError(409, `A contact with phone ${phone} already exists (${existing?.id})`, {
        code: 'CONTACT_EXISTS',
      });
    }
  }

  async get(organizationId: string, id: string, tx: Queryable = this.db): Promise<Contact> {
    const row = await this.store.find(tx, organizationId, id);
    if (!row) throw ApiError.notFound('Contact');
    return toContact(row);
  }

  /** The contact id of each of these phones that has a contact (phone → id). */
  idsByPhone(
    organizationId: string,
    phones: string[],
    tx: Queryable = this.db,
  ): Promise<Map<string, string>> {
    return this.store.idsByPhone(tx, organizationId, phones);
  }

  async findByPhone(
    organizationId: string,
    phone: string,
    tx: Queryable = this.db,
  ): Promise<Contact | undefined> {
    const row = await this.store.findByPhone(tx, organizationId, phone);
    return row && toContact(row);
  }

  list(
    organizationId: string,
    query: PageQueryInput & { optedOut?: boolean; search?: string },
    surface: string,
  ): Promise<Page<Contact>> {
    const search = query.search?.trim() || null;
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contacts.list`,
      keyset: true,
      organizationId,
      filters: { optedOut: query.optedOut ?? null, search },
      ...this.store.listQuery(organizationId, query.optedOut ?? null, search),
      map: (row: ContactRow) => toContact(row),
    });
  }

  async update(organizationId: string, region: Region, id: string, input: ContactInput, actor: Actor) {
    checkProfile(input);
    const consent = checkConsent(input.consent, this.clock.now());
    const now = this.clock.now();
    const changes: ContactChanges = {
      firstName: input.firstName,
      lastName: input.lastName,
      email: input.email,
      company: input.company,
      customFields: input.customFields,
      timezone: storedTimeZone(input.timezone),
    };
    if (input.phone !== undefined) {
      const phone = normalisePhone(input.phone, region);
      if (!phone) throw ApiError.badRequest('phone must be a valid phone number');
      changes.phone = phone;
    }
    if (consent) {
      changes.consentStatus = consent.status;
      changes.consentDate = consent.date;
      changes.consentMethod = consent.method;
    }
    return this.db.transaction(async (tx) => {
      let row: { id: string; phone: string } | undefined;
      try {
        row = await this.store.update(tx, organizationId, id, changes, now);
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw new ApiError(409, 'Another contact already has this phone number', {
            code: 'CONTACT_EXISTS',
          });
        }
        throw error;
      }
      if (!row) throw ApiError.notFound('Contact');
      if (consent)
        await this.recordConsent(
          tx,
          organizationId,
          row.phone,
          id,
          'consent_recorded',
          consent.method,
          null,
          actor,
        );
      return this.get(organizationId, id, tx);
    });
  }

  /** Deletes the contact. Its opt-out and consent history stay: they belong to the phone number. */
  async delete(organizationId: string, id: string): Promise<void> {
    if (!(await this.store.delete(this.db, organizationId, id))) throw ApiError.notFound('Contact');
  }

  async optOut(
    organizationId: string,
    id: string,
    method: OptOutMethod,
    reason: string | null,
    actor: Actor,
  ) {
    return this.db.transaction(async (tx) => {
      const contact = await this.get(organizationId, id, tx);
      await this.optOutPhone(tx, organizationId, contact.phone, contact.id, method, reason, actor);
      return this.get(organizationId, id, tx);
    });
  }

  /**
   * Opts a phone out, in the caller's transaction. Already opted out: nothing changes (the first opt-out's
   * method and time are kept). Returns whether this call opted it out.
   */
  async optOutPhone(
    tx: Queryable,
    organizationId: string,
    phone: string,
    contactId: string | null,
    method: OptOutMethod,
    reason: string | null,
    actor: Actor,
  ): Promise<boolean> {
    const now = this.clock.now();
    if (!(await this.store.insertOptOut(tx, organizationId, phone, method, now))) return false;
    await this.recordConsent(tx, organizationId, phone, contactId, 'opted_out', method, reason, actor);
    await this.events.record(tx, ContactOptedOut, {
      organizationId,
      data: { contactId, phone, method, reason, optedOutAt: now.toISOString() },
    });
    return true;
  }

  /**
   * Opts a contact back in. A contact who opted out by texting STOP may only be opted in with a reason
   * (spec: OPT_OUT_REASON_REQUIRED), so the business records why it believes consent was given again.
   */
  async optIn(organizationId: string, id: string, reason: string | null, actor: Actor) {
    return this.db.transaction(async (tx) => {
      const contact = await this.get(organizationId, id, tx);
      if (!contact.optedOut) return contact;
      const trimmed = reason?.trim() || null;
      if (contact.optOutMethod === 'sms_stop' && !trimmed) {
        throw new ApiError(
          400,
          'This contact opted out by texting STOP; a reason is required to opt them back in',
          {
            code: 'OPT_OUT_REASON_REQUIRED',
          },
        );
      }
      await this.optInPhone(tx, organizationId, contact.phone, contact.id, 'manual', trimmed, actor);
      return this.get(organizationId, id, tx);
    });
  }

  /** Removes a phone's opt-out in the caller's transaction; returns whether it was opted out. */
  async optInPhone(
    tx: Queryable,
    organizationId: string,
    phone: string,
    contactId: string | null,
    method: string,
    reason: string | null,
    actor: Actor,
  ): Promise<boolean> {
    if (!(await this.store.deleteOptOut(tx, organizationId, phone))) return false;
    await this.recordConsent(tx, organizationId, phone, contactId, 'opted_in', method, reason, actor);
    await this.events.record(tx, ContactOptedIn, {
      organizationId,
      data: { contactId, phone, method, reason, optedInAt: this.clock.now().toISOString() },
    });
    return true;
  }

  /**
   * The id of the contact with this phone, creating a bare one when there is none, in the caller's
   * transaction (a STOP from an unknown number still needs a contact to show the opt-out on).
   */
  async ensureContact(tx: Queryable, organizationId: string, phone: string): Promise<string> {
    const now = this.clock.now();
    return this.store.ensure(tx, organizationId, phone, newId('ct', now.getTime()), now);
  }

  /** Whether a send to `phone` is refused for an opt-out, and the contact its merge variables come from. */
  async recipient(
    organizationId: string,
    phone: string,
    tx: Queryable = this.db,
  ): Promise<{ optedOut: boolean; contact: Contact | undefined }> {
    const { optedOut, row } = await this.store.findRecipient(tx, organizationId, phone);
    return { optedOut, contact: row && toContact(row) };
  }

  /**
   * recipient()'s read as SQL, for a statement of another module (a send reads its recipient in its account
   * lock's statement); `recipientOf` reads its row.
   */
  recipientRead(organizationId: string, phone: string): SqlFragment {
    return this.store.recipientRead(organizationId, phone);
  }

  /** Whether `phone` opted out, as SQL for another module's statement: one row, `recipient_opted_out`. */
  optOutRead(organizationId: string, phone: string): SqlFragment {
    return this.store.optOutRead(organizationId, phone);
  }

  recipientOf(row: Record<string, unknown>): { optedOut: boolean; contact: Contact | undefined } {
    const { optedOut, row: contact } = recipientOfRow(row);
    return { optedOut, contact: contact && toContact(contact) };
  }

  async isOptedOut(organizationId: string, phone: string, tx: Queryable = this.db): Promise<boolean> {
    return this.store.isOptedOut(tx, organizationId, phone);
  }

  /**
   * Which of these recipients opted out (a dispatch batch's one read), as keys made with `optOutKey`.
   */
  optedOutAmong(pairs: { organizationId: string; phone: string }[]): Promise<Set<string>> {
    return this.store.optedOutAmong(this.db, pairs);
  }

  async consentHistory(organizationId: string, id: string, query: PageQueryInput, surface: string) {
    const contact = await this.get(organizationId, id);
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contacts.consent-history`,
      keyset: false,
      organizationId,
      filters: { phone: contact.phone },
      ...this.store.consentHistoryQuery(organizationId, contact.phone),
      map: (row: ConsentEventRow): ConsentEvent => ({
        id: row.id,
        action: row.action,
        method: row.method,
        reason: row.reason,
        actor: row.actor,
        createdAt: row.created_at.toISOString(),
      }),
    });
  }

  async recordConsent(
    tx: Queryable,
    organizationId: string,
    phone: string,
    contactId: string | null,
    action: ConsentAction,
    method: string | null,
    reason: string | null,
    actor: Actor,
  ): Promise<void> {
    const now = this.clock.now();
    await this.store.insertConsentEvent(tx, {
      id: newId('cev', now.getTime()),
      organizationId,
      phone,
      contactId,
      action,
      method,
      reason,
      actor,
      now,
    });
  }
}

/** Validates a consent object: a known status and method, and a date that is a date and not in the future. */
/** The shared contact rules (rules.ts), as a 400 for the API. */
function checkProfile(input: ContactInput): void {
  const problem = contactProfileProblem(input);
  if (problem) throw ApiError.badRequest(problem);
}

function checkConsent(consent: ContactInput['consent'], now: Date) {
  if (!consent) return undefined;
  let date: Date | null = null;
  if (consent.date) {
    date = new Date(consent.date);
    if (Number.isNaN(date.getTime())) throw ApiError.badRequest('consent.date must be a date (ISO 8601)');
    if (date.getTime() > now.getTime() + 86_400_000)
      throw ApiError.badRequest('consent.date cannot be in the future');
  }
  return { status: consent.status, date, method: consent.method ?? null };
}

export function toContact(row: ContactRow): Contact {
  const fullName = [row.first_name, row.last_name].filter(Boolean).join(' ') || null;
  return {
    id: row.id,
    phone: row.phone,
    firstName: row.first_name,
    lastName: row.last_name,
    fullName,
    email: row.email,
    company: row.company,
    customFields: row.custom_fields ?? {},
    timezone: row.timezone,
    consent: {
      status: row.consent_status,
      date: row.consent_date?.toISOString() ?? null,
      method: row.consent_method,
    },
    optedOut: row.opt_out_method !== null,
    optedOutAt: row.opted_out_at?.toISOString() ?? null,
    optOutMethod: row.opt_out_method,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
