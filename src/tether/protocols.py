"""Every extension point in one screen: the small protocols a user (or a test) can swap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from tether.types import Chunk, Completion, Filters, Hit, ModelRequest


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; `name`/`version` are recorded in the index."""

    name: str
    version: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class Store(Protocol):
    """The index: chunks by ID, filtered lexical search, and what it holds."""

    def get(self, chunk_id: str) -> Chunk | None: ...

    def search_lexical(self, query: str, k: int, filters: Filters) -> list[Hit]: ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders a short candidate list for one query."""

    name: str

    def rerank(self, query: str, hits: Sequence[Hit], k: int) -> list[Hit]: ...


@runtime_checkable
class Judge(Protocol):
    """Scores how well passages entail a claim, 0 (not at all) to 1 (fully)."""

    name: str

    def score(self, claim: str, passages: Sequence[str]) -> float: ...


@runtime_checkable
class Provider(Protocol):
    """Sends one request to a language model (or a non-model answerer) and returns what came back."""

    name: str

    def complete(self, request: ModelRequest) -> Completion: ...
