// Phone numbers an organization owns, in E.164. The first number an organization gets is its default sender.
// Numbers come from the carrier's inventory (search, buy, release; CONTRACT section 9) or from the operator;
// each may carry a friendly name and a voice route. Bought numbers send SMS like any other.

import { type AvailableNumber, type Carrier, NUMBER_TYPES, type NumberType } from '../../carriers/carrier.ts';
import type { Clock } from '../../platform/clock.ts';
import { type Database, isUniqueViolation, type Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { SharedCache, SharedCaches } from '../../platform/shared-cache.ts';
import { accountPolicyRefusal, type Organization } from '../organizations/index.ts';
import type {
  AvailableQueryInput,
  NumberBuyInput,
  NumberInput,
  NumberPatchInput,
  PublicPhoneNumber,
  VoiceRoute,
} from './schemas.ts';
import { NumberStore, type PhoneNumberRow } from './store.ts';

export { NUMBER_TYPES, type NumberType };

export interface PhoneNumber {
  id: string;
  organizationId: string;
  number: string;
  type: NumberType;
  isDefault: boolean;
  friendlyName: string | null;
  voiceRoute: VoiceRoute | null;
  createdAt: Date;
}

/**
 * Whether a route's target exists: the voice module (built after this one) knows its extensions, the agents
 * module its agents. Until a module says how for a type, no target of that type exists.
 */
export type RouteTargetExists = (organizationId: string, target: string) => Promise<boolean>;

/**
 * Checks a webhook route (the voice module: the app's URL by the webhooks module's rules, the fallback flow in
 * the organization) and returns it as it is to be stored; throws the 400 that refuses it.
 */
export type WebhookRouteCheck = (
  organizationId: string,
  route: VoiceRoute & { type: 'webhook' },
) => Promise<VoiceRoute>;

/** How many candidates a search asks the carrier for at a time, to drop those already owned in one query. */
const SEARCH_CHUNK = 50;

/** What a send needs of a number it may send from. */
export type Sender = Pick<PhoneNumber, 'id' | 'number' | 'type' | 'isDefault'>;

/** The tag of an organization's senders in the shared caches. */
const sendersTag = (organizationId: string) => `senders:${organizationId}`;

export class NumberService {
  private readonly db: Database;
  private readonly caches: SharedCaches;
  /** Each organization's senders: every send reads them, and they change only when numbers come and go. */
  private readonly senderCache: SharedCache<Sender[]>;
  private readonly clock: Clock;
  private readonly carrier: Carrier;
  private readonly pagination: Paginator;
  private readonly store = new NumberStore();
  private readonly targets = new Map<VoiceRoute['type'], RouteTargetExists>();
  private webhookRoutes?: WebhookRouteCheck;

  constructor(deps: {
    db: Database;
    clock: Clock;
    carrier: Carrier;
    pagination: Paginator;
    caches: SharedCaches;
  }) {
    this.db = deps.db;
    this.caches = deps.caches;
    this.senderCache = deps.caches.cache();
    this.clock = deps.clock;
    this.carrier = deps.carrier;
    this.pagination = deps.pagination;
  }

  /** Tells the service which targets a voice route of `types` may name (extensions, agents). */
  useRouteTargets(types: VoiceRoute['type'][], exists: RouteTargetExists): void {
    for (const type of types) this.targets.set(type, exists);
  }

  /** Lets numbers route their calls to an app's URL (the voice module checks such a route). */
  useWebhookRoutes(check: WebhookRouteCheck): void {
    this.webhookRoutes = check;
  }

  /**
   * Whether `target` names something a route of `type` may send calls to in the organization, asked of the
   * module that owns it: also how a call flow checks the agents its steps name, the agents module being
   * built after voice.
   */
  async routeTargetExists(
    type: VoiceRoute['type'],
    organizationId: string,
    target: string,
  ): Promise<boolean> {
    return (await this.targets.get(type)?.(organizationId, target)) ?? false;
  }

  /** Clears the voice route of the organization's numbers that send calls to `target` by one of `types`. */
  async clearRoutesTo(tx: Queryable, organizationId: string, types: VoiceRoute['type'][], target: string) {
    await this.store.clearRoutes(tx, organizationId, types, target);
  }

  /** The carrier's numbers matching `query` that no organization owns, at most `limit`. */
  async available(query: AvailableQueryInput): Promise<AvailableNumber[]> {
    const limit = query.limit ?? 20;
    const found: AvailableNumber[] = [];
    let chunk: AvailableNumber[] = [];
    const keepFree = async () => {
      const owned = await this.store.owned(
        this.db,
        chunk.map((candidate) => candidate.number),
      );
      for (const candidate of chunk)
        if (!owned.has(candidate.number) && found.length < limit) found.push(candidate);
      chunk = [];
    };
    for (const candidate of this.carrier.availableNumbers({
      country: query.country ?? 'US',
      type: query.type ?? 'local',
      areaCode: query.areaCode,
      contains: query.contains || undefined,
    })) {
      chunk.push(candidate);
      if (chunk.length < SEARCH_CHUNK) continue;
      await keepFree();
      if (found.length >= limit) break;
    }
    if (found.length < limit) await keepFree();
    return found;
  }

  /**
   * Buys `input.number` from the carrier for `org` (CONTRACT 9). 402 BILLING_REQUIRED while past due, or for a
   * second number in trial; 409 NUMBER_UNAVAILABLE when the carrier does not offer it or another organization
   * owns it. The organization's buys take turns on its row, so two at once cannot both be a trial's first.
   */
  async buy(org: Organization, input: NumberBuyInput): Promise<PhoneNumber> {
    const number = normalisePhone(input.number, org.region);
    if (!number) throw ApiError.badRequest('number must be a valid phone number, e.g. +14155550123');
    const unavailable = () =>
      new ApiError(409, `${number} is not available; search GET /api/v2/numbers/available for one that is`, {
        code: 'NUMBER_UNAVAILABLE',
      });
    const bought = await this.db.transaction(async (tx) => {
      const held = await this.store.lockAndCount(tx, org.id);
      const refusal = accountPolicyRefusal(org, held >= 1 ? 'buy_another_number' : 'buy_first_number');
      if (refusal) throw refusal;
      if (await this.store.findByNumber(tx, number)) throw unavailable();
      const offered = await this.carrier.orderNumber(number);
      if (!offered) throw unavailable();
      const now = this.clock.now();
      try {
        return await this.store.insert(tx, {
          id: newId('num', now.getTime()),
          organizationId: org.id,
          number,
          type: offered.type,
          friendlyName: input.friendlyName,
          now,
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw unavailable();
        throw error;
      }
    });
    await this.sendersChanged(org.id);
    return toPhoneNumber(bought);
  }

  async get(organizationId: string, id: string): Promise<PhoneNumber> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Phone number');
    return toPhoneNumber(row);
  }

  /** One page of the organization's numbers, newest first (offset paging). */
  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.numbers.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: (row: PhoneNumberRow) => publicPhoneNumber(toPhoneNumber(row)),
    });
  }

  /**
   * Changes the friendly name or the voice route. A route's target must exist in the organization: a phone
   * number to forward to, an extension (for `extension` and `voicemail`), an agent or a call flow; a webhook's
   * URL and fallback flow are checked by the voice module (useWebhookRoutes).
   */
  async update(org: Organization, id: string, patch: NumberPatchInput): Promise<PhoneNumber> {
    let voiceRoute = patch.voiceRoute;
    if (voiceRoute) voiceRoute = await this.checkRoute(org, id, voiceRoute);
    const row = await this.store.update(this.db, org.id, id, { ...patch, voiceRoute });
    if (!row) throw ApiError.notFound('Phone number');
    return toPhoneNumber(row);
  }

  private async checkRoute(org: Organization, id: string, route: VoiceRoute): Promise<VoiceRoute> {
    if (route.type === 'webhook') {
      if (!this.webhookRoutes) throw ApiError.badRequest('voiceRoute.type: webhook routes are not available');
      return this.webhookRoutes(org.id, { ...route, type: 'webhook' });
    }
    if (route.fallbackFlowId !== undefined) {
      throw ApiError.badRequest('voiceRoute.fallbackFlowId: only a webhook route has a fallback flow');
    }
    if (route.type === 'forward') {
      const target = normalisePhone(route.target, org.region);
      if (!target) throw ApiError.badRequest('voiceRoute.target must be a valid phone number to forward to');
      const self = await this.store.find(this.db, org.id, id);
      if (self?.number === target)
        throw ApiError.badRequest('voiceRoute.target: a number cannot forward to itself');
      return { type: 'forward', target };
    }
    if (!(await this.routeTargetExists(route.type, org.id, route.target))) {
      const what = route.type === 'agent' ? 'agent' : route.type === 'flow' ? 'call flow' : 'extension';
      throw ApiError.badRequest(`voiceRoute.target: no ${what} ${route.target} in this organization`);
    }
    return route;
  }

  /** Releases the number back to the carrier; its messages stay in the history. */
  async release(organizationId: string, id: string): Promise<void> {
    const row = await this.db.transaction((tx) => this.store.remove(tx, organizationId, id));
    if (!row) throw ApiError.notFound('Phone number');
    await this.sendersChanged(organizationId);
    await this.carrier.releaseNumber(row.number);
  }

  /**
   * Adds a number; the organization must exist (callers check, so they can answer 404 in their shape). A
   * caller that passes its own transaction calls sendersChanged() once it committed.
   */
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
      if (tx === this.db) await this.sendersChanged(organizationId);
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

  /**
   * The numbers the organization may send from, oldest first, from the shared cache (invalidated on every
   * instance when a number is added, bought or released: sendersChanged). A change of name or voice route
   * changes nothing a send reads.
   */
  async senders(organizationId: string): Promise<Sender[]> {
    const senders = await this.senderCache.get(organizationId, async () => ({
      value: (await this.list(organizationId)).map(({ id, number, type, isDefault }) => ({
        id,
        number,
        type,
        isDefault,
      })),
      tags: [sendersTag(organizationId)],
    }));
    return senders ?? [];
  }

  /** The organization's numbers changed (the write committed): its senders are read afresh everywhere. */
  sendersChanged(organizationId: string): Promise<void> {
    return this.caches.invalidate([sendersTag(organizationId)]);
  }
}

export function publicPhoneNumber(n: PhoneNumber): PublicPhoneNumber {
  return {
    id: n.id,
    organizationId: n.organizationId,
    number: n.number,
    type: n.type,
    isDefault: n.isDefault,
    friendlyName: n.friendlyName,
    voiceRoute: n.voiceRoute,
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
    friendlyName: row.friendly_name,
    voiceRoute:
      row.voice_route_type && row.voice_route_target
        ? {
            type: row.voice_route_type,
            target: row.voice_route_target,
            ...(row.voice_route_fallback_flow_id ? { fallbackFlowId: row.voice_route_fallback_flow_id } : {}),
          }
        : null,
    createdAt: row.created_at,
  };
}

/** What the numbers module gives the others: its service and the carrier everything sends through. */
export interface NumbersServices {
  numbers: NumberService;
  carrier: Carrier;
}
