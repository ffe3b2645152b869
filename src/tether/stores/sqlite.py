"""The index: one SQLite file holding documents, chunks, an FTS5 table for BM25 and, when an
embedder is given, one vector per chunk.

`SqliteStore.sync(folder)` brings the index in line with a collection folder:
- incremental: a file whose size and modification time are unchanged is not read again; a
  file whose bytes (or inventory row) hash the same is not parsed again; vectors are keyed by
  chunk ID and text hash, so only new or changed chunks are embedded;
- atomic: everything slow (reading, parsing, chunking, embedding) happens first; the writes
  then go in one transaction, so a crash or a kill mid-sync leaves the index as it was;
- forgiving by default: a file that cannot be parsed, or that repeats another file's
  doc_id + version, is reported with its reason and left out, while the other files sync; a
  file that parsed before and fails now keeps its previous version in the index. `strict=True`
  writes nothing when any file has a problem.
- recorded: the index stores its schema version, the tether version, the chunker and the
  embedder it was built with; a different chunker or embedder needs `rebuild=True`.
- sentence vectors (for the default reranker): with `sentences=True`, or when the embedder has
  a true `sentence_vectors` attribute, each chunk's sentences (`sentence_spans`) are embedded
  too, in the same transaction, keyed like the chunk vectors (chunks that have none yet,
  including unchanged chunks of an older index, are filled in at the next sync).

The lexical tokenizer is FTS5 `porter unicode61 remove_diacritics 2` (accented and unaccented
French match; English stems), plus a column of codes written without separators so a code such
as PW-2200-07 is found whether typed with or without its dashes; in queries a code becomes an
exact phrase.

What it cannot do: it serves one writer at a time (a second concurrent `sync` waits, then
fails with "database is locked"); lexical search has no French stemming (plural folding is
left to the porter stemmer, which is English); filters are applied in SQL before ranking, on
effective dates and access only.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sqlite3
import time
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

from tether import __version__
from tether.errors import ParseError, TetherError
from tether.ingest import load_inventory, parse_file
from tether.ingest.chunking import chunk_document
from tether.ingest.discover import discover
from tether.protocols import Embedder
from tether.text import (
    codes,
    collapse_code,
    content_words,
    embed_text,
    fold,
    sentence_spans,
    sentence_text,
)
from tether.types import (
    Chunk,
    ChunkerConfig,
    DocMeta,
    Document,
    DocumentInfo,
    FileProblem,
    Filters,
    Hit,
    SyncReport,
)

SCHEMA_VERSION = 1
DEFAULT_INDEX = Path(".tether") / "index.sqlite"
Progress = Callable[[str, int, int], None]  # (phase, done, total)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  source TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL, doc_id TEXT NOT NULL, version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
  doc_id TEXT NOT NULL, version TEXT NOT NULL, source TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL, doc_type TEXT NOT NULL, access TEXT NOT NULL, language TEXT NOT NULL,
  effective_from TEXT, effective_to TEXT, owner TEXT, format TEXT NOT NULL,
  content_hash TEXT NOT NULL, text TEXT NOT NULL, chunker TEXT NOT NULL,
  PRIMARY KEY (doc_id, version)
);
CREATE TABLE IF NOT EXISTS chunks (
  chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, version TEXT NOT NULL,
  ordinal INTEGER NOT NULL, heading_path TEXT NOT NULL, anchor TEXT, page INTEGER,
  start INTEGER NOT NULL, "end" INTEGER NOT NULL, lead TEXT NOT NULL, text TEXT NOT NULL,
  FOREIGN KEY (doc_id, version) REFERENCES documents (doc_id, version)
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_id, version, ordinal);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
  heading, text, codes, chunk_id UNINDEXED,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS embeddings (
  chunk_id TEXT PRIMARY KEY, text_hash TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS sentence_embeddings (
  chunk_id TEXT NOT NULL, n INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  text_hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (chunk_id, n)
);
"""


