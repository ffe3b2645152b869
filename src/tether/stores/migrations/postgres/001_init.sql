-- tether's PostgreSQL schema, version 1. Every row belongs to one collection; several
-- collections share the tables. The vector extension must exist (an administrator may have
-- to create it: CREATE EXTENSION vector).
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE tether_collections (
  id serial PRIMARY KEY,
  name text NOT NULL UNIQUE,
  generation bigint NOT NULL DEFAULT 0,
  lex_rows bigint NOT NULL DEFAULT 0,     -- chunks in the lexical index (BM25's N)
  lex_tokens bigint NOT NULL DEFAULT 0,   -- their tokens in all columns (avgdl = tokens / rows)
  hnsw_dim integer                        -- the dimension of the collection's HNSW index
);

CREATE TABLE tether_meta (
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  key text NOT NULL, value text NOT NULL,
  PRIMARY KEY (collection_id, key)
);

CREATE TABLE tether_files (
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  source text NOT NULL, fingerprint text NOT NULL, size bigint NOT NULL,
  mtime_ns bigint NOT NULL, doc_id text NOT NULL, version text NOT NULL,
  PRIMARY KEY (collection_id, source)
);

CREATE TABLE tether_documents (
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  doc_id text NOT NULL, version text NOT NULL, source text NOT NULL,
  title text NOT NULL, doc_type text NOT NULL, access text NOT NULL, language text NOT NULL,
  effective_from date, effective_to date, owner text, format text NOT NULL,
  content_hash text NOT NULL, text text NOT NULL, chunker text NOT NULL,
  PRIMARY KEY (collection_id, doc_id, version),
  UNIQUE (collection_id, source)
);

-- access and the effective dates are copied from the document so that the filters and the
-- HNSW scan read one table.
CREATE TABLE tether_chunks (
  collection_id integer NOT NULL,
  chunk_id text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  doc_id text NOT NULL, version text NOT NULL, ordinal integer NOT NULL,
  heading_path text[] NOT NULL, anchor text, page integer,
  start integer NOT NULL, "end" integer NOT NULL, lead text NOT NULL, text text NOT NULL,
  access text NOT NULL, effective_from date, effective_to date,
  lex_len integer NOT NULL,
  embedding vector, vector_hash text,
  PRIMARY KEY (collection_id, chunk_id),
  FOREIGN KEY (collection_id, doc_id, version)
    REFERENCES tether_documents (collection_id, doc_id, version) ON DELETE CASCADE
);
CREATE INDEX tether_chunks_by_doc ON tether_chunks (collection_id, doc_id, version, ordinal);

-- The lexical index: one row per (term, chunk, column) with the term's count and positions
-- (phrases), tokenised by FTS5's own tokenizer (tether.stores.lexical).
CREATE TABLE tether_postings (
  collection_id integer NOT NULL, term text NOT NULL, chunk_id text NOT NULL,
  col smallint NOT NULL, tf integer NOT NULL, pos integer[] NOT NULL,
  PRIMARY KEY (collection_id, term, chunk_id, col)
);  -- no foreign key: a check per posting would slow loads; removed with their chunk
CREATE INDEX tether_postings_by_chunk ON tether_postings (collection_id, chunk_id);

CREATE TABLE tether_sentence_embeddings (
  collection_id integer NOT NULL, chunk_id text NOT NULL, n integer NOT NULL,
  start integer NOT NULL, "end" integer NOT NULL, text_hash text NOT NULL,
  vector bytea NOT NULL,
  PRIMARY KEY (collection_id, chunk_id, n)
);

CREATE TABLE tether_instructions (
  collection_id integer NOT NULL, chunk_id text NOT NULL,
  start integer NOT NULL, "end" integer NOT NULL,
  PRIMARY KEY (collection_id, chunk_id, start)
);
