// Knowledge bases (CONTRACT section 10): documents an agent answers from. A document's text (given as JSON or
// extracted from an uploaded file) is split into overlapping chunks indexed with PostgreSQL full-text search
// in the base's language; changing a document or the base's language re-indexes it. Search ranks chunks by
// ts_rank with any word of the question matching (docs/agents.md).
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { ApiError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { PageQueryInput, Paginator } from '../../platform/pagination.ts';
import {
  chunkText,
  type DocumentSource,
  extractDocumentText,
  MAX_DOCUMENT_CHARACTERS,
  sourceOf,
} from './documents.ts';
import { type DocumentRow, type KnowledgeBaseRow, KnowledgeStore } from './knowledge-store.ts';
import { searchConfigOf } from './language.ts';
import type {
  DocumentPatchInput,
  KnowledgeBaseCreateInput,
  KnowledgeBasePatchInput,
  PublicDocument,
  PublicKnowledgeBase,
  SearchHit,
} from './schemas.ts';

export class KnowledgeService {
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly pagination: Paginator;
  readonly store = new KnowledgeStore();

  constructor(deps: { db: Database; clock: Clock; pagination: Paginator }) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.pagination = deps.pagination;
  }

  async create(organizationId: string, input: KnowledgeBaseCreateInput): Promise<PublicKnowledgeBase> {
    const now = this.clock.now();
    const language = input.language ?? 'en';
    const row = await this.store.insertBase(this.db, {
      id: newId('kb', now.getTime()),
      organization_id: organizationId,
      name: input.name,
      description: input.description ?? null,
      language,
      search_config: searchConfigOf(language),
      now,
    });
    return toPublicBase(row);
  }

  async get(organizationId: string, id: string): Promise<PublicKnowledgeBase> {
    return toPublicBase(await this.findBase(this.db, organizationId, id));
  }

  page(organizationId: string, query: PageQueryInput, surface: string) {
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.knowledge-bases.list`,
      keyset: false,
      organizationId,
      ...this.store.baseListQuery(organizationId),
      map: toPublicBase,
    });
  }

  async update(
    organizationId: string,
    id: string,
    patch: KnowledgeBasePatchInput,
  ): Promise<PublicKnowledgeBase> {
    const row = await this.db.transaction((tx) =>
      this.store.updateBase(
        tx,
        organizationId,
        id,
        {
          name: patch.name,
          description: patch.description,
          language: patch.language,
          search_config: patch.language === undefined ? undefined : searchConfigOf(patch.language),
        },
        this.clock.now(),
      ),
    );
    if (!row) throw ApiError.notFound('Knowledge base');
    return toPublicBase(row);
  }

  /** Deletes the base, its documents and their chunks; agents that answered from it keep their other bases. */
  async delete(organizationId: string, id: string): Promise<void> {
    if (!(await this.store.removeBase(this.db, organizationId, id)))
      throw ApiError.notFound('Knowledge base');
  }

  /** Which of `ids` are not the organization's knowledge bases (an agent naming them is refused). */
  async missing(organizationId: string, ids: string[], db: Queryable = this.db): Promise<string[]> {
    const existing = await this.store.existingBases(db, organizationId, ids);
    return ids.filter((id) => !existing.has(id));
  }

  /** Adds a document from JSON text. */
  addText(organizationId: string, baseId: string, input: { title: string; content: string }) {
    return this.add(organizationId, baseId, { ...input, source: 'text', filename: null });
  }

  /**
   * Adds a document from an uploaded file: its kind from its content, name and media type (415 when none we
   * read), its text extracted (400 when it cannot be), titled by `title` or the file's name.
   */
  async addFile(
    organizationId: string,
    baseId: string,
    file: { bytes: Buffer; filename?: string; mediaType?: string; title?: string },
  ): Promise<PublicDocument> {
    await this.findBase(this.db, organizationId, baseId);
    const source = sourceOf(file.bytes, file.filename, file.mediaType);
    if (!source) {
      throw new ApiError(
        415,
        'The file must be text (.txt), Markdown (.md), CSV (.csv), HTML (.html) or PDF (.pdf)',
        { code: 'UNSUPPORTED_DOCUMENT_TYPE' },
      );
    }
    // PDFs may carry NULs in their text, which no database column takes.
    const content = (await extractDocumentText(file.bytes, source)).replaceAll('\u0000', '');
    const filename = file.filename?.slice(0, 255) || null;
    const title = (file.title ?? filename?.replace(/\.[A-Za-z]+$/, '') ?? 'Untitled').slice(0, 200);
    return this.add(organizationId, baseId, { title: title || 'Untitled', content, source, filename });
  }

  async getDocument(organizationId: string, baseId: string, id: string): Promise<PublicDocument> {
    const row = await this.findDocument(this.db, organizationId, baseId, id);
    return { ...toPublicDocument(row), content: await this.store.documentContent(this.db, id) };
  }

  async pageDocuments(organizationId: string, baseId: string, query: PageQueryInput, surface: string) {
    await this.findBase(this.db, organizationId, baseId);
    return this.pagination.list(this.db, query, {
      endpoint: `${surface}.knowledge-documents.list`,
      keyset: false,
      organizationId,
      ...this.store.documentListQuery(organizationId, baseId),
      map: toPublicDocument,
    });
  }

  /** Changes a document's title or text and re-indexes it, in one transaction: search never sees half. */
  async updateDocument(
    organizationId: string,
    baseId: string,
    id: string,
    patch: DocumentPatchInput,
  ): Promise<PublicDocument> {
    return this.db.transaction(async (tx) => {
      const row = await this.findDocument(tx, organizationId, baseId, id);
      const title = patch.title ?? row.title;
      const content = patch.content ?? (await this.store.documentContent(tx, id));
      const chunks = chunksOf(content);
      await this.store.updateDocument(
        tx,
        id,
        { title, content, chunk_count: chunks.length },
        this.clock.now(),
      );
      await this.store.index(tx, id, chunks);
      const updated = await this.findDocument(tx, organizationId, baseId, id);
      return { ...toPublicDocument(updated), content };
    });
  }

  async deleteDocument(organizationId: string, baseId: string, id: string): Promise<void> {
    await this.findBase(this.db, organizationId, baseId);
    if (!(await this.store.removeDocument(this.db, organizationId, baseId, id))) {
      throw ApiError.notFound('Document');
    }
  }

  /** The base's chunks that best match `query`, best first, with scores (POST …/search). */
  async searchBase(
    organizationId: string,
    baseId: string,
    query: string,
    limit: number,
  ): Promise<SearchHit[]> {
    await this.findBase(this.db, organizationId, baseId);
    return this.search(organizationId, [baseId], query, limit);
  }

  /** The chunks of several bases (an agent's) that best match `query`. */
  async search(
    organizationId: string,
    baseIds: string[],
    query: string,
    limit: number,
  ): Promise<SearchHit[]> {
    if (baseIds.length === 0 || query.trim() === '') return [];
    const hits = await this.store.search(this.db, organizationId, baseIds, query, limit);
    return hits.map((hit) => ({
      documentId: hit.document_id,
      knowledgeBaseId: hit.knowledge_base_id,
      title: hit.title,
      text: hit.text,
      score: Math.round(hit.score * 1e6) / 1e6,
    }));
  }

  private async add(
    organizationId: string,
    baseId: string,
    input: { title: string; content: string; source: DocumentSource; filename: string | null },
  ): Promise<PublicDocument> {
    const chunks = chunksOf(input.content);
    const row = await this.db.transaction(async (tx) => {
      await this.findBase(tx, organizationId, baseId);
      return this.store.insertDocument(
        tx,
        {
          id: newId('doc', this.clock.nowMs()),
          knowledge_base_id: baseId,
          organization_id: organizationId,
          title: input.title,
          source: input.source,
          filename: input.filename,
          content: input.content,
          now: this.clock.now(),
        },
        chunks,
      );
    });
    return { ...toPublicDocument(row), content: input.content };
  }

  private async findBase(db: Queryable, organizationId: string, id: string): Promise<KnowledgeBaseRow> {
    const row = await this.store.findBase(db, organizationId, id);
    if (!row) throw ApiError.notFound('Knowledge base');
    return row;
  }

  private async findDocument(db: Queryable, organizationId: string, baseId: string, id: string) {
    const row = await this.store.findDocument(db, organizationId, baseId, id);
    if (!row) throw ApiError.notFound('Document');
    return row;
  }
}

/** The chunks of a document's text; 400 when it has none, 413 when it is past the limit. */
function chunksOf(content: string): string[] {
  if (content.length > MAX_DOCUMENT_CHARACTERS) {
    throw new ApiError(
      413,
      `The document holds ${content.length} characters of text; at most ${MAX_DOCUMENT_CHARACTERS} are indexed. Split it into several documents.`,
      { code: 'DOCUMENT_TOO_LARGE' },
    );
  }
  const chunks = chunkText(content);
  if (chunks.length === 0) throw new ApiError(400, 'The document holds no text', { code: 'DOCUMENT_EMPTY' });
  return chunks;
}

function toPublicBase(row: KnowledgeBaseRow): PublicKnowledgeBase {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    language: row.language,
    documentCount: row.document_count,
    chunkCount: row.chunk_count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function toPublicDocument(row: DocumentRow): PublicDocument {
  return {
    id: row.id,
    knowledgeBaseId: row.knowledge_base_id,
    title: row.title,
    source: row.source,
    filename: row.filename,
    characters: row.characters,
    chunkCount: row.chunk_count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
