"""Fakes for the unit tests, one per role of `tether.protocols`: each implements only its role,
in memory, so a unit test of a collaborator (the checker, the gate, a report) loads no model
and opens no index. They are fakes, not backends: the contract tests (`tests/contract/`) hold
the real stores to the rules, and nothing here is used where a store itself is under test.

- `FakeReader` (`StoreReader`): chunks by ID and by document, their documents and versions.
- `FakeSearchable` (`SearchableStore`): the reader, plus filtered lexical search by shared
  words (not BM25), a count, and no vectors.
- `FakeSyncTarget` (`SyncTarget`): records each applied change set and the meta it was given.
- `FakeSearcher` (`Searcher`): ranked hits from a `FakeSearchable`, lexical only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from tether.types import (
    Access,
    ChangeSet,
    Chunk,
    DocMeta,
    DocumentInfo,
    FileState,
    Filters,
    Hit,
    Progress,
)


def chunk(
    chunk_id: str,
    text: str,
    doc_id: str = "doc",
    *,
    version: str = "1",
    access: Access = "public",
    heading: str = "",
    ordinal: int = 0,
) -> Chunk:
    """A chunk of one document version with the fields a test names (the rest defaulted)."""
    doc = DocMeta(doc_id=doc_id, version=version, title=doc_id.title(), access=access)
    heading_path = (heading,) if heading else ()
    return Chunk(chunk_id, doc, text, heading_path, 0, len(text), ordinal)


@dataclass
class FakeReader:
    """`StoreReader` over `chunks` held in memory."""

    chunks_held: list[Chunk] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    location: str = "memory"
    closed: bool = False

    def get(self, chunk_id: str) -> Chunk | None:
        return next((c for c in self.chunks_held if c.chunk_id == chunk_id), None)

    def get_many(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        wanted = set(chunk_ids)
        return {c.chunk_id: c for c in self.chunks_held if c.chunk_id in wanted}

    def chunks(self, doc_id: str | None = None, version: str | None = None) -> list[Chunk]:
        return [
            c
            for c in self.chunks_held
            if (doc_id is None or c.meta.doc_id == doc_id)
            and (version is None or c.meta.version == version)
        ]

    def documents(self) -> list[DocumentInfo]:
        seen: dict[tuple[str, str], DocumentInfo] = {}
        for c in self.chunks_held:
            key = (c.meta.doc_id, c.meta.version)
            if key not in seen:
                seen[key] = DocumentInfo(c.meta, len(self.chunks(*key)), content_hash=key[0])
        return list(seen.values())

    def versions(self, doc_id: str) -> list[DocMeta]:
        return [d.meta for d in self.documents() if d.meta.doc_id == doc_id]

    def document_text(self, doc_id: str, version: str) -> str:
        return "\n\n".join(c.text for c in self.chunks(doc_id, version))

    def meta_value(self, key: str) -> str | None:
        return self.meta.get(key)

    def info(self) -> dict[str, object]:
        return {"chunks": len(self.chunks_held), "location": self.location}

    def generation(self) -> int:
        return 1

    def snapshot(self) -> AbstractContextManager[None]:
        return nullcontext()

    def close(self) -> None:
        self.closed = True


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@dataclass
class FakeSearchable(FakeReader):
    """`SearchableStore`: the reader, with lexical search by shared words after the filters,
    and no vectors (`has_vectors` is False; a vector lookup finds none)."""

    def allowed_ids(self, filters: Filters) -> set[str]:
        return {c.chunk_id for c in self.chunks_held if filters.allows(c.meta)}

    def lexical_ranking(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        asked = _words(query)
        scored = [
            (c.chunk_id, float(len(asked & _words(c.text))))
            for c in self.chunks_held
            if filters.allows(c.meta)
        ]
        ranked = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))
        return ranked[:k]

    def search_lexical(self, query: str, k: int, filters: Filters) -> list[Hit]:
        ranked = self.lexical_ranking(query, k, filters)
        held = self.get_many(cid for cid, _ in ranked)
        return [
            Hit(held[cid], score, rank, "bm25") for rank, (cid, score) in enumerate(ranked, 1)
        ]

    def count_lexical(self, query: str, filters: Filters) -> int:
        return len(self.lexical_ranking(query, len(self.chunks_held), filters))

    def search_dense(
        self, vector: np.ndarray, k: int, filters: Filters
    ) -> list[tuple[str, float]]:
        return []

    def has_vectors(self) -> bool:
        return False

    def vectors(self) -> tuple[list[str], np.ndarray]:
        return [], np.zeros((0, 0), dtype=np.float32)

    def vector(self, chunk_id: str) -> np.ndarray | None:
        return None

    def vectors_of(self, chunk_ids: Iterable[str]) -> dict[str, np.ndarray]:
        return {}

    def sentence_vectors(
        self, chunk_ids: Iterable[str]
    ) -> dict[str, tuple[list[tuple[int, int]], np.ndarray]]:
        return {}


@dataclass
class FakeSyncTarget:
    """`SyncTarget`: what an ingest would write, kept for the test to read."""

    states: dict[str, FileState] = field(default_factory=dict)
    applied: list[ChangeSet] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)

    def file_states(self) -> dict[str, FileState]:
        return dict(self.states)

    def vector_hashes(self) -> dict[str, str]:
        return {}

    def sentence_vector_hashes(self) -> dict[str, str | None]:
        return {}

    def apply(self, changes: ChangeSet, progress: Progress | None = None) -> None:
        self.applied.append(changes)

    def set_meta(self, values: Mapping[str, str]) -> None:
        self.meta.update(values)


@dataclass
class FakeSearcher:
    """`Searcher` over a `FakeSearchable`: every method ranks lexically."""

    store: FakeSearchable
    embedder: None = None

    def resolve_method(self, method: str) -> str:
        return "bm25" if method == "auto" else method

    @property
    def answer_method(self) -> str:
        return "bm25"

    def search(self, query: str, k: int, filters: Filters, method: str = "auto") -> list[Hit]:
        return self.store.search_lexical(query, k, filters)

    def query_vector(self, query: str) -> np.ndarray:
        raise AssertionError("a lexical fake has no query vector")

    def warm_queries(self, queries: Sequence[str], batch: int = 32) -> None:
        return None

    def clear_query_cache(self) -> None:
        return None
