// Ring groups (CONTRACT section 13): CRUD with their rules, and the two methods a call flow's dial step uses
// while it rings one: attempts() (who rings, in which order, for how long) and answeredBy() (moves a
// round-robin group on). The order itself is decided by ring-order.ts from what this reads.
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import { newId } from '../../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../../platform/pagination.ts';
import { checkMembers, lastCallEnded } from './members.ts';
import { type RingAttempt, ringOrder } from './ring-order.ts';
import {
  DEFAULT_RING_SECONDS,
  type PublicRingGroup,
  type RingGroupCreateInput,
  type RingGroupPatchInput,
} from './schemas.ts';
import { type RingGroupRow, RingGroupStore } from './store.ts';

export interface RingPlan {
  /** How long each attempt rings before the next one starts (or the dial step gives up). */
  ringSeconds: number;
  attempts: RingAttempt[];
}

/** What a call (a flow's dial, a transfer) asks of ring groups: the turns to ring, and who answered. */
export interface RingGroupSource {
  attempts(organizationId: string, ringGroupId: string): Promise<RingPlan | undefined>;
  answeredBy(ringGroupId: string, extensionId: string): Promise<void>;
}

export class RingGroupService implements RingGroupSource {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  readonly store = new RingGroupStore();

  constructor(deps: { db: Database; clock: Clock; pagination: Paginator }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
  }

  async create(organizationId: string, input: RingGroupCreateInput): Promise<PublicRingGroup> {
    const now = this.clock.now();
    const id = newId('rg', now.getTime());
    await this.db.transaction(async (tx) => {
      await checkMembers(tx, organizationId, input.extensionIds);
      await this.store.insert(tx, {
        id,
        organization_id: organizationId,
        name: input.name,
        strategy: input.strategy ?? 'simultaneous',
        ring_seconds: input.ringSeconds ?? DEFAULT_RING_SECONDS,
        now,
      });
      await this.store.setMembers(tx, id, input.extensionIds);
    });
    return this.get(organizationId, id);
  }

  async get(organizationId: string, id: string): Promise<PublicRingGroup> {
    return toPublic(await this.row(organizationId, id));
  }

  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.ringGroups.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: toPublic,
    });
  }

  async update(organizationId: string, id: string, patch: RingGroupPatchInput): Promise<PublicRingGroup> {
    await this.db.transaction(async (tx) => {
      // The group first: another organization's id is 404 whatever the body names.
      const columns = { name: patch.name, strategy: patch.strategy, ring_seconds: patch.ringSeconds };
      if (!(await this.store.update(tx, organizationId, id, columns, this.clock.now()))) {
        throw ApiError.notFound('Ring group');
      }
      if (patch.extensionIds) {
        await checkMembers(tx, organizationId, patch.extensionIds);
        await this.store.setMembers(tx, id, patch.extensionIds);
      }
    });
    return this.get(organizationId, id);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    if (!(await this.store.remove(this.db, organizationId, id))) throw ApiError.notFound('Ring group');
  }

  /**
   * Who rings when a call reaches the group, attempt by attempt; undefined when the organization has no such
   * group. A group whose members were all deleted has no attempts.
   */
  /** Whether the organization has ring group `id` (a call flow's dial names it). */
  async exists(organizationId: string, id: string): Promise<boolean> {
    return (await this.store.find(this.db, organizationId, id)) !== undefined;
  }

  async attempts(organizationId: string, ringGroupId: string): Promise<RingPlan | undefined> {
    const group = await this.store.find(this.db, organizationId, ringGroupId);
    if (!group) return undefined;
    const lastCallEndedAt =
      group.strategy === 'longest_idle'
        ? await lastCallEnded(this.db, organizationId, group.extension_ids)
        : new Map<string, Date>();
    return {
      ringSeconds: group.ring_seconds,
      attempts: ringOrder({
        strategy: group.strategy,
        extensionIds: group.extension_ids,
        lastAnsweredExtensionId: group.last_answered_extension_id,
        lastCallEndedAt,
      }),
    };
  }

  /** The member who answered the group's call: a round-robin group's next call starts after them. */
  async answeredBy(ringGroupId: string, extensionId: string): Promise<void> {
    await this.store.answeredBy(this.db, ringGroupId, extensionId);
  }

  private async row(organizationId: string, id: string): Promise<RingGroupRow> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Ring group');
    return row;
  }
}

function toPublic(row: RingGroupRow): PublicRingGroup {
  return {
    id: row.id,
    name: row.name,
    extensionIds: row.extension_ids,
    strategy: row.strategy,
    ringSeconds: row.ring_seconds,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