@dataclass
class _Planned:
    """A file whose new version will be written."""

    source: str
    fingerprint: str
    size: int
    mtime_ns: int
    document: Document
    chunks: list[Chunk]
    state: str  # added | updated


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class SqliteStore:
    """The embedded default Store: one SQLite file."""

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise TetherError(f"no index at {self.path}: run `tether ingest FOLDER` first")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=10)
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise TetherError(f"{self.path} is not a tether index ({exc})") from exc
        self.db.execute("PRAGMA foreign_keys = ON")
        version = self.meta_value("schema_version")
        if version is not None and int(version) != SCHEMA_VERSION:
            raise TetherError(
                f"{self.path} has index schema {version}; this tether uses {SCHEMA_VERSION}:"
                " run `tether ingest --rebuild`"
            )
        self._metas: dict[tuple[str, str], DocMeta] | None = None
        self._vectors: tuple[list[str], np.ndarray] | None = None
        self._rows: dict[str, int] | None = None
        self.generation = 0  # bumped by every sync that writes: caches key on it

    def close(self) -> None:
        self.db.close()

    # ---- metadata -------------------------------------------------------------------------

    def meta_value(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value ="
            " excluded.value",
            (key, value),
        )

    def set_gate_floors(self, floors: dict[str, float]) -> None:
        """Store the support gate's calibrated floor per retrieval method."""
        self.db.execute("BEGIN IMMEDIATE")
        for method, floor in floors.items():
            self._set_meta(f"gate_floor:{method}", repr(float(floor)))
        self.db.execute("COMMIT")

    def info(self) -> dict[str, object]:
        """What the index holds and how it was built."""
        one = self.db.execute
        docs = one("SELECT COUNT(*) FROM documents").fetchone()[0]
        chunks = one("SELECT COUNT(*) FROM chunks").fetchone()[0]
        vectors = one("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        by_access = dict(one("SELECT access, COUNT(*) FROM documents GROUP BY access").fetchall())
        by_lang = dict(one("SELECT language, COUNT(*) FROM documents GROUP BY language"))
        by_format = dict(one("SELECT format, COUNT(*) FROM documents GROUP BY format"))
        meta = dict(one("SELECT key, value FROM meta").fetchall())
        return {
            "path": str(self.path),
            "size_bytes": self.path.stat().st_size if self.path.exists() else 0,
            "documents": docs,
            "chunks": chunks,
            "vectors": vectors,
            "by_access": by_access,
            "by_language": by_lang,
            "by_format": by_format,
            **meta,
        }

    # ---- reading --------------------------------------------------------------------------

    def _meta_map(self) -> dict[tuple[str, str], DocMeta]:
        if self._metas is None:
            rows = self.db.execute(
                "SELECT doc_id, version, title, doc_type, access, language, effective_from,"
                " effective_to, owner, source, format FROM documents"
            ).fetchall()
            self._metas = {(r[0], r[1]): _row_meta(r) for r in rows}
        return self._metas

    def documents(self) -> list[DocumentInfo]:
        counts = dict(
            ((d, v), n)
            for d, v, n in self.db.execute(
                "SELECT doc_id, version, COUNT(*) FROM chunks GROUP BY doc_id, version"
            )
        )
        hashes = dict(
            ((d, v), h)
            for d, v, h in self.db.execute("SELECT doc_id, version, content_hash FROM documents")
        )
        metas = self._meta_map()
        return [
            DocumentInfo(metas[key], counts.get(key, 0), hashes[key])
            for key in sorted(metas, key=lambda k: (k[0], _version_key(k[1])))
        ]

    def versions(self, doc_id: str) -> list[DocMeta]:
        return [m for (d, _), m in sorted(self._meta_map().items()) if d == doc_id]

    def document_text(self, doc_id: str, version: str) -> str:
        row = self.db.execute(
            "SELECT text FROM documents WHERE doc_id = ? AND version = ?", (doc_id, version)
        ).fetchone()
        if row is None:
            raise TetherError(f"no document {doc_id!r} version {version!r} in the index")
        return row[0]

    def _chunk(self, row: Sequence) -> Chunk:
        cid, doc_id, version, ordinal, path, anchor, page, start, end, lead, text = row
        return Chunk(
            chunk_id=cid,
            meta=self._meta_map()[(doc_id, version)],
            text=text,
            heading_path=tuple(json.loads(path)),
            start=start,
            end=end,
            ordinal=ordinal,
            anchor=anchor,
            page=page,
            lead=lead,
        )

    _CHUNK_COLS = (
        "c.chunk_id, c.doc_id, c.version, c.ordinal, c.heading_path, c.anchor, c.page, c.start,"
        ' c."end", c.lead, c.text'
    )

    def get(self, chunk_id: str) -> Chunk | None:
        row = self.db.execute(
            f"SELECT {self._CHUNK_COLS} FROM chunks c WHERE c.chunk_id = ?", (chunk_id,)
        ).fetchone()
        return self._chunk(row) if row else None

    def get_many(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        ids = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.db.execute(
                f"SELECT {self._CHUNK_COLS} FROM chunks c WHERE c.chunk_id IN ({marks})", part
            ):
                found[row[0]] = self._chunk(row)
        return found

    def chunks(self, doc_id: str | None = None, version: str | None = None) -> list[Chunk]:
        """Chunks of one document (all versions unless `version`), or of the whole index."""
        sql = f"SELECT {self._CHUNK_COLS} FROM chunks c"
        args: list[str] = []
        if doc_id is not None:
            sql += " WHERE c.doc_id = ?"
            args.append(doc_id)
            if version is not None:
                sql += " AND c.version = ?"
                args.append(version)
        sql += " ORDER BY c.doc_id, c.version, c.ordinal"
        return [self._chunk(r) for r in self.db.execute(sql, args)]

    def allowed_ids(self, filters: Filters) -> set[str]:
        """IDs of every chunk the filters let through."""
        where, args = _filter_sql(filters)
        return {
            r[0]
            for r in self.db.execute(
                f"SELECT c.chunk_id FROM chunks c JOIN documents d USING (doc_id, version)"
                f" WHERE {where}",
                args,
            )
        }

    # ---- lexical search -------------------------------------------------------------------

    def search_lexical(self, query: str, k: int, filters: Filters) -> list[Hit]:
        """BM25 over heading, text and codes, keeping only what the filters allow; best first."""
        chunks: dict[str, Chunk] = {}

        def allowed(ids: list[str]) -> set[str]:
            chunks.update(self.get_many(i for i in ids if i not in chunks))
            return {i for i in ids if filters.allows(chunks[i].meta)}

        return [
            Hit(chunk=chunks[cid], score=score, rank=n + 1, method="bm25")
            for n, (cid, score) in enumerate(self._bm25(query, k, allowed))
        ]

    def lexical_ranking(
        self, query: str, k: int, allowed: Container[str]
    ) -> list[tuple[str, float]]:
        """The ranking of `search_lexical` as (chunk_id, score) pairs, among the `allowed`
        chunk IDs, without building chunks (for fusing rankings: hybrid search)."""
        return self._bm25(query, k, lambda ids: allowed)

    def _bm25(
        self, query: str, k: int, allowed: Callable[[list[str]], Container[str]]
    ) -> list[tuple[str, float]]:
        """The top k (chunk_id, BM25 score) among the IDs `allowed` lets through.

        The FTS table is ranked alone (a join per match costs 4x), over a candidate window
        that grows until k allowed chunks are found or the matches run out."""
        match = fts_query(query)
        if not match:
            return []
        sql = (
            "SELECT chunk_id, bm25(chunks_fts, 2.0, 1.0, 4.0) AS s FROM chunks_fts"
            " WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?"
        )
        window = max(50, 10 * k)
        while True:
            rows = self.db.execute(sql, (match, window)).fetchall()
            ok = allowed([cid for cid, _ in rows])
            kept = [(cid, -float(s)) for cid, s in rows if cid in ok]
            if len(kept) >= k or len(rows) < window:
                return kept[:k]
            window *= 4

    # ---- vectors --------------------------------------------------------------------------

    def vectors(self) -> tuple[list[str], np.ndarray]:
        """Every stored vector as (chunk IDs, float32 matrix), cached until the next sync."""
        if self._vectors is None:
            rows = self.db.execute(
                "SELECT chunk_id, vector FROM embeddings ORDER BY rowid"
            ).fetchall()
            ids = [r[0] for r in rows]
            dim = int(self.meta_value("embedder_dim") or 0)
            matrix = (
                np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                    len(rows), dim
                )
                if rows
                else np.zeros((0, dim), dtype=np.float32)
            )
            self._vectors = (ids, matrix)
        return self._vectors

    def vector_rows(self) -> dict[str, int]:
        """The row of each chunk ID in the matrix of `vectors()` (cached with it)."""
        if self._rows is None or self._vectors is None:
            ids, _ = self.vectors()
            self._rows = {c: i for i, c in enumerate(ids)}
        return self._rows

    def vector(self, chunk_id: str) -> np.ndarray | None:
        """The stored vector of one chunk, or None when it has none."""
        row = self.vector_rows().get(chunk_id)
        return None if row is None else self.vectors()[1][row]

    def sentence_vectors(
        self, chunk_ids: Iterable[str]
    ) -> dict[str, tuple[list[tuple[int, int]], np.ndarray]]:
        """Sentence vectors of the given chunks: {chunk_id: (spans in the chunk's text,
        float32 matrix)}; chunks without sentence vectors are absent."""
        ids = list(dict.fromkeys(chunk_ids))
        dim = int(self.meta_value("embedder_dim") or 0)
        found: dict[str, tuple[list[tuple[int, int]], list[bytes]]] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for cid, start, end, blob in self.db.execute(
                f'SELECT chunk_id, start, "end", vector FROM sentence_embeddings'
                f" WHERE chunk_id IN ({marks}) ORDER BY chunk_id, n",
                part,
            ):
                spans, blobs = found.setdefault(cid, ([], []))
                spans.append((start, end))
                blobs.append(blob)
        return {
            cid: (spans, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dim))
            for cid, (spans, blobs) in found.items()
        }

    # ---- sync -----------------------------------------------------------------------------

    def sync(
        self,
        folder: Path | str,
        *,
        chunker: ChunkerConfig | None = None,
        embedder: Embedder | None = None,
        rebuild: bool = False,
        strict: bool = False,
        default_access: str = "staff",
        progress: Progress | None = None,
        sentences: bool | None = None,
    ) -> SyncReport:
        """Bring the index in line with `folder` (see the module docstring)."""
        began = time.perf_counter()
        folder = Path(folder)
        if not folder.is_dir():
            raise TetherError(f"no such folder: {folder}")
        chunker = chunker or ChunkerConfig()
        self._check_build(chunker, embedder, rebuild)
        step = progress or (lambda phase, done, total: None)

        inventory = load_inventory(folder)
        paths = discover(folder)
        known = {
            r[0]: r[1:]
            for r in self.db.execute(
                "SELECT source, fingerprint, size, mtime_ns, doc_id, version FROM files"
            )
        }
        if rebuild:
            known = {}
        problems: list[FileProblem] = []
        planned: list[_Planned] = []
        unchanged: list[str] = []
        touched: list[tuple[str, int, int]] = []  # unchanged bytes, new stat: refresh stat only
        seen_sources: set[str] = set()
        for i, path in enumerate(paths):
            source = path.relative_to(folder).as_posix()
            seen_sources.add(source)
            step("read", i, len(paths))
            try:
                stat = path.stat()
                row = inventory.get(source)
                old = known.get(source)
                if (
                    old
                    and old[1] == stat.st_size
                    and old[2] == stat.st_mtime_ns
                    and (old[0].endswith(_row_hash(row, default_access)))
                ):
                    unchanged.append(source)
                    continue
                data = path.read_bytes()
                fingerprint = (
                    hashlib.sha256(data).hexdigest() + ":" + _row_hash(row, default_access)
                )
                if old and old[0] == fingerprint:
                    unchanged.append(source)
                    touched.append((source, stat.st_size, stat.st_mtime_ns))
                    continue
                document = parse_file(path, folder, inventory, default_access=default_access)
                chunks = chunk_document(document, chunker)
            except ParseError as exc:
                problems.append(FileProblem(source, str(exc)))
                if source in known:
                    unchanged.append(source)  # the previous version stays
                continue
            except OSError as exc:
                problems.append(FileProblem(source, f"cannot read: {exc.strerror or exc}"))
                if source in known:
                    unchanged.append(source)
                continue
            state = "updated" if source in known else "added"
            planned.append(
                _Planned(
                    source, fingerprint, stat.st_size, stat.st_mtime_ns, document, chunks, state
                )
            )
        step("read", len(paths), len(paths))
        removed = sorted(s for s in known if s not in seen_sources)

        planned = self._refuse_duplicates(planned, unchanged, known, problems)
        if strict and problems:
            return SyncReport(
                problems=tuple(problems),
                unchanged=tuple(sorted(known)),
                seconds=time.perf_counter() - began,
                committed=False,
            )

        vectors = self._embed(planned, embedder, rebuild, step)
        if sentences is None:
            sentences = bool(getattr(embedder, "sentence_vectors", False))
        sent_vectors = (
            self._embed_sentences(planned, removed, embedder, rebuild, step)
            if embedder is not None and sentences
            else {}
        )
        self._write(
            planned, removed, touched, vectors, chunker, embedder, rebuild, step, sent_vectors
        )
        self._metas = None
        self._vectors = None
        self._rows = None
        self.generation += 1
        return SyncReport(
            added=tuple(p.source for p in planned if p.state == "added"),
            updated=tuple(p.source for p in planned if p.state == "updated"),
            removed=tuple(removed),
            unchanged=tuple(sorted(unchanged)),
            problems=tuple(problems),
            chunks_written=sum(len(p.chunks) for p in planned),
            seconds=time.perf_counter() - began,
        )

    def _check_build(
        self, chunker: ChunkerConfig, embedder: Embedder | None, rebuild: bool
    ) -> None:
        if rebuild:
            return
        built = self.meta_value("chunker")
        if built is not None and built != chunker.describe():
            raise TetherError(
                f"this index was built with the {built} chunker; ingesting with"
                f" {chunker.describe()} needs --rebuild"
            )
        if embedder is not None:
            had = self.meta_value("embedder")
            want = f"{embedder.name} ({embedder.version})"
            if had is not None and had != want:
                raise TetherError(
                    f"this index was embedded with {had}; embedding with {want} needs --rebuild"
                )

    def _refuse_duplicates(
        self,
        planned: list[_Planned],
        unchanged: list[str],
        known: dict[str, tuple],
        problems: list[FileProblem],
    ) -> list[_Planned]:
        """Two files with one doc_id + version: the one already indexed stays, newcomers are
        refused; when neither was indexed, both are refused."""
        holders: dict[tuple[str, str], str] = {}
        for source in unchanged:
            if source in known:
                holders[(known[source][3], known[source][4])] = source
        claims: dict[tuple[str, str], list[_Planned]] = {}
        for plan in planned:
            key = (plan.document.meta.doc_id, plan.document.meta.version)
            claims.setdefault(key, []).append(plan)
        kept: list[_Planned] = []
        for key, group in claims.items():
            holder = holders.get(key)
            if holder is None and len(group) == 1:
                kept.extend(group)
                continue
            others = [holder] if holder else []
            for plan in group:
                rivals = [*others, *(p.source for p in group if p is not plan)]
                problems.append(
                    FileProblem(
                        plan.source,
                        f"doc_id {key[0]!r} version {key[1]!r} is also in {', '.join(rivals)};"
                        " give each version its own version number",
                    )
                )
                if plan.source in known:
                    unchanged.append(plan.source)
        return kept

    def _embed(
        self,
        planned: list[_Planned],
        embedder: Embedder | None,
        rebuild: bool,
        step: Progress,
    ) -> dict[str, tuple[str, bytes]]:
        """Vectors for the new chunks that have none under the same text hash."""
        if embedder is None:
            return {}
        have = (
            {}
            if rebuild
            else dict(self.db.execute("SELECT chunk_id, text_hash FROM embeddings").fetchall())
        )
        todo: list[tuple[str, str, str]] = []
        for plan in planned:
            for chunk in plan.chunks:
                text = embed_text(chunk)
                th = _text_hash(text)
                if have.get(chunk.chunk_id) != th:
                    todo.append((chunk.chunk_id, th, text))
        if not todo:
            return {}
        texts = [t for _, _, t in todo]

        def report(done_texts: int, done_tokens: int) -> None:
            step("embed", done_texts, len(todo))
            step("embed:tokens", done_tokens, 0)  # the CLI shows tokens/s

        step("embed", 0, len(todo))
        if "progress" in inspect.signature(embedder.embed_passages).parameters:
            # one call: the embedder sorts by length and pads within its own batches
            matrix = embedder.embed_passages(texts, progress=report)  # type: ignore[call-arg]
        else:
            matrix = np.concatenate(
                [embedder.embed_passages(texts[i : i + 32]) for i in range(0, len(texts), 32)]
            )
        step("embed", len(todo), len(todo))
        matrix = np.asarray(matrix, dtype=np.float32)
        return {cid: (th, vec.tobytes()) for (cid, th, _), vec in zip(todo, matrix, strict=True)}

    def _embed_sentences(
        self,
        planned: list[_Planned],
        removed: list[str],
        embedder: Embedder,
        rebuild: bool,
        step: Progress,
    ) -> dict[str, tuple[str, list[tuple[int, int, bytes]]]]:
        """Sentence vectors for the chunks being written and for the chunks already in the
        index that have none under the same text hash (an index built before they existed)."""
        have: dict[str, str] = (
            {}
            if rebuild
            else dict(
                self.db.execute("SELECT chunk_id, text_hash FROM sentence_embeddings WHERE n = 0")
            )
        )
        candidates: dict[str, Chunk] = {}
        for plan in planned:
            for chunk in plan.chunks:
                candidates[chunk.chunk_id] = chunk
        if not rebuild:  # unchanged chunks that were never given sentence vectors
            leaving = {p.source for p in planned} | set(removed)
            old = [
                r[0]
                for r in self.db.execute(
                    "SELECT c.chunk_id FROM chunks c JOIN documents d USING (doc_id, version)"
                    " WHERE c.chunk_id NOT IN (SELECT chunk_id FROM sentence_embeddings)"
                )
            ]
            for cid, chunk in self.get_many(old).items():
                if chunk.meta.source not in leaving:
                    candidates.setdefault(cid, chunk)
        todo: list[tuple[str, str, int, int, str]] = []
        for cid, chunk in candidates.items():
            th = _text_hash(embed_text(chunk))
            if have.get(cid) == th:
                continue
            for start, end in sentence_spans(chunk.text):
                todo.append((cid, th, start, end, sentence_text(chunk, start, end)))
        out: dict[str, tuple[str, list[tuple[int, int, bytes]]]] = {}
        order = sorted(range(len(todo)), key=lambda i: len(todo[i][4]))
        batch = 64
        for i in range(0, len(order), batch):
            step("embed sentences", i, len(order))
            part = [todo[j] for j in order[i : i + batch]]
            matrix = np.asarray(embedder.embed_passages([t[4] for t in part]), dtype=np.float32)
            for (cid, th, start, end, _), vec in zip(part, matrix, strict=True):
                out.setdefault(cid, (th, []))[1].append((start, end, vec.tobytes()))
        step("embed sentences", len(order), len(order))
        for cid in out:
            out[cid][1].sort()
        return out

    def _write(
        self,
        planned: list[_Planned],
        removed: list[str],
        touched: list[tuple[str, int, int]],
        vectors: dict[str, tuple[str, bytes]],
        chunker: ChunkerConfig,
        embedder: Embedder | None,
        rebuild: bool,
        step: Progress,
        sent_vectors: dict[str, tuple[str, list[tuple[int, int, bytes]]]] | None = None,
    ) -> None:
        db = self.db
        pause_file = os.environ.get("TETHER_TEST_PAUSE_MID_WRITE")
        total = len(planned) + len(removed)
        db.execute("BEGIN IMMEDIATE")
        try:
            if rebuild:
                for table in (
                    "sentence_embeddings", "embeddings", "chunks_fts", "chunks", "documents",
                    "files",
                ):  # fmt: skip
                    db.execute(f"DELETE FROM {table}")
            for source in removed:
                self._delete_source(source)
            for i, plan in enumerate(planned):
                step("write", i, total)
                if pause_file and i == len(planned) // 2:
                    Path(pause_file).write_text("paused")
                    time.sleep(120)  # a test kills the process here
                self._delete_source(plan.source)
                self._insert(plan, chunker)
            for source, size, mtime_ns in touched:
                db.execute(
                    "UPDATE files SET size = ?, mtime_ns = ? WHERE source = ?",
                    (size, mtime_ns, source),
                )
            for cid, (th, blob) in vectors.items():
                db.execute(
                    "INSERT OR REPLACE INTO embeddings (chunk_id, text_hash, vector) VALUES (?, ?, ?)",
                    (cid, th, blob),
                )
            db.execute("DELETE FROM embeddings WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)")
            for cid, (th, rows) in (sent_vectors or {}).items():
                db.execute("DELETE FROM sentence_embeddings WHERE chunk_id = ?", (cid,))
                db.executemany(
                    'INSERT INTO sentence_embeddings (chunk_id, n, start, "end", text_hash,'
                    " vector) VALUES (?, ?, ?, ?, ?, ?)",
                    [(cid, n, a, b, th, blob) for n, (a, b, blob) in enumerate(rows)],
                )
            db.execute(
                "DELETE FROM sentence_embeddings WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)"
            )
            self._set_meta("schema_version", str(SCHEMA_VERSION))
            self._set_meta("tether_version", __version__)
            self._set_meta("chunker", chunker.describe())
            self._set_meta("updated_at", time.strftime("%Y-%m-%dT%H:%M:%S"))
            if embedder is not None:
                self._set_meta("embedder", f"{embedder.name} ({embedder.version})")
                self._set_meta("embedder_dim", str(embedder.dim))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        step("write", total, total)

    def _delete_source(self, source: str) -> None:
        db = self.db
        row = db.execute("SELECT doc_id, version FROM files WHERE source = ?", (source,)).fetchone()
        if row is None:
            return
        ids = [
            r[0]
            for r in db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ? AND version = ?", row)
        ]
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM chunks_fts WHERE chunk_id IN ({marks})", part)
        db.execute("DELETE FROM chunks WHERE doc_id = ? AND version = ?", row)
        db.execute("DELETE FROM documents WHERE doc_id = ? AND version = ?", row)
        db.execute("DELETE FROM files WHERE source = ?", (source,))

    def _insert(self, plan: _Planned, chunker: ChunkerConfig) -> None:
        db = self.db
        m = plan.document.meta
        db.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                m.doc_id, m.version, m.source, m.title, m.doc_type, m.access, m.language,
                _iso(m.effective_from), _iso(m.effective_to), m.owner, m.format,
                plan.document.content_hash, plan.document.text, chunker.describe(),
            ),
        )  # fmt: skip
        for c in plan.chunks:
            db.execute(
                'INSERT INTO chunks (chunk_id, doc_id, version, ordinal, heading_path, anchor,'
                ' page, start, "end", lead, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (
                    c.chunk_id, m.doc_id, m.version, c.ordinal,
                    json.dumps(list(c.heading_path), ensure_ascii=False), c.anchor, c.page,
                    c.start, c.end, c.lead, c.text,
                ),
            )  # fmt: skip
            heading = " ".join([m.title, *c.heading_path])
            code_col = " ".join(collapse_code(x) for x in codes(c.text + " " + heading))
            db.execute(
                "INSERT INTO chunks_fts (heading, text, codes, chunk_id) VALUES (?, ?, ?, ?)",
                (heading, c.text, code_col, c.chunk_id),
            )
        db.execute(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (plan.source, plan.fingerprint, plan.size, plan.mtime_ns, m.doc_id, m.version),
        )


