"""The embedded default Store: one SQLite file holding documents, chunks, an FTS5 table for
BM25 and, when the index was built with an embedder, one vector per chunk (and per sentence).

- reads see one committed generation: each read runs in one read transaction and first reads
  the `generation` counter of the meta table; when it moved (a write by this object, another
  object or another process) the in-memory caches (document metadata, the vector matrix, the
  dense index, filter masks, the `CHUNKS_KEPT` chunks `get_many` and the sentence vectors
  `sentence_vectors` read last) are dropped and rebuilt on demand (and after a write,
  committed or rolled back);
- writes: `apply(changes)` writes a `ChangeSet` (planned by `tether.ingest.sync`) in ONE
  transaction and bumps the generation, so a crash, a kill or an exception mid-apply leaves
  the index as it was; `set_meta` records values such as the gate floors the same way;
- schema: an index of an older schema is migrated when opened to be written (`create=True`,
  as ingest does) and, opened to be read, served as it is from `READS_FROM` on (today none
  older: readers need schema 4's anchors; schemas 4 and 5 read with no review dates, the
  column schema 6 added) and refused with what to run when older; a newer one is refused;
- instructions: `documents()` lists with each document the spans addressed to AI assistants
  that ingest recorded (`InstructionSpan`); `info()` counts them;
- search: `search_lexical`/`lexical_ranking` rank with BM25 over heading, text and codes;
  `search_dense` ranks by cosine through `stores.dense.DenseIndex` (brute force, or a faiss
  HNSW graph cached beside the file); both apply the filters (as_of, audience) BEFORE ranking.

The lexical tokenizer is FTS5 `porter unicode61 remove_diacritics 2` (accented and unaccented
French match; English stems), plus a column of codes written without separators so a code such
as PW-2200-07 is found whether typed with or without its dashes; in queries a code becomes an
exact phrase.

Opening (`stores.sqlite_open`): read-only (`writable=False`, SQLite `mode=ro`) for readers, so
a read never creates or changes anything; a file that is not a tether index is refused; SQLite
errors reach the caller as one-line TetherErrors and a failed write is rolled back.

The class is built in parts: `sqlite_base` (opening, schema, generations, transactions,
caches, filters), `sqlite_reads` (documents, chunks, lexical search), `sqlite_vectors`
(vectors, dense search, sentence vectors); the writes are here, their SQL in `sqlite_write`.

What it cannot do: it serves one writer at a time (a second concurrent apply waits up to the
lock timeout, 30 s by default, then stops with "another ingest is writing this index"), and a
commit can hold readers up to the same timeout; lexical search has no French stemming (plural folding is left to the porter stemmer,
which is English); filters are on effective dates and access only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from tether._version import __version__
from tether.stores.dense import remove_hnsw_caches
from tether.stores.sqlite_base import CHUNKS_KEPT as CHUNKS_KEPT
from tether.stores.sqlite_base import READS_FROM as READS_FROM
from tether.stores.sqlite_base import SCHEMA_VERSION
from tether.stores.sqlite_base import SENTENCES_KEPT as SENTENCES_KEPT
from tether.stores.sqlite_base import Sentences as Sentences
from tether.stores.sqlite_reads import SqliteReads
from tether.stores.sqlite_sql import fts_query as fts_query
from tether.stores.sqlite_vectors import SqliteVectors
from tether.stores.sqlite_write import set_meta_rows, write_changes
from tether.types import ChangeSet, Progress


class SqliteStore(SqliteReads, SqliteVectors):
    """The embedded default Store: one SQLite file (see the module docstring).

    `ann`/`ann_threshold` choose how `search_dense` ranks (see `stores.dense.DenseIndex`).
    The caches belong to this object; open one object per thread (a SQLite connection is not
    shared between threads).
    """

    # ---- writing ----------------------------------------------------------------------------

    def apply(self, changes: ChangeSet, progress: Progress | None = None) -> None:
        """Write a change set in one transaction and bump the generation (all or nothing)."""
        step = progress or _quiet
        total = len(changes.files) + len(changes.removed)
        with self._writing() as db:
            write_changes(db, changes, step)
            set_meta_rows(
                db,
                {
                    "schema_version": str(SCHEMA_VERSION),
                    "tether_version": __version__,
                    "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                },
            )
        if changes.rebuild or changes.files or changes.removed or changes.vectors:
            remove_hnsw_caches(self.path)  # graphs of vectors that may have changed
        step("write", total, total)

    def set_meta(self, values: Mapping[str, str]) -> None:
        """Record values in the index meta (one transaction; the generation moves)."""
        with self._writing() as db:
            set_meta_rows(db, {k: str(v) for k, v in values.items()})

    def set_gate_floors(self, floors: dict[str, float]) -> None:
        """Store the support gate's calibrated floor per retrieval method."""
        self.set_meta({f"gate_floor:{m}": repr(float(f)) for m, f in floors.items()})


def _quiet(phase: str, done: int, total: int) -> None:
    """The progress callback when none is given."""
