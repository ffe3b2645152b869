"""txtai's hybrid index (BM25 + dense, `hybrid=True`) over tether's chunks, given tether's e5
embedder as an external transform (txtai's `instructions` add the e5 prefixes; the transform
routes each text to the query or passage side by its prefix). txtai has no parser of its own
for Markdown, HTML and PDF without a Tika/Docling backend, so it gets tether's chunks only."""

from __future__ import annotations

from typing import Any

import numpy as np
from txtai import Embeddings

from ..common import Passage

Q, P = "query: ", "passage: "


class TxtaiSearch:
    def __init__(self, chunks: list[tuple[str, str, Any]], emb: Any, depth: int) -> None:
        known = {P + t: v for _, t, v in chunks}

        def transform(texts: list[str]) -> np.ndarray:
            out = []
            for t in texts:
                if t.startswith(Q):
                    out.append(emb.embed_queries([t[len(Q):]])[0])
                else:
                    out.append(known[t] if t in known else emb.embed_passages([t[len(P):]])[0])
            return np.asarray(out, dtype=np.float32)

        self.emb = Embeddings(
            method="external", transform=transform, hybrid=True,
            instructions={"query": Q, "data": P},
        )
        self.rows = [(s, t) for s, t, _ in chunks]
        self.emb.index([(i, t, None) for i, (_, t) in enumerate(self.rows)])

    def search(self, query: str, k: int, as_of=None, audience: str = "") -> list[Passage]:
        found = self.emb.search(query, k)
        return [Passage(*self.rows[int(i)]) for i, _ in found]
