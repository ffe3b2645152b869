"""Vectors kept as they are computed, outside the index, so an ingest that is killed or fails
loses no embedding work: the next run embeds only what is missing.

`VectorCache(folder, embedder_label, dim)` is one SQLite file per embedder in `folder`
(`TETHER_VECTOR_CACHE`, default `~/.cache/tether/vectors`), keyed by the hash of the text
embedded (`tether.ingest.sync.text_hash`: the title, heading path and text a chunk vector is
made of, or a sentence). `embed_cached` looks every text up first, embeds the rest in batches
of `BATCH` (128) through the ingest's executor, and commits each batch to the cache as soon as
it is computed (a kill loses at most the batch under way); the index itself is still written in one transaction at the end of the ingest.
A vector is the same whichever index asked for it, so indexes of one machine share the cache.

What it cannot do: the cache grows with every text ever embedded (delete the folder to reclaim
it: nothing else depends on it); it is local to the machine that runs `tether ingest`; a
cache file that cannot be opened or written is skipped with the work done as before (the
ingest never fails because of it).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

BATCH = 128  # texts embedded between two commits to the cache (a kill loses at most these)
EmbedProgress = Callable[[int, int], None]


class VectorCache:
    """One embedder's vectors by text hash, in a SQLite file of `folder`."""

    def __init__(self, folder: Path | str, embedder_label: str, dim: int) -> None:
        name = hashlib.sha256(embedder_label.encode("utf-8")).hexdigest()[:16]
        self.path = Path(folder).expanduser() / f"{name}.sqlite"
        self.dim = dim
        self.label = embedder_label
        self._db: sqlite3.Connection | None = None
        self.broken = False

    def _open(self) -> sqlite3.Connection | None:
        if self._db is None and not self.broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30)
                db.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vector BLOB)"
                )
                db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('embedder', ?)", (self.label,))
                db.commit()
                self._db = db
            except (OSError, sqlite3.Error):
                self.broken = True  # no cache: the ingest embeds as before
        return self._db

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of `hashes` (those it holds)."""
        db = self._open()
        found: dict[str, np.ndarray] = {}
        if db is None:
            return found
        unique = list(dict.fromkeys(hashes))
        try:
            for i in range(0, len(unique), 500):
                part = unique[i : i + 500]
                marks = ",".join("?" * len(part))
                for h, blob in db.execute(
                    f"SELECT hash, vector FROM vectors WHERE hash IN ({marks})", part
                ):
                    vector = _vector(blob, self.dim)
                    if vector is not None:
                        found[h] = vector
        except sqlite3.Error:
            self.broken = True
            return {}
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Keep these vectors (committed at once)."""
        db = self._open()
        if db is None or not items:
            return
        rows = [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items]
        try:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            db.commit()
        except sqlite3.Error:
            self.broken = True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _vector(blob: object, dim: int) -> np.ndarray | None:
    """A stored vector, or None when the row is damaged (not bytes, the wrong length, not
    finite): a bad row counts as not cached."""
    if not isinstance(blob, bytes) or len(blob) != 4 * dim:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    return vector if bool(np.isfinite(vector).all()) else None


def embed_cached(
    embed: Callable[[list[str], EmbedProgress], np.ndarray],
    texts: list[str],
    keys: Sequence[str],
    dim: int,
    progress: EmbedProgress,
    cache: VectorCache | None,
    expect: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """(vectors of `texts`, how many came from the cache): the ones cached under their `keys`
    (the texts' hashes) looked up, the rest embedded by `embed` in batches of `BATCH`, each
    batch kept in the cache as it is done; `progress(done, tokens)` counts the cached ones as
    done; `expect(n)`, when given, is told how many texts will be embedded in all before the
    first batch (an executor's pool is worth starting for the whole, not for one batch)."""
    if cache is None:
        return np.asarray(embed(texts, progress), dtype=np.float32), 0
    found = cache.get_many(keys)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    todo: list[int] = []
    for i, key in enumerate(keys):
        if key in found:
            out[i] = found[key]
        else:
            todo.append(i)
    cached = len(texts) - len(todo)
    if expect is not None:
        expect(len(todo))
    done, tokens_done = cached, [0, 0]  # tokens of the batches before, of this one so far
    progress(done, 0)
    for start in range(0, len(todo), BATCH):
        part = todo[start : start + BATCH]
        before = done

        def report(n: int, tokens: int, before: int = before) -> None:
            tokens_done[1] = tokens
            progress(before + n, tokens_done[0] + tokens)

        matrix = np.asarray(embed([texts[i] for i in part], report), dtype=np.float32)
        out[part] = matrix
        cache.put_many([(keys[i], matrix[j]) for j, i in enumerate(part)])
        done += len(part)
        tokens_done[0] += tokens_done[1]
        tokens_done[1] = 0
    return out, cached
