-- tether's PostgreSQL schema, version 5: feedback on the audit's entries
-- (tether.stores.postgres_audit): helpful or wrong, an optional note and the chunk ID of the
-- right passage, one row per entry and asker (a second verdict replaces the first). `at` is
-- the ISO time in UTC as text, as in `tether_audit`; an entry's feedback goes with it
-- (retention, a dropped collection).
CREATE TABLE tether_audit_feedback (
  id bigserial PRIMARY KEY,
  entry_id bigint NOT NULL REFERENCES tether_audit ON DELETE CASCADE,
  at text NOT NULL, who text NOT NULL, verdict text NOT NULL, note text, chunk_id text,
  UNIQUE (entry_id, who)
);
