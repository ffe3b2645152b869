-- tether's PostgreSQL schema, version 7: what the `tether serve` processes on one collection
-- share (tether.stores.postgres_shared), so that N servers behave as one.
-- * tether_rate_buckets: a token bucket per (space, name): `tokens` left at `at` (the
--   database's clock, so servers on different hosts agree), `taken` whether the last take
--   got a token. A bucket whose refill time has passed is full, as one never seen: pruned.
-- * tether_serve_counts: the collection's metric totals (counter samples, by sample name and
--   its labels as sorted JSON), to which every server adds what it counted since it last did.
-- * tether_serve_workers: the servers alive (each notes itself as it adds its counts).
-- * tether_revoked_keys: revoked keys by digest. A key is a secret, not a collection's: a
--   revoked digest is refused by every server on this database, whatever it serves.
-- Nothing here changes an index: a reader (`tether serve`) writes these rows without the
-- collection's advisory lock and never moves its generation.
CREATE TABLE tether_rate_buckets (
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  space text NOT NULL, name text NOT NULL,
  tokens double precision NOT NULL, at timestamptz NOT NULL, taken boolean NOT NULL,
  PRIMARY KEY (collection_id, space, name)
);

CREATE TABLE tether_serve_counts (
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  sample text NOT NULL, labels text NOT NULL, value double precision NOT NULL,
  PRIMARY KEY (collection_id, sample, labels)
);

CREATE TABLE tether_serve_workers (
  collection_id integer NOT NULL REFERENCES tether_collections ON DELETE CASCADE,
  worker text NOT NULL, started timestamptz NOT NULL, seen timestamptz NOT NULL,
  PRIMARY KEY (collection_id, worker)
);

CREATE TABLE tether_revoked_keys (
  sha256 text PRIMARY KEY, name text NOT NULL, at timestamptz NOT NULL DEFAULT now()
);
