"""A text that stands several times in one ingest is embedded once (`tether.ingest.sync`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tether.ingest.sync import _embedded, text_hash


class CountingEmbedder:
    """A deterministic fake embedder that records every text it is asked for."""

    dim = 4
    name = "counting"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        return np.array([[len(t), t.count("a"), ord(t[0]), 1.0] for t in texts], dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_passages(texts)


def test_repeated_texts_are_embedded_once_and_each_copy_gets_its_vector() -> None:
    texts = ["alpha", "beta", "alpha", "gamma", "beta", "alpha"]
    embedder = CountingEmbedder()
    done: list[int] = []
    out = _embedded(None, embedder, texts, [text_hash(t) for t in texts],  # type: ignore[arg-type]
                    lambda n, _tokens: done.append(n), None)  # fmt: skip
    assert embedder.seen == ["alpha", "beta", "gamma"]
    expected = CountingEmbedder().embed_passages(texts)
    assert out.shape == (6, 4) and np.array_equal(out, expected)


def test_distinct_texts_are_embedded_in_order_as_before() -> None:
    texts = ["one", "two", "three"]
    embedder = CountingEmbedder()
    out = _embedded(None, embedder, texts, [text_hash(t) for t in texts],  # type: ignore[arg-type]
                    lambda n, _tokens: None, None)  # fmt: skip
    assert embedder.seen == texts
    assert np.array_equal(out, CountingEmbedder().embed_passages(texts))
