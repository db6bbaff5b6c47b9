// Agents (CONTRACT section 10): who answers, what it says first, which knowledge bases it answers from, when
// it hangs up or transfers, how long a call may last, and the HTTP tools a model may call. Every field is
// checked before anything is written: knowledge bases must be the organization's, a tool's parameters a valid
// JSON Schema of an object, transferTo a phone number or one of the organization's extensions.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import { normalisePhone } from '../../platform/phone.ts';
import type { NumberService } from '../numbers/index.ts';
import type { Organization } from '../organizations/index.ts';
import { type AgentColumns, type AgentRow, AgentStore } from './agent-store.ts';
import type { KnowledgeService } from './knowledge.ts';
import type { AgentProfile } from './responder.ts';
import type { AgentCreateInput, AgentPatchInput, AgentTool, PublicAgent } from './schemas.ts';

export const DEFAULT_FIRST_MESSAGE = 'Hello! How can I help you today?';
const DEFAULT_END_CALL_PHRASES = ['goodbye', 'bye'];
const DEFAULT_MAX_DURATION_SECONDS = 600;
/** Names the model's own actions take; a tool may not shadow them. */
const BUILT_IN_TOOLS = new Set(['end_call', 'transfer']);

/** Validates JSON Schemas themselves (draft 2020-12, which accepts draft-07 schemas as written). */
const schemaChecker = new Ajv2020({ strict: false, validateFormats: false });

