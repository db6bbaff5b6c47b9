// The contacts module's SQL: contacts, the opt-outs kept apart from them per phone and the consent history
// (contact lists are in list-store.ts; an import's staging and batched upserts in import-store.ts). Every
// method takes the Queryable to run on, so the services decide what shares a transaction; the rules stay with
// them.

import { assignments } from '../../platform/db/assignments.ts';
import type { SqlFragment } from '../../platform/db/fragment.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { type ListQuery, listCounterTotal } from '../../platform/pagination.ts';
import type { ConsentStatus, CustomFields, OptOutMethod } from './schemas.ts';

/** What the consent history records: a phone opting out or back in, or consent being given or changed. */
export type ConsentAction = 'opted_out' | 'opted_in' | 'consent_recorded';

export interface ContactRow {
  id: string;
  organization_id: string;
  phone: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  company: string | null;
  custom_fields: CustomFields;
  timezone: string | null;
  consent_status: ConsentStatus;
  consent_date: Date | null;
  consent_method: string | null;
  created_at: Date;
  updated_at: Date;
  opt_out_method: OptOutMethod | null;
  opted_out_at: Date | null;
}

export interface ConsentEventRow {
  id: string;
  action: ConsentAction;
  method: string | null;
  reason: string | null;
  actor: string;
  created_at: Date;
}

export interface NewContact {
  id: string;
  organizationId: string;
  phone: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  company: string | null;
  customFields: CustomFields;
  timezone: string | null;
  consentStatus: ConsentStatus;
  consentDate: Date | null;
  consentMethod: string | null;
  now: Date;
}

/** The columns an update sets; an absent one is left as it is. */
export interface ContactChanges {
  phone?: string;
  firstName?: string | null;
  lastName?: string | null;
  email?: string | null;
  company?: string | null;
  customFields?: CustomFields;
  timezone?: string | null;
  consentStatus?: ConsentStatus;
  consentDate?: Date | null;
  consentMethod?: string | null;
}

export interface ConsentEventValues {
  id: string;
  organizationId: string;
  phone: string;
  contactId: string | null;
  action: ConsentAction;
  method: string | null;
  reason: string | null;
  actor: string;
  now: Date;
}

/** One valid row of an import. Empty cells are null: they never blank out what a contact already has. */
export interface ImportedContact {
  phone: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  company: string | null;
  customFields: CustomFields;
  timezone: string | null;
  consentStatus: 'granted' | 'denied' | null;
  consentDate: Date | null;
  consentMethod: string | null;
}

export type ListSql<Row> = Pick<
  ListQuery<Row, unknown>,
  'select' | 'from' | 'where' | 'params' | 'orderBy' | 'total'
>;

/** Every read of a contact joins its opt-out: the one place "is this contact opted out" is answered. */
export const CONTACT_SELECT = `c.id, c.organization_id, c.phone, c.first_name, c.last_name, c.email, c.company,
  c.custom_fields, c.timezone, c.consent_status, c.consent_date, c.consent_method, c.created_at, c.updated_at,
  o.method AS opt_out_method, o.opted_out_at`;
export const CONTACT_FROM =
  'contacts c LEFT JOIN opt_outs o ON o.organization_id = c.organization_id AND o.phone = c.phone';

// The API's field names and their columns, in the order an update sets them.
const CHANGE_COLUMNS: [keyof ContactChanges, string][] = [
  ['phone', 'phone'],
  ['firstName', 'first_name'],
  ['lastName', 'last_name'],
  ['email', 'email'],
  ['company', 'company'],
  ['customFields', 'custom_fields'],
  ['timezone', 'timezone'],
  ['consentStatus', 'consent_status'],
  ['consentDate', 'consent_date'],
  ['consentMethod', 'consent_method'],
];

/** Whether the phone $2 opted out of organization $1's messages, as an SQL expression. */
const OPTED_OUT = 'EXISTS (SELECT 1 FROM opt_outs WHERE organization_id = $1 AND phone = $2)';

export class ContactStore {
  // -------------------------------------------------------------------------------------------------------
  // Contacts

  async insert(db: Queryable, contact: NewContact): Promise<void> {
    await db.query(
      `INSERT INTO contacts (id, organization_id, phone, first_name, last_name, email, company, custom_fields,
                             timezone, consent_status, consent_date, consent_method, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13, $13)`,
      [
        contact.id,
        contact.organizationId,
        contact.phone,
        contact.firstName,
        contact.lastName,
        contact.email,
        contact.company,
        JSON.stringify(contact.customFields),
        contact.timezone,
        contact.consentStatus,
        contact.consentDate,
        contact.consentMethod,
        contact.now,
      ],
    );
  }

