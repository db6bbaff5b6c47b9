// The SQL of knowledge bases, their documents and the chunks the search index holds. Every method takes the
// Queryable to run on.

import { assignments } from '../../platform/db/assignments.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { ListQuery } from '../../platform/pagination.ts';
import type { DocumentSource } from './documents.ts';
import { ANY_WORD, QUESTION_TERMS } from './question-terms.ts';

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
/** How many of the best chunks by ts_rank are scored again by their best sentence (see search). */
const RESCORED = 10;
/** A chunk's score grows by this share for each further word of the question that its best sentence holds. */
const SENTENCE_BOOST = 0.5;

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
   *
   * Then the best RESCORED chunks are scored again by their best sentence: words of the question said together
   * in one sentence of a chunk are likelier what it answers than the same number spread over it or its title
   * ("financing for treatment": "For larger treatment plans we offer financing" beats the title "Treatments
   * and prices" and a passing "clear"). Only the first RESCORED, in a second query, so that the cost does not
   * grow with the candidates, and so that the best hit does not depend on how many are asked for.
   */
  async search(db: Queryable, organizationId: string, baseIds: string[], question: string, limit: number) {
    const groups = await this.rankChunks(db, organizationId, baseIds, question, Math.max(limit, RESCORED));
    // Each group rescored within itself: the uncommon words' candidates stay before the rest.
    const hits: ChunkHit[] = [];
    for (const group of groups) {
      const first = group.slice(0, Math.max(0, RESCORED - hits.length));
      hits.push(...(await this.rescoreBySentence(db, question, first)), ...group.slice(first.length));
    }
    return hits.slice(0, limit);
  }

  /**
   * The chunks matching `question` by ts_rank, best first (see search): the candidates of its uncommon words,
   * then when they are fewer than `limit` the best of the rest.
   */
  private async rankChunks(
    db: Queryable,
    organizationId: string,
    baseIds: string[],
    question: string,
    limit: number,
  ): Promise<ChunkHit[][]> {
    const ranked = (commonChunks: number) =>
      db.query<ChunkHit>(
        `-- Each base's question as queries, computed once (not per chunk): every word, and the uncommon words
         -- (a word with its derivations as common as they are together).
         WITH asked AS MATERIALIZED (
           SELECT kb.id, string_agg(qt.term, ' | ')::tsquery AS query,
                  string_agg(qt.term, ' | ') FILTER (WHERE t.chunks <= $5)::tsquery AS rare
           FROM knowledge_bases kb
           CROSS JOIN LATERAL (${QUESTION_TERMS('kb.search_config', '$3', 'kb.id')}) qt
           CROSS JOIN LATERAL (
             SELECT coalesce(sum(k.chunks), 0) AS chunks FROM knowledge_terms k
             WHERE k.knowledge_base_id = kb.id AND k.lexeme = ANY(qt.variants)
           ) t
           WHERE kb.organization_id = $1 AND kb.id = ANY($2::text[])
           GROUP BY kb.id
         )
         SELECT c.document_id, c.position, c.knowledge_base_id, d.title, c.text,
                ts_rank('{0.1, 0.2, 0.4, 0.5}', c.search, a.query, 0)::float8 AS score
         FROM asked a
         JOIN knowledge_chunks c ON c.knowledge_base_id = a.id AND c.search @@ coalesce(a.rare, a.query)
         JOIN knowledge_documents d ON d.id = c.document_id
         ORDER BY score DESC, c.document_id, c.position
         LIMIT $4`,
        [organizationId, baseIds, question, limit, commonChunks],
      );
    const narrowed = await ranked(COMMON_CHUNKS);
    if (narrowed.length >= limit) return [narrowed];
    // Fewer than asked for: the rest from the ranking of every match, after them (so the best hit does not
    // depend on how many are asked for).
    const kept = new Set(narrowed.map((hit) => `${hit.document_id}:${hit.position}`));
    const rest = (await ranked(ALL_CHUNKS)).filter((hit) => !kept.has(`${hit.document_id}:${hit.position}`));
    return [narrowed, rest.slice(0, limit - narrowed.length)];
  }

  /**
   * `hits` with each score raised by SENTENCE_BOOST for every word of the question beyond the first that its
   * best sentence holds, best first (ties in their order).
   */
  private async rescoreBySentence(db: Queryable, question: string, hits: ChunkHit[]): Promise<ChunkHit[]> {
    if (hits.length === 0) return hits;
    const rows = await db.query<{ i: number; words: number }>(
      `SELECT h.i::int - 1 AS i, coalesce(max(s.words), 0)::int AS words
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS h(base_id, text, i)
       JOIN knowledge_bases kb ON kb.id = h.base_id
       CROSS JOIN LATERAL (
         SELECT array_agg(qt.term) AS terms FROM (${QUESTION_TERMS('kb.search_config', '$3', 'kb.id')}) qt
       ) q
       CROSS JOIN LATERAL (
         SELECT (SELECT count(*) FROM unnest(q.terms) AS term WHERE v.words @@ term::tsquery) AS words
         FROM regexp_split_to_table(h.text, '(?<=[.!?])\\s+') AS sentence
         CROSS JOIN LATERAL (SELECT to_tsvector(kb.search_config, sentence) AS words) v
       ) s
       GROUP BY h.i`,
      [hits.map((hit) => hit.knowledge_base_id), hits.map((hit) => hit.text), question],
    );
    const words = new Map(rows.map((row) => [row.i, row.words]));
    return hits
      .map((hit, i) => ({
        ...hit,
        score: hit.score * (1 + SENTENCE_BOOST * Math.max(0, (words.get(i) ?? 0) - 1)),
      }))
      .map((hit, i) => ({ hit, i }))
      .sort((a, b) => b.hit.score - a.hit.score || a.i - b.i)
      .map(({ hit }) => hit);
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
