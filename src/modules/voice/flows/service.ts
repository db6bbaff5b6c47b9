// Call flows (CONTRACT section 13): create, read, change and delete an organization's flows, each change of
// the steps a new version kept beside the old ones, and `resolve` for the flow runner. Steps are checked
// (step-check.ts) and the ids they name looked up in the organization before anything is stored.
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/index.ts';
import { ApiError } from '../../../platform/errors.ts';
import { newId } from '../../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../../platform/pagination.ts';
import type { NumberService } from '../../numbers/index.ts';
import type { ExtensionService } from '../extensions.ts';
import { checkStreamTarget, type StreamTargetOptions, StreamTargetRefused } from '../stream-target.ts';
import type { CallFlowCreateInput, CallFlowPatchInput, PublicCallFlow } from './schemas.ts';
import { sipExtension } from './sip-target.ts';
import { checkFlowSteps, type FlowReference } from './step-check.ts';
import type { FlowStep } from './steps.ts';
import { type CallFlowRow, CallFlowStore } from './store.ts';

/** What the runner gets: the steps of one version of a flow. */
export interface ResolvedFlow {
  flowId: string;
  version: number;
  steps: FlowStep[];
}

const KIND_NAMES: Record<FlowReference['kind'], string> = {
  extension: 'extension',
  agent: 'agent',
  flow: 'call flow',
  queue: 'queue',
  ring_group: 'ring group',
  audio: 'recording',
  url: 'url',
  number: 'phone number',
  sip: 'extension',
};

function invalidStep(path: string, message: string): ApiError {
  return ApiError.badRequest(`${path} ${message}`, { code: 'INVALID_FLOW_STEP', data: { path } });
}

