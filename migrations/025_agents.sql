-- AI voice agents (CONTRACT section 10, docs/agents.md): knowledge bases of documents split into overlapping
-- chunks indexed for full-text search, agents that answer from them, and the calls agents take.

CREATE TABLE knowledge_bases (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  description      text,
  -- The text-search configuration of its language (english, spanish, …; simple when none fits): chunks are
  -- stemmed with it, and questions too. Changing the language re-indexes every chunk.
  search_config    regconfig NOT NULL DEFAULT 'english',
  language         text NOT NULL DEFAULT 'en',
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX knowledge_bases_org_created ON knowledge_bases (organization_id, created_at DESC, id DESC);

CREATE TABLE knowledge_documents (
  id                 text PRIMARY KEY,
  knowledge_base_id  text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
  organization_id    text NOT NULL,
  title              text NOT NULL,
  -- Where the text came from: JSON content, or the type of the uploaded file it was extracted from.
  source             text NOT NULL CHECK (source IN ('text', 'markdown', 'csv', 'html', 'pdf')),
  filename           text,
  content            text NOT NULL,
  chunk_count        integer NOT NULL,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL
);
CREATE INDEX knowledge_documents_base ON knowledge_documents (knowledge_base_id, created_at DESC, id DESC);

CREATE TABLE knowledge_chunks (
  document_id        text NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
  position           integer NOT NULL,
  knowledge_base_id  text NOT NULL,
  text               text NOT NULL,
  -- The document's title weighted A, the chunk's text B: a question naming a document's subject finds it.
  search             tsvector NOT NULL,
  PRIMARY KEY (document_id, position)
);
CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING gin (search);
CREATE INDEX knowledge_chunks_base ON knowledge_chunks (knowledge_base_id);

CREATE TABLE agents (
  id                    text PRIMARY KEY,
  organization_id       text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                  text NOT NULL,
  instructions          text NOT NULL,
  first_message         text NOT NULL,
  voice                 text NOT NULL,
  language              text NOT NULL,
  end_call_phrases      jsonb NOT NULL,
  transfer_to           text,
  max_duration_seconds  integer NOT NULL,
  tools                 jsonb NOT NULL,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL
);
CREATE INDEX agents_org_created ON agents (organization_id, created_at DESC, id DESC);

-- Which knowledge bases an agent answers from, in the order given; a deleted base leaves its agents.
CREATE TABLE agent_knowledge_bases (
  agent_id           text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  knowledge_base_id  text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
  position           integer NOT NULL,
  PRIMARY KEY (agent_id, knowledge_base_id)
);
CREATE INDEX agent_knowledge_bases_base ON agent_knowledge_bases (knowledge_base_id);

CREATE TABLE agent_calls (
  id                text PRIMARY KEY,
  organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  agent_id          text NOT NULL,
  call_id           text NOT NULL UNIQUE,
  direction         text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  from_number       text NOT NULL,
  to_number         text NOT NULL,
  status            text NOT NULL CHECK (status IN ('queued', 'ringing', 'in_progress', 'completed', 'failed')),
  outcome           text CHECK (outcome IN ('completed', 'transferred', 'ended_by_agent', 'no_answer', 'failed')),
  transcript        jsonb NOT NULL DEFAULT '[]',
  summary           text,
  duration_seconds  integer,
  recording_id      text,
  started_at        timestamptz NOT NULL,
  ended_at          timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);
CREATE INDEX agent_calls_org_created ON agent_calls (organization_id, created_at DESC, id DESC);