  async find(db: Queryable, organizationId: string, id: string): Promise<ContactRow | undefined> {
    const [row] = await db.query<ContactRow>(
      `SELECT ${CONTACT_SELECT} FROM ${CONTACT_FROM} WHERE c.organization_id = $1 AND c.id = $2`,
      [organizationId, id],
    );
    return row;
  }

  /** The ids of the contacts among these phones (a page of conversations names its contacts in one read). */
  async idsByPhone(db: Queryable, organizationId: string, phones: string[]): Promise<Map<string, string>> {
    if (phones.length === 0) return new Map();
    const rows = await db.query<{ id: string; phone: string }>(
      'SELECT id, phone FROM contacts WHERE organization_id = $1 AND phone = ANY($2::text[])',
      [organizationId, phones],
    );
    return new Map(rows.map((row) => [row.phone, row.id]));
  }

  async findByPhone(db: Queryable, organizationId: string, phone: string): Promise<ContactRow | undefined> {
    const [row] = await db.query<ContactRow>(
      `SELECT ${CONTACT_SELECT} FROM ${CONTACT_FROM} WHERE c.organization_id = $1 AND c.phone = $2`,
      [organizationId, phone],
    );
    return row;
  }

  /**
   * The contacts of an organization, optionally only (un)opted-out ones or those matching `search`. Only the
   * filters given become conditions. Unfiltered, the total is the organization's contact counter; opted-out
   * counts join on the (organization_id, phone) keys of contacts and opt_outs; a search is a substring match
   * no b-tree serves, so it reads the organization's contacts (docs/pagination.md, "What `total` costs").
   */
  listQuery(organizationId: string, optedOut: boolean | null, search: string | null): ListSql<ContactRow> {
    const params: unknown[] = [organizationId];
    const conditions = ['c.organization_id = $1'];
    const next = (value: unknown) => `$${params.push(value)}`;
    if (optedOut !== null) conditions.push(optedOut ? 'o.phone IS NOT NULL' : 'o.phone IS NULL');
    if (search !== null) {
      const text = next(search);
      conditions.push(`(c.phone LIKE '%' || ${text} || '%'
        OR lower(concat_ws(' ', c.first_name, c.last_name, c.email, c.company)) LIKE '%' || lower(${text}) || '%')`);
    }
    return {
      select: CONTACT_SELECT,
      from: CONTACT_FROM,
      orderBy: { createdAt: 'c.created_at', id: 'c.id' },
      where: conditions.join(' AND '),
      params,
      total: conditions.length === 1 ? listCounterTotal('contacts', organizationId) : undefined,
    };
  }

  /** Applies `changes`; returns the contact's id and (new) phone, or undefined when there is no such contact. */
  async update(
    db: Queryable,
    organizationId: string,
    id: string,
    changes: ContactChanges,
    now: Date,
  ): Promise<{ id: string; phone: string } | undefined> {
    const values: unknown[] = [organizationId, id, now];
    const columns = Object.fromEntries(CHANGE_COLUMNS.map(([field, column]) => [column, changes[field]]));
    const sets = assignments(columns, values, { custom_fields: 'jsonb' });
    const [row] = await db.query<{ id: string; phone: string }>(
      `UPDATE contacts SET updated_at = $3${sets.map((s) => `, ${s}`).join('')}
        WHERE organization_id = $1 AND id = $2 RETURNING id, phone`,
      values,
    );
    return row;
  }

  /** Deletes a contact; false when there was none. */
  async delete(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query('DELETE FROM contacts WHERE organization_id = $1 AND id = $2 RETURNING id', [
      organizationId,
      id,
    ]);
    return rows.length > 0;
  }

