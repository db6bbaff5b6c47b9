// Contacts: the audience of the messaging product. One contact per phone number (E.164) per organization.
// Opt-outs are kept apart, per phone, in `opt_outs`: a contact is opted out when its phone is there, so no
// delete, update or import of a contact can clear an opt-out. Every consent change is written to the consent
// history, and opt-outs and opt-ins are recorded as domain events in the same transaction.
import type { Clock } from '../../platform/clock.ts';
import { isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import type { EventOutbox } from '../../platform/events.ts';
import type { Region } from '../../platform/http/caller.ts';
import { newId } from '../../platform/ids.ts';
import type { Page, PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import { ContactOptedIn, ContactOptedOut } from './events.ts';

export const CONSENT_STATUSES = ['granted', 'denied', 'unknown'] as const;
export type ConsentStatus = (typeof CONSENT_STATUSES)[number];
export const CONSENT_METHODS = [
  'web_form',
  'paper_form',
  'verbal',
  'sms_keyword',
  'checkout',
  'import',
  'api',
  'other',
] as const;
export type ConsentMethod = (typeof CONSENT_METHODS)[number];
export const OPT_OUT_METHODS = ['sms_stop', 'manual', 'api'] as const;
export type OptOutMethod = (typeof OPT_OUT_METHODS)[number];

export type CustomFields = Record<string, string | number | boolean | null>;

export interface ContactInput {
  phone?: string;
  firstName?: string | null;
  lastName?: string | null;
  email?: string | null;
  company?: string | null;
  customFields?: CustomFields;
  consent?: { status: ConsentStatus; date?: string | null; method?: ConsentMethod | null };
}

export interface Contact {
  id: string;
  phone: string;
  firstName: string | null;
  lastName: string | null;
  fullName: string | null;
  email: string | null;
  company: string | null;
  customFields: CustomFields;
  consent: { status: ConsentStatus; date: string | null; method: string | null };
  optedOut: boolean;
  optedOutAt: string | null;
  optOutMethod: OptOutMethod | null;
  createdAt: string;
  updatedAt: string;
}

export interface ConsentEvent {
  id: string;
  action: 'opted_out' | 'opted_in' | 'consent_recorded';
  method: string | null;
  reason: string | null;
  actor: string;
  createdAt: string;
}

/** Who made a change, for the consent history: `api_key:key_…`, `user:usr_…`, or `sms:+1…`. */
export type Actor = string;

export interface ContactRow {
  id: string;
  organization_id: string;
  phone: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  company: string | null;
  custom_fields: CustomFields;
  consent_status: ConsentStatus;
  consent_date: Date | null;
  consent_method: string | null;
  created_at: Date;
  updated_at: Date;
  opt_out_method: OptOutMethod | null;
  opted_out_at: Date | null;
}

/** Every read of a contact joins its opt-out: the one place "is this contact opted out" is answered. */
export const CONTACT_SELECT = `c.id, c.organization_id, c.phone, c.first_name, c.last_name, c.email, c.company,
  c.custom_fields, c.consent_status, c.consent_date, c.consent_method, c.created_at, c.updated_at,
  o.method AS opt_out_method, o.opted_out_at`;
export const CONTACT_FROM =
  'contacts c LEFT JOIN opt_outs o ON o.organization_id = c.organization_id AND o.phone = c.phone';

export class ContactService {
  private readonly db: Queryable & { transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> };
  private readonly clock: Clock;
  private readonly events: EventOutbox;
  private readonly pagination: Paginator;

  constructor(deps: {
    db: Queryable & { transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> };
    clock: Clock;
    events: EventOutbox;
    pagination: Paginator;
  }) {
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
    const consent = checkConsent(input.consent, this.clock.now());
    const now = this.clock.now();
    const id = newId('ct', now.getTime());
    try {
      return await this.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO contacts (id, organization_id, phone, first_name, last_name, email, company, custom_fields,
                                 consent_status, consent_date, consent_method, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $12)`,
          [
            id,
            organizationId,
            phone,
            input.firstName ?? null,
            input.lastName ?? null,
            input.email ?? null,
            input.company ?? null,
            JSON.stringify(input.customFields ?? {}),
            consent?.status ?? 'unknown',
            consent?.date ?? null,
            consent?.method ?? null,
            now,
          ],
        );
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
    const [row] = await tx.query<ContactRow>(
      `SELECT ${CONTACT_SELECT} FROM ${CONTACT_FROM} WHERE c.organization_id = $1 AND c.id = $2`,
      [organizationId, id],
    );
    if (!row) throw ApiError.notFound('Contact');
    return toContact(row);
  }

  async findByPhone(
    organizationId: string,
    phone: string,
    tx: Queryable = this.db,
  ): Promise<Contact | undefined> {
    const [row] = await tx.query<ContactRow>(
      `SELECT ${CONTACT_SELECT} FROM ${CONTACT_FROM} WHERE c.organization_id = $1 AND c.phone = $2`,
      [organizationId, phone],
    );
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
      select: CONTACT_SELECT,
      from: CONTACT_FROM,
      orderBy: { createdAt: 'c.created_at', id: 'c.id' },
      where: `c.organization_id = $1
        AND ($2::boolean IS NULL OR (o.phone IS NOT NULL) = $2)
        AND ($3::text IS NULL OR c.phone LIKE '%' || $3 || '%'
             OR lower(concat_ws(' ', c.first_name, c.last_name, c.email, c.company)) LIKE '%' || lower($3) || '%')`,
      params: [organizationId, query.optedOut ?? null, search],
      map: (row: ContactRow) => toContact(row),
    });
  }

  async update(organizationId: string, region: Region, id: string, input: ContactInput, actor: Actor) {
    const consent = checkConsent(input.consent, this.clock.now());
    const sets: string[] = [];
    const values: unknown[] = [organizationId, id, this.clock.now()];
    const set = (column: string, value: unknown, cast = '') => {
      values.push(value);
      sets.push(`${column} = $${values.length}${cast}`);
    };
    if (input.phone !== undefined) {
      const phone = normalisePhone(input.phone, region);
      if (!phone) throw ApiError.badRequest('phone must be a valid phone number');
      set('phone', phone);
    }
    if (input.firstName !== undefined) set('first_name', input.firstName);
    if (input.lastName !== undefined) set('last_name', input.lastName);
    if (input.email !== undefined) set('email', input.email);
    if (input.company !== undefined) set('company', input.company);
    if (input.customFields !== undefined) set('custom_fields', JSON.stringify(input.customFields), '::jsonb');
    if (consent) {
      set('consent_status', consent.status);
      set('consent_date', consent.date);
      set('consent_method', consent.method);
    }
    return this.db.transaction(async (tx) => {
      let row: { id: string; phone: string } | undefined;
      try {
        [row] = await tx.query<{ id: string; phone: string }>(
          `UPDATE contacts SET updated_at = $3${sets.map((s) => `, ${s}`).join('')}
            WHERE organization_id = $1 AND id = $2 RETURNING id, phone`,
          values,
        );
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
    const rows = await this.db.query(
      'DELETE FROM contacts WHERE organization_id = $1 AND id = $2 RETURNING id',
      [organizationId, id],
    );
    if (rows.length === 0) throw ApiError.notFound('Contact');
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
    const inserted = await tx.query(
      `INSERT INTO opt_outs (organization_id, phone, method, opted_out_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, phone) DO NOTHING RETURNING phone`,
      [organizationId, phone, method, now],
    );
    if (inserted.length === 0) return false;
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
    const removed = await tx.query(
      'DELETE FROM opt_outs WHERE organization_id = $1 AND phone = $2 RETURNING phone',
      [organizationId, phone],
    );
    if (removed.length === 0) return false;
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
    await tx.query(
      `INSERT INTO contacts (id, organization_id, phone, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (organization_id, phone) DO NOTHING`,
      [newId('ct', now.getTime()), organizationId, phone, now],
    );
    const [row] = await tx.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND phone = $2',
      [organizationId, phone],
    );
    return row!.id;
  }

  async isOptedOut(organizationId: string, phone: string, tx: Queryable = this.db): Promise<boolean> {
    const rows = await tx.query('SELECT 1 FROM opt_outs WHERE organization_id = $1 AND phone = $2', [
      organizationId,
      phone,
    ]);
    return rows.length > 0;
  }

  async consentHistory(organizationId: string, id: string, query: PageQueryInput, surface: string) {
    const contact = await this.get(organizationId, id);
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.contacts.consent-history`,
      keyset: false,
      organizationId,
      filters: { phone: contact.phone },
      select: 'id, action, method, reason, actor, created_at',
      from: 'consent_events',
      where: 'organization_id = $1 AND phone = $2',
      params: [organizationId, contact.phone],
      map: (row: {
        id: string;
        action: ConsentEvent['action'];
        method: string | null;
        reason: string | null;
        actor: string;
        created_at: Date;
      }): ConsentEvent => ({
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
    action: ConsentEvent['action'],
    method: string | null,
    reason: string | null,
    actor: Actor,
  ): Promise<void> {
    const now = this.clock.now();
    await tx.query(
      `INSERT INTO consent_events (id, organization_id, phone, contact_id, action, method, reason, actor, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [newId('cev', now.getTime()), organizationId, phone, contactId, action, method, reason, actor, now],
    );
  }
}

/** Validates a consent object: a known status and method, and a date that is a date and not in the future. */
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