def fts_query(query: str) -> str:
    """An FTS5 MATCH expression for a free-text query: every content word and code, ORed.

    A code (PW-2200-07) becomes the exact phrase "pw 2200 07" or its collapsed form in the
    codes column; words are quoted so FTS5 syntax in a query is never interpreted."""
    parts: list[str] = []
    in_codes: set[str] = set()
    for code in codes(query):
        tokens = _fts_tokens(fold(code))
        in_codes.update(tokens)
        parts.append(f'("{" ".join(tokens)}" OR codes : "{collapse_code(code)}")')
    for word in dict.fromkeys(content_words(query)):
        if word not in in_codes:  # a code matches as a whole, not by its pieces
            parts.append(f'"{word}"')
    return " OR ".join(parts)


def _fts_tokens(text: str) -> list[str]:
    """The tokens FTS5's unicode61 tokenizer makes of a folded code."""
    out: list[str] = []
    token = ""
    for ch in text:
        if ch.isalnum():
            token += ch
        elif token:
            out.append(token)
            token = ""
    if token:
        out.append(token)
    return out


def _filter_sql(filters: Filters) -> tuple[str, list[str]]:
    clauses = ["1"]
    args: list[str] = []
    if filters.audience == "public":
        clauses.append("d.access = 'public'")
    if filters.as_of is not None:
        day = filters.as_of.isoformat()
        clauses.append("(d.effective_from IS NULL OR d.effective_from <= ?)")
        clauses.append("(d.effective_to IS NULL OR d.effective_to >= ?)")
        args += [day, day]
    return " AND ".join(clauses), args


def _row_meta(r: Sequence) -> DocMeta:
    return DocMeta(
        doc_id=r[0],
        version=r[1],
        title=r[2],
        doc_type=r[3],
        access=r[4],
        language=r[5],
        effective_from=date.fromisoformat(r[6]) if r[6] else None,
        effective_to=date.fromisoformat(r[7]) if r[7] else None,
        owner=r[8],
        source=r[9],
        format=r[10],
    )


def _iso(d: date | None) -> str | None:
    return d.isoformat() if d else None


def _row_hash(row: dict[str, str] | None, default_access: str) -> str:
    payload = json.dumps([sorted((row or {}).items()), default_access], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (10**9, version)


def open_store(index: Path | str, *, must_exist: bool = True) -> SqliteStore:
    """Open an index file; a missing one is a clear error unless `must_exist` is False."""
    return SqliteStore(index, create=not must_exist)
