// The SQL of knowledge bases, their documents and the chunks the search index holds. Every method takes the
// Queryable to run on.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { DocumentSource } from './documents.ts';

export interface KnowledgeBaseRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  language: string;
  search_config: string;
  document_count: number;
  chunk_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface DocumentRow {
  id: string;
  knowledge_base_id: string;
  organization_id: string;
  title: string;
  source: DocumentSource;
  filename: string | null;
  characters: number;
  chunk_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface ChunkHit {
  document_id: string;
  position: number;
  knowledge_base_id: string;
  title: string;
  text: string;
  score: number;
}

/** A base with its counts, computed (a base has at most a few thousand chunks; the index answers these). */
const BASE_COLUMNS = `kb.*,
  (SELECT count(*)::int FROM knowledge_documents d WHERE d.knowledge_base_id = kb.id) AS document_count,
  (SELECT count(*)::int FROM knowledge_chunks c WHERE c.knowledge_base_id = kb.id) AS chunk_count`;
const DOCUMENT_COLUMNS = `id, knowledge_base_id, organization_id, title, source, filename,
  length(content) AS characters, chunk_count, created_at, updated_at`;

/** A word in more chunks of a base than this is common (see KnowledgeStore.search). */
const COMMON_CHUNKS = 200;
const ALL_CHUNKS = 2 ** 31 - 1;

/**
 * The endings that make a word's derivations which the English stemmer leaves apart from it, as stemmed:
 * "pay" → "payment", "dentist" → "dentistri" (dentistry), "clean" → "cleaner", "art" → "artist". A question's
 * word also matches the knowledge's word that is it with one of these endings: callers say one for the other.
 * Only these endings, not any longer word ("car" is not "card" or "carecredit").
 */
const DERIVATIONS: Record<string, string[]> = { english: ['ment', 'ri', 'er', 'ist'] };

/** The question's lexeme `asked` matches the knowledge's lexeme `known` (QUESTION_TERMS's rule, in code). */
export function matches(config: string, asked: string, known: string): boolean {
  if (asked === known) return true;
  return known.startsWith(asked) && (DERIVATIONS[config]?.includes(known.slice(asked.length)) ?? false);
}

/**
 * Whether a question's lexeme counts: a single letter does not. A recogniser writes "see", "you" or "why" heard
 * alone as the letters c, u, y, and "i'm" leaves an "m"; a knowledge base holding a letter ("reply C to
 * confirm") would then answer a question that asked nothing of it.
 */
export const counts = (lexeme: string) => !/^\p{L}$/u.test(lexeme);

/**
 * A question's lexemes (stemmed by the base's configuration; stop words and single letters dropped), each with
 * its variants and its tsquery term, the variants quoted as tsquery input quotes them, any matching. Given a
 * `base` (the search), the variants are the lexeme and those of its DERIVATIONS the base holds (absent words
 * would dilute ts_rank, which averages over the query's words); without (ranking a chunk's sentences), the
 * lexeme alone: the chunk was found with the derivations, and within it the sentences holding the caller's
 * own words answer best ("nervous about the dentist": the sentence about nervous patients, not the one with
 * "dentistry").
 */
const QUESTION_TERMS = (config: string, question: string, base?: string) =>
  `SELECT w.lexeme, v.variants,
          '(' || (SELECT string_agg('''' || replace(replace(x, '\\', '\\\\'), '''', '''''') || '''', ' | ')
                  FROM unnest(v.variants) AS x
                  ${base ? `WHERE x = w.lexeme OR EXISTS (SELECT 1 FROM knowledge_terms k WHERE k.knowledge_base_id = ${base} AND k.lexeme = x)` : ''}) || ')' AS term
   FROM unnest(tsvector_to_array(to_tsvector(${config}, ${question}))) AS w(lexeme)
   CROSS JOIN LATERAL (
     SELECT w.lexeme || ${
       base
         ? `ARRAY(
       SELECT w.lexeme || ending
       FROM jsonb_array_elements_text('${JSON.stringify(DERIVATIONS)}'::jsonb -> (${config})::text) AS e(ending)
     )`
         : `'{}'::text[]`
} AS variants
   ) v
   WHERE w.lexeme !~ '^[[:alpha:]]$'`;

/** A question as a text-search query: any of its words matching (callers rarely say every word of the answer). */
const ANY_WORD = (config: string, question: string, base?: string) =>
  `(SELECT string_agg(qt.term, ' | ')::tsquery FROM (${QUESTION_TERMS(config, question, base)}) qt)`;

export class KnowledgeStore {
  async insertBase(
    db: Queryable,
    row: {
      id: string;
      organization_id: string;
      name: string;
      description: string | null;
      language: string;
      search_config: string;
      now: Date;
    },
  ): Promise<KnowledgeBaseRow> {
    await db.query(
      `INSERT INTO knowledge_bases (id, organization_id, name, description, language, search_config, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6::regconfig, $7, $7)`,
      [row.id, row.organization_id, row.name, row.description, row.language, row.search_config, row.now],
    );
    return (await this.findBase(db, row.organization_id, row.id))!;
  }

  async findBase(db: Queryable, organizationId: string, id: string): Promise<KnowledgeBaseRow | undefined> {
    const [row] = await db.query<KnowledgeBaseRow>(
      `SELECT ${BASE_COLUMNS} FROM knowledge_bases kb WHERE kb.id = $1 AND kb.organization_id = $2`,
      [id, organizationId],
    );
    return row;
  }

  /** Which of `ids` are the organization's knowledge bases. */
  async existingBases(db: Queryable, organizationId: string, ids: string[]): Promise<Set<string>> {
    const rows = await db.query<{ id: string }>(
      'SELECT id FROM knowledge_bases WHERE organization_id = $1 AND id = ANY($2::text[])',
      [organizationId, ids],
    );
    return new Set(rows.map((row) => row.id));
  }

  baseListQuery(
    organizationId: string,
  ): Pick<ListQuery<KnowledgeBaseRow, unknown>, 'select' | 'from' | 'where' | 'params' | 'orderBy'> {
    return {
      select: BASE_COLUMNS,
      from: 'knowledge_bases kb',
      where: 'kb.organization_id = $1',
      params: [organizationId],
      orderBy: { createdAt: 'kb.created_at', id: 'kb.id' },
    };
  }

  /** Sets the fields given; a new search configuration re-indexes every chunk of the base with it. */
  async updateBase(
    db: Queryable,
    organizationId: string,
    id: string,
    fields: { name?: string; description?: string | null; language?: string; search_config?: string },
    now: Date,
  ): Promise<KnowledgeBaseRow | undefined> {
    const params: unknown[] = [id, organizationId, now];
    const sets = ['updated_at = $3', ...assignments(fields, params, { search_config: 'regconfig' })];
    const updated = await db.query(
      `UPDATE knowledge_bases SET ${sets.join(', ')} WHERE id = $1 AND organization_id = $2 RETURNING id`,
      params,
    );
    if (updated.length === 0) return undefined;
    if (fields.search_config !== undefined) {
      await db.query(
        `UPDATE knowledge_chunks c
         SET search = setweight(to_tsvector(kb.search_config, d.title), 'A') || setweight(to_tsvector(kb.search_config, c.text), 'B')
         FROM knowledge_documents d, knowledge_bases kb
         WHERE c.knowledge_base_id = $1 AND d.id = c.document_id AND kb.id = c.knowledge_base_id`,
        [id],
      );
    }
    return this.findBase(db, organizationId, id);
  }

  async removeBase(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      'DELETE FROM knowledge_bases WHERE id = $1 AND organization_id = $2 RETURNING id',
      [id, organizationId],
    );
    return rows.length > 0;
  }

  async insertDocument(
    db: Queryable,
    row: {
      id: string;
      knowledge_base_id: string;
      organization_id: string;
      title: string;
      source: DocumentSource;
      filename: string | null;
      content: string;
      now: Date;
    },
    chunks: string[],
  ): Promise<DocumentRow> {
    await db.query(
      `INSERT INTO knowledge_documents (id, knowledge_base_id, organization_id, title, source, filename, content,
                                        chunk_count, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
      [
        row.id,
        row.knowledge_base_id,
        row.organization_id,
        row.title,
        row.source,
        row.filename,
        row.content,
        chunks.length,
        row.now,
      ],
    );
    await this.index(db, row.id, chunks);
    return (await this.findDocument(db, row.organization_id, row.knowledge_base_id, row.id))!;
  }

  /** Replaces a document's chunks with `chunks`, indexed with its base's configuration and its title. */
  async index(db: Queryable, documentId: string, chunks: string[]): Promise<void> {
    await db.query('DELETE FROM knowledge_chunks WHERE document_id = $1', [documentId]);
    await db.query(
      `INSERT INTO knowledge_chunks (document_id, position, knowledge_base_id, text, search)
       SELECT d.id, chunk.position - 1, d.knowledge_base_id, chunk.text,
              setweight(to_tsvector(kb.search_config, d.title), 'A') || setweight(to_tsvector(kb.search_config, chunk.text), 'B')
       FROM knowledge_documents d
       JOIN knowledge_bases kb ON kb.id = d.knowledge_base_id
       CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS chunk(text, position)
       WHERE d.id = $1`,
      [documentId, chunks],
    );
  }

  async findDocument(
    db: Queryable,
    organizationId: string,
    baseId: string,
    id: string,
  ): Promise<DocumentRow | undefined> {
    const [row] = await db.query<DocumentRow>(
      `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents
       WHERE id = $1 AND knowledge_base_id = $2 AND organization_id = $3`,
      [id, baseId, organizationId],
    );
    return row;
  }

  async documentContent(db: Queryable, documentId: string): Promise<string> {
    const [row] = await db.query<{ content: string }>(
      'SELECT content FROM knowledge_documents WHERE id = $1',
      [documentId],
    );
    return row!.content;
  }

  documentListQuery(
    organizationId: string,
    baseId: string,
  ): Pick<ListQuery<DocumentRow, unknown>, 'select' | 'from' | 'where' | 'params'> {
    return {
      select: DOCUMENT_COLUMNS,
      from: 'knowledge_documents',
      where: 'organization_id = $1 AND knowledge_base_id = $2',
      params: [organizationId, baseId],
    };
  }

  async updateDocument(
    db: Queryable,
    id: string,
    fields: { title: string; content: string; chunk_count: number },
    now: Date,
  ): Promise<void> {
    await db.query(
      'UPDATE knowledge_documents SET title = $2, content = $3, chunk_count = $4, updated_at = $5 WHERE id = $1',
      [id, fields.title, fields.content, fields.chunk_count, now],
    );
  }

  async removeDocument(db: Queryable, organizationId: string, baseId: string, id: string): Promise<boolean> {
    const rows = await db.query(
      `DELETE FROM knowledge_documents WHERE id = $1 AND knowledge_base_id = $2 AND organization_id = $3
       RETURNING id`,
      [id, baseId, organizationId],
    );
    return rows.length > 0;
  }

  /**
   * The chunks of the bases that best match `question`, best first: each base's question stemmed by its own
   * configuration; score is ts_rank over title (weight A, 0.5) and text (B, 0.4). The weights and the absence
   * of length normalisation were chosen on the dental corpus of the tests (20 questions, each finding its
   * document first): PostgreSQL's default title weight of 1.0 let a title word outrank the text that
   * answers, and normalising by length favoured short chunks that mention a word in passing.
   *
   * Ranking costs a read of every candidate chunk, and a question holding one of a large base's common words
   * matches most of it. So, as Elasticsearch's common-terms query does, the candidates are the chunks holding
   * the question's words that are in at most COMMON_CHUNKS chunks of the base (knowledge_terms); the common
   * words still count in every candidate's score. When every word is common, all chunks holding any word are
   * ranked, as without the cut; when the candidates are fewer than `limit`, the rest of the hits come after
   * them from that full ranking. A base of fewer chunks than COMMON_CHUNKS never has a common word, so its
   * results are exactly the full ranking's.
   */
  async search(db: Queryable, organizationId: string, baseIds: string[], question: string, limit: number) {
    const ranked = (commonChunks: number) =>
      db.query<ChunkHit>(
        `SELECT c.document_id, c.position, c.knowledge_base_id, d.title, c.text,
                ts_rank('{0.1, 0.2, 0.4, 0.5}', c.search, q.query, 0)::float8 AS score
         FROM knowledge_bases kb
         CROSS JOIN LATERAL (SELECT ${ANY_WORD('kb.search_config', '$3', 'kb.id')} AS query) q
         CROSS JOIN LATERAL (
           -- The question's uncommon words as a query (a word with its derivations as common as
           -- they are together).
           SELECT string_agg(qt.term, ' | ') FILTER (WHERE coalesce(t.chunks, 0) <= $5)::tsquery AS query
           FROM (${QUESTION_TERMS('kb.search_config', '$3', 'kb.id')}) qt
           CROSS JOIN LATERAL (
             SELECT sum(k.chunks) AS chunks FROM knowledge_terms k
             WHERE k.knowledge_base_id = kb.id AND k.lexeme = ANY(qt.variants)
           ) t
         ) rare
         JOIN knowledge_chunks c ON c.knowledge_base_id = kb.id AND c.search @@ coalesce(rare.query, q.query)
         JOIN knowledge_documents d ON d.id = c.document_id
         WHERE kb.organization_id = $1 AND kb.id = ANY($2::text[])
         ORDER BY score DESC, c.document_id, c.position
         LIMIT $4`,
        [organizationId, baseIds, question, limit, commonChunks],
      );
    const narrowed = await ranked(COMMON_CHUNKS);
    if (narrowed.length >= limit) return narrowed;
    // Fewer than asked for: the rest from the ranking of every match, after them (so the best hit does not
    // depend on how many are asked for).
    const kept = new Set(narrowed.map((hit) => `${hit.document_id}:${hit.position}`));
    const rest = (await ranked(ALL_CHUNKS)).filter((hit) => !kept.has(`${hit.document_id}:${hit.position}`));
    return [...narrowed, ...rest].slice(0, limit);
  }

  /**
   * The sentences of `text` ranked by how well each matches `question` (the same stemming as the search): the
   * offline responder answers with the best of them.
   */
  async rankSentences(db: Queryable, config: string, question: string, sentences: string[]) {
    return db.query<{ position: number; score: number }>(
      `SELECT s.position::int - 1 AS position, ts_rank(to_tsvector($1::regconfig, s.text), q.query)::float8 AS score
       FROM unnest($3::text[]) WITH ORDINALITY AS s(text, position),
            (SELECT ${ANY_WORD('$1::regconfig', '$2')} AS query) q
       ORDER BY position`,
      [config, question, sentences],
    );
  }

  /** The lexemes of `text` (stemmed by `config`, stop words dropped), in no particular order. */
  async lexemes(db: Queryable, config: string, text: string): Promise<string[]> {
    const [row] = await db.query<{ lexemes: string[] }>(
      'SELECT tsvector_to_array(to_tsvector($1::regconfig, $2)) AS lexemes',
      [config, text],
    );
    return row!.lexemes;
  }
}