  /** The id of the contact with this phone, inserting a bare one (with `newId`) when there is none. */
  async ensure(
    db: Queryable,
    organizationId: string,
    phone: string,
    newId: string,
    now: Date,
  ): Promise<string> {
    await db.query(
      `INSERT INTO contacts (id, organization_id, phone, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (organization_id, phone) DO NOTHING`,
      [newId, organizationId, phone, now],
    );
    const [row] = await db.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND phone = $2',
      [organizationId, phone],
    );
    return row!.id;
  }

  // -------------------------------------------------------------------------------------------------------
  // Opt-outs and the consent history

  /** Records an opt-out; false when the phone was already opted out (the first one is kept). */
  async insertOptOut(
    db: Queryable,
    organizationId: string,
    phone: string,
    method: OptOutMethod,
    now: Date,
  ): Promise<boolean> {
    const inserted = await db.query(
      `INSERT INTO opt_outs (organization_id, phone, method, opted_out_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, phone) DO NOTHING RETURNING phone`,
      [organizationId, phone, method, now],
    );
    return inserted.length > 0;
  }

  /** Removes an opt-out; false when the phone was not opted out. */
  async deleteOptOut(db: Queryable, organizationId: string, phone: string): Promise<boolean> {
    const removed = await db.query(
      'DELETE FROM opt_outs WHERE organization_id = $1 AND phone = $2 RETURNING phone',
      [organizationId, phone],
    );
    return removed.length > 0;
  }

  /** Whether `phone` opted out, and its contact if there is one: what a send needs, in one read. */
  async findRecipient(
    db: Queryable,
    organizationId: string,
    phone: string,
  ): Promise<{ optedOut: boolean; row: ContactRow | undefined }> {
    const { text, params } = this.recipientRead(organizationId, phone);
    const [found] = await db.query<Record<string, unknown>>(text, params);
    return recipientOfRow(found!);
  }

  /** findRecipient()'s read, one row always, for a statement of another module to run beside its own. */
  recipientRead(organizationId: string, phone: string): SqlFragment {
    return {
      text: `SELECT ${OPTED_OUT} AS recipient_opted_out, contact.*
         FROM (SELECT 1) AS one
         LEFT JOIN LATERAL (SELECT ${CONTACT_SELECT} FROM ${CONTACT_FROM}
                             WHERE c.organization_id = $1 AND c.phone = $2) AS contact ON true`,
      params: [organizationId, phone],
    };
  }

  /** Whether the phone opted out, as one row with `recipient_opted_out`, for a statement of another module. */
  optOutRead(organizationId: string, phone: string): SqlFragment {
    return {
      text: `SELECT ${OPTED_OUT} AS recipient_opted_out`,
      params: [organizationId, phone],
    };
  }

  async isOptedOut(db: Queryable, organizationId: string, phone: string): Promise<boolean> {
    const rows = await db.query('SELECT 1 FROM opt_outs WHERE organization_id = $1 AND phone = $2', [
      organizationId,
      phone,
    ]);
    return rows.length > 0;
  }

  /** Which of these organizations' phones opted out, as `organizationId phone` keys, in one statement. */
  async optedOutAmong(
    db: Queryable,
    pairs: { organizationId: string; phone: string }[],
  ): Promise<Set<string>> {
    if (pairs.length === 0) return new Set();
    const rows = await db.query<{ organization_id: string; phone: string }>(
      `SELECT o.organization_id, o.phone FROM opt_outs o
         JOIN unnest($1::text[], $2::text[]) AS asked(organization_id, phone)
           ON o.organization_id = asked.organization_id AND o.phone = asked.phone`,
      [pairs.map((pair) => pair.organizationId), pairs.map((pair) => pair.phone)],
    );
    return new Set(rows.map((row) => optOutKey(row.organization_id, row.phone)));
  }

  async insertConsentEvent(db: Queryable, event: ConsentEventValues): Promise<void> {
    await db.query(
      `INSERT INTO consent_events (id, organization_id, phone, contact_id, action, method, reason, actor, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        event.id,
        event.organizationId,
        event.phone,
        event.contactId,
        event.action,
        event.method,
        event.reason,
        event.actor,
        event.now,
      ],
    );
  }

  /** The consent history of a phone: it belongs to the number, so it outlives any one contact. */
  consentHistoryQuery(organizationId: string, phone: string): ListSql<ConsentEventRow> {
    return {
      select: 'id, action, method, reason, actor, created_at',
      from: 'consent_events',
      where: 'organization_id = $1 AND phone = $2',
      params: [organizationId, phone],
    };
  }
}

/** The key optedOutAmong answers with. */
export const optOutKey = (organizationId: string, phone: string) => `${organizationId} ${phone}`;

/** The recipient in a row of recipientRead(): opted out or not, and its contact if it has one. */
export function recipientOfRow(found: Record<string, unknown>): {
  optedOut: boolean;
  row: ContactRow | undefined;
} {
  const { recipient_opted_out: optedOut, ...row } = found as unknown as ContactRow & {
    recipient_opted_out: boolean;
  };
  return { optedOut, row: row.id === null ? undefined : row };
}
