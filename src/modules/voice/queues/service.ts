// Call queues (CONTRACT section 13) as a resource: who answers, in which order, what a waiting caller hears and
// for how long, and the call-flow steps run when the wait is up. The members follow the ring groups' rule (the
// organization's extensions, checked in the write's transaction); onTimeout is checked as call-flow steps are
// (their shapes and limits, a refusal naming the path), the ids inside them by their shape only.
// `live` reads the runtime's records (runtime.ts): who waits, and each member's state (member-states.ts).
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import { newId } from '../../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../../platform/pagination.ts';
import { timeWindow } from '../../../platform/time-window.ts';
import { checkFlowSteps, type FlowStep } from '../flows/index.ts';
import { checkMembers } from '../ring-groups/index.ts';
import { EntryStore } from './entry-store.ts';
import { memberState, type Presence } from './member-states.ts';
import {
  DEFAULT_MAX_WAIT_SECONDS,
  type PublicQueue,
  type QueueCreateInput,
  type QueueLive,
  type QueuePatchInput,
} from './schemas.ts';
import { type QueueColumns, type QueueRow, QueueStore } from './store.ts';

export class QueueService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly presence: () => Presence;
  /** Whether the organization has recording `id` (a holdAudioId names one, as a play step's audioId does). */
  private readonly recordingExists?: (organizationId: string, id: string) => Promise<boolean>;
  readonly store = new QueueStore();
  private readonly entries = new EntryStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    /** Whether members' phones ring over SIP now (then a member without a registered phone is offline). */
    presence?: () => Presence;
    recordingExists?: (organizationId: string, id: string) => Promise<boolean>;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.presence = deps.presence ?? (() => 'simulated');
    this.recordingExists = deps.recordingExists;
  }

  /** A holdAudioId must be a recording of the organization (400 otherwise), like a play step's audioId. */
  private async checkHoldAudio(organizationId: string, id: string | null | undefined): Promise<void> {
    if (!id || !this.recordingExists) return;
    if (!(await this.recordingExists(organizationId, id)))
      throw ApiError.badRequest(`holdAudioId: ${id} is not a recording of this organization`);
  }

  /** Whether the organization has the queue (a call flow's queue step names one). */
  async exists(organizationId: string, id: string): Promise<boolean> {
    return (await this.store.find(this.db, organizationId, id)) !== undefined;
  }

  /** GET /queues/{id}/live: the callers in the queue in order, and each member's state now. */
  async live(organizationId: string, id: string, query: { since?: string } = {}): Promise<QueueLive> {
    if (!(await this.store.find(this.db, organizationId, id))) throw ApiError.notFound('Queue');
    const now = this.clock.now();
    // A wallboard counts from the start of its own day; without one, the last 24 hours.
    const { since } = timeWindow({ since: query.since }, now, { defaultDays: 1, maxDays: 31 });
    const waiting = await this.entries.waiting(this.db, id);
    const facts = await this.entries.memberFacts(this.db, organizationId, id, now);
    const outcomes = await this.entries.outcomesSince(this.db, id, since);
    const presence = this.presence();
    return {
      outcomes: { since: since.toISOString(), ...outcomes },
      waiting: waiting.map((entry) => ({
        callId: entry.call_id,
        from: entry.from_number,
        since: entry.joined_at.toISOString(),
        position: entry.position,
      })),
      members: facts.map((member) => ({
        extensionId: member.extension_id,
        state: memberState(member, now, presence),
      })),
    };
  }

  async create(organizationId: string, input: QueueCreateInput): Promise<PublicQueue> {
    const now = this.clock.now();
    const id = newId('q', now.getTime());
    await this.checkHoldAudio(organizationId, input.holdAudioId);
    await this.db.transaction(async (tx) => {
      await checkMembers(tx, organizationId, input.extensionIds);
      await this.store.insert(tx, {
        id,
        organization_id: organizationId,
        name: input.name,
        strategy: input.strategy ?? 'longest_idle',
        hold_audio_id: input.holdAudioId ?? null,
        announce_position: input.announcePosition ?? false,
        max_wait_seconds: input.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS,
        on_timeout: checkedSteps(input.onTimeout ?? []),
        wrap_up_seconds: input.wrapUpSeconds ?? 0,
        now,
      });
      await this.store.setMembers(tx, id, input.extensionIds);
    });
    return this.get(organizationId, id);
  }

  async get(organizationId: string, id: string): Promise<PublicQueue> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Queue');
    return toPublic(row);
  }

  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.queues.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: toPublic,
    });
  }

  async update(organizationId: string, id: string, patch: QueuePatchInput): Promise<PublicQueue> {
    await this.checkHoldAudio(organizationId, patch.holdAudioId);
    await this.db.transaction(async (tx) => {
      // The queue first: another organization's id is 404 whatever the body holds.
      if (!(await this.store.find(tx, organizationId, id))) throw ApiError.notFound('Queue');
      if (patch.extensionIds) {
        await checkMembers(tx, organizationId, patch.extensionIds);
        await this.store.setMembers(tx, id, patch.extensionIds);
      }
      const columns: QueueColumns = {
        name: patch.name,
        strategy: patch.strategy,
        hold_audio_id: patch.holdAudioId,
        announce_position: patch.announcePosition,
        max_wait_seconds: patch.maxWaitSeconds,
        on_timeout: patch.onTimeout && checkedSteps(patch.onTimeout),
        wrap_up_seconds: patch.wrapUpSeconds,
      };
      await this.store.update(tx, organizationId, id, columns, this.clock.now());
    });
    return this.get(organizationId, id);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    if (!(await this.store.remove(this.db, organizationId, id))) throw ApiError.notFound('Queue');
  }
}

/** The steps as a call flow would take them; 400 INVALID_FLOW_STEP naming the first bad field's path. */
function checkedSteps(steps: unknown[]): FlowStep[] {
  const result = checkFlowSteps(steps, 'onTimeout');
  if ('problem' in result) {
    const { path, message } = result.problem;
    throw ApiError.badRequest(`${path} ${message}`, { code: 'INVALID_FLOW_STEP', data: { path } });
  }
  return result.steps;
}

function toPublic(row: QueueRow): PublicQueue {
  return {
    id: row.id,
    name: row.name,
    extensionIds: row.extension_ids,
    strategy: row.strategy,
    holdAudioId: row.hold_audio_id,
    announcePosition: row.announce_position,
    maxWaitSeconds: row.max_wait_seconds,
    onTimeout: row.on_timeout,
    wrapUpSeconds: row.wrap_up_seconds,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