export class CallFlowService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly extensions: ExtensionService;
  private readonly numbers: NumberService;
  private readonly recordingExists: (organizationId: string, id: string) => Promise<boolean>;
  private readonly sipDomain: string;
  /** Whether a ring group exists (ring-groups/, built after this service: useRingGroups). */
  private ringGroupExists?: (organizationId: string, id: string) => Promise<boolean>;
  /** Whether a queue exists (queues/, built after this service: useQueues). */
  private queueExists?: (organizationId: string, id: string) => Promise<boolean>;
  /** Checks a URL a step POSTs to by the webhooks module's rules (useUrlCheck); throws its 400. */
  private urlCheck?: (url: string) => Promise<string>;
  /** Where a stream step may go (production: wss to public addresses only). */
  private readonly streams: StreamTargetOptions;
  readonly store = new CallFlowStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    extensions: ExtensionService;
    numbers: NumberService;
    /** Production's rules for stream urls when absent. */
    streams?: StreamTargetOptions;
    /** Whether the organization has recording `id` (a play step's audioId). */
    recordingExists: (organizationId: string, id: string) => Promise<boolean>;
    /** The platform's SIP domain: a sip dial target must name a phone registered there. */
    sipDomain: string;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.extensions = deps.extensions;
    this.numbers = deps.numbers;
    this.streams = deps.streams ?? { guarded: true };
    this.recordingExists = deps.recordingExists;
    this.sipDomain = deps.sipDomain;
  }

  /** Lets saved flows' ring-group targets be looked up in the organization. */
  useRingGroups(exists: (organizationId: string, id: string) => Promise<boolean>): void {
    this.ringGroupExists = exists;
  }

  /** Lets saved flows' queue steps be looked up in the organization. */
  useQueues(exists: (organizationId: string, id: string) => Promise<boolean>): void {
    this.queueExists = exists;
  }

  /** Lets the URLs steps POST to (a gather's actionUrl, a redirect's url) be checked as webhook URLs are. */
  useUrlCheck(check: (url: string) => Promise<string>): void {
    this.urlCheck = check;
  }

  async create(organizationId: string, input: CallFlowCreateInput): Promise<PublicCallFlow> {
    const now = this.clock.now();
    const id = newId('flow', now.getTime());
    const steps = await this.checked(organizationId, input.steps, id);
    const row = await this.db.transaction((tx) =>
      this.store.insert(tx, { id, organization_id: organizationId, name: input.name, steps, now }),
    );
    return toPublic(row);
  }

  async get(organizationId: string, id: string): Promise<PublicCallFlow> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Call flow');
    return toPublic(row);
  }

  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.callFlows.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: (row: CallFlowRow) => toPublic(row),
    });
  }

  /** Renames the flow, and makes new steps its next version; calls already running keep theirs. */
  async update(organizationId: string, id: string, patch: CallFlowPatchInput): Promise<PublicCallFlow> {
    const steps = patch.steps === undefined ? undefined : await this.checked(organizationId, patch.steps, id);
    const row = await this.db.transaction((tx) =>
      this.store.update(tx, organizationId, id, { name: patch.name, steps }, this.clock.now()),
    );
    if (!row) throw ApiError.notFound('Call flow');
    return toPublic(row);
  }

  /**
   * Deletes the flow and its versions, unless a number sends its calls to it: a number must never route to
   * nothing, so the route is changed first (409 CALL_FLOW_IN_USE names the numbers). The flow is locked while
   * the numbers are read, so a route set at the same moment waits and then finds no flow.
   */
  async delete(organizationId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (!(await this.store.lock(tx, organizationId, id))) throw ApiError.notFound('Call flow');
      // A webhook route's fallback flow is a route to it too: the app's callers would be left with nothing.
      const routed = (await this.numbers.list(organizationId, tx)).filter(
        (number) =>
          (number.voiceRoute?.type === 'flow' && number.voiceRoute.target === id) ||
          number.voiceRoute?.fallbackFlowId === id,
      );
      if (routed.length > 0) {
        const numbers = routed.map((number) => number.number);
        throw new ApiError(
          409,
          `The call flow is the voice route of ${numbers.join(', ')}: route ${numbers.length === 1 ? 'that number' : 'those numbers'} elsewhere first`,
          {
            code: 'CALL_FLOW_IN_USE',
            data: { numbers: routed.map((number) => ({ id: number.id, number: number.number })) },
          },
        );
      }
      await this.store.remove(tx, organizationId, id);
    });
  }

  /** Whether the organization has flow `id` (a number's voice route may name it). */
  async exists(organizationId: string, id: string): Promise<boolean> {
    return (await this.store.existing(this.db, organizationId, [id])).has(id);
  }

  /**
   * The steps a call runs: of `version` when given (the one the call started on), else of the latest. Undefined
   * when the flow is not the organization's, or has no such version.
   */
  async resolve(organizationId: string, flowId: string, version?: number): Promise<ResolvedFlow | undefined> {
    if (version === undefined) {
      const row = await this.store.find(this.db, organizationId, flowId);
      return row ? { flowId: row.id, version: row.version, steps: row.steps } : undefined;
    }
    const found = await this.store.findVersion(this.db, organizationId, flowId, version);
    return found ? { flowId, version: found.version, steps: found.steps } : undefined;
  }

  /**
   * The steps, checked: their shapes and limits, then each id they name found in the organization (ring groups
   * and queues once their services have said how: useRingGroups, useQueues), a play step's recording, a dial's
   * caller id among the organization's numbers, a sip target's extension; the URLs steps POST to by the webhooks
   * module's rules (useUrlCheck). A flow may redirect to itself (`self`): the runner bounds the steps a call
   * runs. The steps an app answers on a call (voice/flow-webhook.ts) are checked here too, with no `self`.
   */
  async checked(organizationId: string, input: unknown, self?: string, path = 'steps'): Promise<FlowStep[]> {
    const result = checkFlowSteps(input, path);
    if ('problem' in result) throw invalidStep(result.problem.path, result.problem.message);
    // A stream's WebSocket by the webhooks' SSRF rules, as the call will check it again when it connects.
    for (const { path: at, url } of result.streamUrls) {
      try {
        await checkStreamTarget(url, this.streams);
      } catch (error) {
        if (error instanceof StreamTargetRefused) throw invalidStep(at, error.message);
        throw error;
      }
    }
    const flowIds = [
      ...new Set(result.references.filter((r) => r.kind === 'flow' && r.id !== self).map((r) => r.id)),
    ];
    const flows = await this.store.existing(this.db, organizationId, flowIds);
    const known = new Map<string, boolean>();
    for (const reference of result.references) {
      const key = `${reference.kind}:${reference.id}`;
      if (!known.has(key)) known.set(key, await this.found(organizationId, reference, flows, self));
      if (!known.get(key)) {
        throw invalidStep(
          reference.path,
          reference.kind === 'sip'
            ? `names no extension of this organization at sip:<extension>@${this.sipDomain}`
            : `names no ${KIND_NAMES[reference.kind]} ${reference.id} in this organization`,
        );
      }
    }
    return result.steps;
  }

  private async found(
    organizationId: string,
    reference: FlowReference,
    flows: Set<string>,
    self: string | undefined,
  ): Promise<boolean> {
    switch (reference.kind) {
      case 'extension':
        return this.extensions.exists(organizationId, reference.id);
      case 'agent':
        return this.numbers.routeTargetExists('agent', organizationId, reference.id);
      case 'flow':
        return reference.id === self || flows.has(reference.id);
      case 'ring_group':
        return this.ringGroupExists ? this.ringGroupExists(organizationId, reference.id) : true;
      case 'queue':
        return this.queueExists ? this.queueExists(organizationId, reference.id) : true;
      case 'url':
        try {
          await this.urlCheck?.(reference.id);
        } catch (error) {
          if (error instanceof ApiError) throw invalidStep(reference.path, error.message);
          throw error;
        }
        return true;
      case 'audio':
        return this.recordingExists(organizationId, reference.id);
      case 'number':
        // The number shown to whom a dial rings must be one the organization owns (no spoofing).
        return (await this.numbers.list(organizationId)).some((number) => number.number === reference.id);
      case 'sip': {
        const extension = sipExtension(reference.id, this.sipDomain);
        if (extension === undefined) return false;
        return (await this.extensions.store.findByNumber(this.db, organizationId, extension)) !== undefined;
      }
      default:
        return true;
    }
  }
}

function toPublic(row: CallFlowRow): PublicCallFlow {
  return {
    id: row.id,
    name: row.name,
    steps: row.steps,
    version: row.version,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
