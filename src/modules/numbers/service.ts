// Phone numbers an organization owns, in E.164. The first number an organization gets is its default sender.

import { NUMBER_TYPES, type NumberType } from '../../carriers/carrier.ts';
import type { Clock } from '../../platform/clock.ts';
import { isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { NumberInput, PublicPhoneNumber } from './schemas.ts';
import { NumberStore, type PhoneNumberRow } from './store.ts';

export { NUMBER_TYPES, type NumberType };

export interface PhoneNumber {
  id: string;
  organizationId: string;
  number: string;
  type: NumberType;
  isDefault: boolean;
  createdAt: Date;
}

export class NumberService {
  private readonly db: Queryable;
  private readonly clock: Clock;
  private readonly store = new NumberStore();

  constructor(deps: { db: Queryable; clock: Clock }) {
    this.db = deps.db;
    this.clock = deps.clock;
  }

  /** Adds a number; the organization must exist (callers check, so they can answer 404 in their shape). */
  async add(organizationId: string, input: NumberInput, tx: Queryable = this.db) {
    const number = normalisePhone(input.number);
    if (!number) throw ApiError.badRequest('number must be a valid phone number in E.164 form');
    const now = this.clock.now();
    try {
      const row = await this.store.insert(tx, {
        id: newId('num', now.getTime()),
        organizationId,
        number,
        type: input.type,
        now,
      });
      return toPhoneNumber(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw ApiError.conflict('This number is already in use');
      throw error;
    }
  }

  /** The number (E.164) wherever it belongs, or undefined when no organization has it. */
  async findByNumber(number: string, tx: Queryable = this.db): Promise<PhoneNumber | undefined> {
    const row = await this.store.findByNumber(tx, number);
    return row && toPhoneNumber(row);
  }

  async list(organizationId: string, tx: Queryable = this.db): Promise<PhoneNumber[]> {
    return (await this.store.listByOrganization(tx, organizationId)).map(toPhoneNumber);
  }
}

export function publicPhoneNumber(n: PhoneNumber): PublicPhoneNumber {
  return {
    id: n.id,
    organizationId: n.organizationId,
    number: n.number,
    type: n.type,
    isDefault: n.isDefault,
    createdAt: n.createdAt.toISOString(),
  };
}

function toPhoneNumber(row: PhoneNumberRow): PhoneNumber {
  return {
    id: row.id,
    organizationId: row.organization_id,
    number: row.number,
    type: row.type,
    isDefault: row.is_default,
    createdAt: row.created_at,
  };
}
