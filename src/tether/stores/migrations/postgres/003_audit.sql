-- tether's PostgreSQL schema, version 3: the audit of answered questions
-- (tether.stores.postgres_audit), one table for every collection. `at` is the ISO time in UTC
-- as text (as in the SQLite store, so the filters compare the same way); `record` is the
-- whole entry as JSON.
CREATE TABLE tether_audit (
  id bigserial PRIMARY KEY,
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  at text NOT NULL, who text NOT NULL, audience text NOT NULL, status text NOT NULL,
  flagged integer NOT NULL, flags text NOT NULL, record text NOT NULL
);
CREATE INDEX tether_audit_by_time ON tether_audit (collection_id, at);
