-- How many chunks of each knowledge base hold each word (stemmed lexeme): the search ranks only the chunks
-- holding a question's less common words when there are enough of them, as Elasticsearch's common-terms query
-- does, instead of every chunk that shares a common word with the question (src/modules/agents/knowledge-store.ts).
-- Kept by statement triggers on knowledge_chunks, so every way chunks change (a document added, re-chunked or
-- deleted, a base re-indexed in another language or deleted) keeps the counts.
CREATE TABLE knowledge_terms (
  knowledge_base_id  text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
  lexeme             text NOT NULL,
  chunks             integer NOT NULL,
  PRIMARY KEY (knowledge_base_id, lexeme)
);

INSERT INTO knowledge_terms (knowledge_base_id, lexeme, chunks)
SELECT c.knowledge_base_id, l.lexeme, count(*)::int
FROM knowledge_chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.search)) AS l(lexeme)
GROUP BY 1, 2;

-- Rows are locked in key order, so two transactions changing the same base's words cannot deadlock.
CREATE FUNCTION knowledge_terms_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM 1 FROM knowledge_terms t
    WHERE (t.knowledge_base_id, t.lexeme) IN (
      SELECT r.knowledge_base_id, l.lexeme
      FROM removed r CROSS JOIN LATERAL unnest(tsvector_to_array(r.search)) AS l(lexeme))
    ORDER BY t.knowledge_base_id, t.lexeme
    FOR UPDATE;
    UPDATE knowledge_terms t SET chunks = t.chunks - g.n
    FROM (SELECT r.knowledge_base_id, l.lexeme, count(*)::int AS n
          FROM removed r CROSS JOIN LATERAL unnest(tsvector_to_array(r.search)) AS l(lexeme)
          GROUP BY 1, 2) g
    WHERE t.knowledge_base_id = g.knowledge_base_id AND t.lexeme = g.lexeme;
    DELETE FROM knowledge_terms t
    WHERE t.chunks <= 0 AND (t.knowledge_base_id, t.lexeme) IN (
      SELECT r.knowledge_base_id, l.lexeme
      FROM removed r CROSS JOIN LATERAL unnest(tsvector_to_array(r.search)) AS l(lexeme));
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    INSERT INTO knowledge_terms AS t (knowledge_base_id, lexeme, chunks)
    SELECT a.knowledge_base_id, l.lexeme, count(*)::int
    FROM added a CROSS JOIN LATERAL unnest(tsvector_to_array(a.search)) AS l(lexeme)
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, lexeme) DO UPDATE SET chunks = t.chunks + EXCLUDED.chunks;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_terms_on_insert AFTER INSERT ON knowledge_chunks
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_count();
CREATE TRIGGER knowledge_terms_on_delete AFTER DELETE ON knowledge_chunks
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_count();
CREATE TRIGGER knowledge_terms_on_update AFTER UPDATE ON knowledge_chunks
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_count();