export class AgentService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  private readonly knowledge: KnowledgeService;
  private readonly numbers: NumberService;
  /** Whether the organization has an extension with these digits (a transfer may go to one). */
  private readonly extensionExists: (organizationId: string, digits: string) => Promise<boolean>;
  private readonly production: boolean;
  readonly store = new AgentStore();

  constructor(deps: {
    db: Database;
    clock: Clock;
    pagination: Paginator;
    knowledge: KnowledgeService;
    numbers: NumberService;
    extensionExists: (organizationId: string, digits: string) => Promise<boolean>;
    production: boolean;
  }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
    this.knowledge = deps.knowledge;
    this.numbers = deps.numbers;
    this.extensionExists = deps.extensionExists;
    this.production = deps.production;
  }

  async create(org: Organization, input: AgentCreateInput): Promise<PublicAgent> {
    const columns = await this.columns(org, input);
    const baseIds = await this.checkBases(org.id, input.knowledgeBaseIds ?? []);
    const now = this.clock.now();
    const id = newId('agt', now.getTime());
    await this.db.transaction(async (tx) => {
      await this.store.insert(tx, {
        name: input.name,
        instructions: '',
        first_message: DEFAULT_FIRST_MESSAGE,
        voice: 'en-us',
        language: 'en',
        end_call_phrases: DEFAULT_END_CALL_PHRASES,
        transfer_to: null,
        max_duration_seconds: DEFAULT_MAX_DURATION_SECONDS,
        record_calls: true,
        barge_in: true,
        tools: [],
        keys: {},
        machine_detection: null,
        transfer_mode: 'cold',
        ...definedOnly(columns),
        id,
        organization_id: org.id,
        now,
      });
      await this.store.setKnowledgeBases(tx, id, baseIds);
    });
    return this.get(org.id, id);
  }

  async get(organizationId: string, id: string): Promise<PublicAgent> {
    return toPublic(await this.row(organizationId, id));
  }

  /** The agent as a responder sees it; 404 when it is not the organization's. */
  async profile(organizationId: string, id: string): Promise<AgentProfile & { row: AgentRow }> {
    const row = await this.row(organizationId, id);
    return {
      id: row.id,
      organizationId: row.organization_id,
      name: row.name,
      instructions: row.instructions,
      firstMessage: row.first_message,
      language: row.language,
      knowledgeBaseIds: row.knowledge_base_ids,
      endCallPhrases: row.end_call_phrases,
      transferTo: row.transfer_to,
      tools: row.tools,
      row,
    };
  }

  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.agents.list`,
      keyset: false,
      organizationId,
      ...this.store.listQuery(organizationId),
      map: toPublic,
    });
  }

  async update(org: Organization, id: string, patch: AgentPatchInput): Promise<PublicAgent> {
    const columns = await this.columns(org, patch);
    const baseIds = patch.knowledgeBaseIds && (await this.checkBases(org.id, patch.knowledgeBaseIds));
    await this.db.transaction(async (tx) => {
      if (!(await this.store.update(tx, org.id, id, columns, this.clock.now())))
        throw ApiError.notFound('Agent');
      if (baseIds) await this.store.setKnowledgeBases(tx, id, baseIds);
    });
    return this.get(org.id, id);
  }

  /** Deletes the agent; numbers whose calls it answered lose their route. Its call records stay. */
  async delete(organizationId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (!(await this.store.remove(tx, organizationId, id))) throw ApiError.notFound('Agent');
      await this.numbers.clearRoutesTo(tx, organizationId, ['agent'], id);
    });
  }

  async exists(organizationId: string, id: string): Promise<boolean> {
    return (await this.store.find(this.db, organizationId, id)) !== undefined;
  }

  private async row(organizationId: string, id: string): Promise<AgentRow> {
    const row = await this.store.find(this.db, organizationId, id);
    if (!row) throw ApiError.notFound('Agent');
    return row;
  }

  private async checkBases(organizationId: string, ids: string[]): Promise<string[]> {
    const missing = await this.knowledge.missing(organizationId, ids);
    if (missing.length > 0) {
      throw ApiError.badRequest(
        `knowledgeBaseIds: ${missing.join(', ')} is not a knowledge base of this organization`,
      );
    }
    return ids;
  }

  /** The columns of a create or change, each checked. */
  private async columns(org: Organization, input: AgentPatchInput): Promise<AgentColumns> {
    let transferTo = input.transferTo;
    if (transferTo) {
      if (/^[0-9]{2,6}$/.test(transferTo)) {
        if (!(await this.extensionExists(org.id, transferTo))) {
          throw ApiError.badRequest(`transferTo: no extension ${transferTo} in this organization`);
        }
      } else {
        const phone = normalisePhone(transferTo, org.region);
        if (!phone) throw ApiError.badRequest('transferTo must be a phone number or an extension number');
        transferTo = phone;
      }
    }
    if (input.tools) this.checkTools(input.tools);
    return {
      name: input.name,
      instructions: input.instructions,
      first_message: input.firstMessage,
      voice: input.voice,
      language: input.language,
      end_call_phrases: input.endCallPhrases?.map((phrase) => phrase.trim()).filter(Boolean),
      transfer_to: transferTo,
      max_duration_seconds: input.maxDurationSeconds,
      record_calls: input.recordCalls,
      barge_in: input.bargeIn,
      tools: input.tools,
      keys: input.keys,
      machine_detection: input.machineDetection,
      transfer_mode: input.transferMode,
    };
  }

  private checkTools(tools: AgentTool[]): void {
    const names = new Set<string>();
    for (const [index, tool] of tools.entries()) {
      const at = `tools.${index}`;
      if (BUILT_IN_TOOLS.has(tool.name))
        throw ApiError.badRequest(`${at}.name: ${tool.name} is a built-in action`);
      if (names.has(tool.name)) throw ApiError.badRequest(`${at}.name: ${tool.name} is named twice`);
      names.add(tool.name);
      if (!schemaChecker.validateSchema(tool.parameters)) {
        const problem = schemaChecker.errors?.[0];
        throw ApiError.badRequest(
          `${at}.parameters is not a valid JSON Schema: ${problem?.instancePath || '/'} ${problem?.message ?? ''}`.trim(),
        );
      }
      if (tool.parameters.type !== 'object') {
        throw ApiError.badRequest(`${at}.parameters must be a JSON Schema with "type": "object"`);
      }
      let url: URL;
      try {
        url = new URL(tool.url);
      } catch {
        throw ApiError.badRequest(`${at}.url must be an absolute URL`);
      }
      const allowed = this.production ? ['https:'] : ['https:', 'http:'];
      if (!allowed.includes(url.protocol)) {
        throw ApiError.badRequest(`${at}.url must be ${this.production ? 'https' : 'http or https'}`);
      }
    }
  }
}

function definedOnly<T extends object>(columns: T): Partial<T> {
  return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined)) as Partial<T>;
}

function toPublic(row: AgentRow): PublicAgent {
  return {
    id: row.id,
    name: row.name,
    instructions: row.instructions,
    firstMessage: row.first_message,
    voice: row.voice,
    language: row.language,
    knowledgeBaseIds: row.knowledge_base_ids,
    endCallPhrases: row.end_call_phrases,
    transferTo: row.transfer_to,
    maxDurationSeconds: row.max_duration_seconds,
    recordCalls: row.record_calls,
    bargeIn: row.barge_in,
    tools: row.tools,
    keys: row.keys,
    machineDetection: row.machine_detection,
    transferMode: row.transfer_mode,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
