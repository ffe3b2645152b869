-- tether's PostgreSQL schema, version 4: the lexical statistics of the public chunks (every
-- version), which a search for any audience but staff scores with (BM25's N and avgdl), so
-- a staff passage never moves a public score (tether.stores.postgres_sql). Filled here from
-- the chunks already written; every write recomputes them (tether.stores.postgres_write).
ALTER TABLE tether_collections
  ADD COLUMN lex_rows_public bigint NOT NULL DEFAULT 0,    -- public chunks (N for the public)
  ADD COLUMN lex_tokens_public bigint NOT NULL DEFAULT 0;  -- their tokens in all columns
UPDATE tether_collections t SET lex_rows_public = s.n, lex_tokens_public = s.t
  FROM (SELECT collection_id, count(*) AS n, coalesce(sum(lex_len), 0) AS t
        FROM tether_chunks WHERE access = 'public' GROUP BY collection_id) s
  WHERE t.id = s.collection_id;
