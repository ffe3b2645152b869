"""tether itself, through its public Python API (`tether.Collection`)."""

from __future__ import annotations

from pathlib import Path

from tether import Collection

from ..common import Passage


class TetherSearch:
    def __init__(self, folder: Path, index: Path, method: str) -> None:
        self.collection = Collection(folder, index=index)
        self.method = method

    def search(self, query: str, k: int, as_of, audience: str) -> list[Passage]:
        # every query embedded afresh, as the peers do (the retriever keeps recent ones)
        self.collection.workspace.retriever().clear_query_cache()
        hits = self.collection.search(
            query, k, method=self.method, as_of=as_of, audience=audience
        )
        return [Passage(h.chunk.meta.source, h.chunk.text) for h in hits]
