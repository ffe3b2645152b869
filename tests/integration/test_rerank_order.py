"""The learned rerank order: what it reads, how it orders, what the gate still sees, the
shipped model, and the pseudo-queries it was trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.answering.gate import support_score
from tether.errors import TetherError
from tether.linear import LinearModel
from tether.retrieval.rerank import (
    ORDER_FEATURES,
    ORDER_MODEL_PATH,
    SentenceReranker,
    load_order_model,
    order_features,
)
from tether.types import Chunk, DocMeta, Hit


def _hit(cid: str, doc: str, signals: dict[str, float] | None = None) -> Hit:
    meta = DocMeta(doc_id=doc, version="1", title=doc)
    chunk = Chunk(cid, meta, f"text of {cid}", (doc,), 0, 10, 0)
    return Hit(chunk, 0.0, 1, "hybrid", signals or {})


def _feats(maxsim: float, bm25: float = 0.0) -> dict[str, float]:
    names = ("dense", "xdense", "coverage", "heading", "code", "rrf", "page")
    return {"maxsim": maxsim, "bm25": bm25, **dict.fromkeys(names, 0.5)}


def test_order_features_read_gaps_ranks_share_and_the_documents_best() -> None:
    hits = [
        _hit("a", "doc1", {"bm25_rank": 1.0, "dense_rank": 4.0}),
        _hit("b", "doc1", {"dense_rank": 2.0}),
        _hit("c", "doc2", {}),
    ]
    feats = [_feats(0.9, 0.8), _feats(0.7), _feats(0.8)]
    rows = order_features(feats, [0.6, 0.5, 0.4], hits, share=0.25)
    assert set(ORDER_FEATURES) <= set(rows[0])
    assert rows[0]["maxsim_gap"] == 0.0 and rows[1]["maxsim_gap"] == pytest.approx(-0.2)
    # b's document holds the best candidate: its doc_gap is 0; c's document's best is c
    assert rows[1]["doc_gap"] == 0.0 and rows[2]["doc_gap"] == pytest.approx(-0.1)
    assert rows[0]["bm25_rr"] == 1.0 and rows[0]["dense_rr"] == 0.25 and rows[2]["bm25_rr"] == 0
    assert rows[0]["bm25_x_share"] == pytest.approx(0.2) and rows[1]["sentence"] == 0.5
    assert order_features([], [], [], 0.5) == []


class _Reranker(SentenceReranker):
    """The sentence reranker over given features (no store, no model)."""

    def __init__(self, feats: list[dict[str, float]], order: LinearModel | None) -> None:
        self.order = order
        self.lexical_share = None
        self.lexical_weights = {}
        self.weights = {"maxsim": 1.0}
        self._feats = feats

    def features(self, query, hits, audience="public", *, page=False):  # type: ignore[override]
        return self._feats


def test_a_learned_order_sorts_by_its_probability_and_keeps_the_gates_scale() -> None:
    hits = [_hit("a", "d1"), _hit("b", "d2"), _hit("c", "d3")]
    feats = [_feats(0.9, 0.0), _feats(0.8, 0.9), _feats(0.7, 0.1)]
    plain = _Reranker(feats, None).rerank("q", hits, 3)
    assert [h.chunk.chunk_id for h in plain] == ["a", "b", "c"]
    assert all(h.score == h.signals["rerank"] for h in plain)
    # a model that reads only bm25 puts b first; the weighted mean stays the support score
    model = LinearModel(("bm25",), (0.0,), (1.0,), (5.0,), 0.0, 0.5, {})
    learned = _Reranker(feats, model).rerank("q", hits, 3)
    assert [h.chunk.chunk_id for h in learned] == ["b", "c", "a"]
    assert learned[0].signals["rerank"] == pytest.approx(0.8)
    assert learned[0].score == pytest.approx(learned[0].signals["rr_order"])
    assert learned[0].score > 0.9
    assert [support_score(h) for h in learned] == pytest.approx([0.8, 0.7, 0.9])


def test_the_shipped_order_model_reads_the_features_the_reranker_writes() -> None:
    model = load_order_model()
    assert model.features == ORDER_FEATURES
    trained = model.trained
    assert trained["queries"] and not any(
        k.split("/")[0] in ("gettext", "mkdocs") for k in trained["queries"]
    )  # the held-out manuals are never trained on


def test_a_damaged_order_model_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"features": ["a"], "mean": []}), encoding="utf-8")
    with pytest.raises(TetherError, match=r"rerank order model.*make rerank-model"):
        load_order_model(bad)
    assert ORDER_MODEL_PATH.is_file()


def test_pseudo_queries_come_from_the_collections_own_passages(demo_store) -> None:
    from tether.evaluation.questions import matches
    from tether.evaluation.rerank_training import pseudo_queries

    store = demo_store
    made = pseudo_queries(store, "demo", per_kind=8)
    again = pseudo_queries(store, "demo", per_kind=8)
    assert [q.question for q in made] == [q.question for q in again]  # stable
    kinds = {q.kind for q in made}
    assert kinds == {"pseudo-heading", "pseudo-thinned"}
    chunks = list(store.chunks())
    for q in made:
        assert any(matches(c, r) for c in chunks for r in q.relevant), q
        if q.kind == "pseudo-heading":
            assert not q.question[:1].isdigit()  # the section number is not a query word
