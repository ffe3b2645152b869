"""The deep rerank (`tether.retrieval.deep`): the reader rereads rerank's top 10 with the
question. It reorders rerank's candidates (never adds or drops one), carries the reader's
probabilities, is `ask`'s default when the reader loads, is gated on rerank's floors, and is a
clear error (not a silent rerank) where the reader cannot load.

Every test here but the last two needs the shipped reader: remove
`src/tether/embeddings/reader_model/` and they fail.
"""

from __future__ import annotations

import pytest

from tether.answering.gate import floor_method, support_score
from tether.app import retriever_for
from tether.errors import TetherError
from tether.evaluation.questions import load_questions
from tether.retrieval.deep import DeepReranker, window_title
from tether.retrieval.retriever import Retriever
from tether.types import Filters


@pytest.fixture(scope="module")
def retriever(demo_store) -> Retriever:
    return retriever_for(demo_store)


def test_deep_reorders_the_rerank_candidates_with_the_reader(retriever: Retriever) -> None:
    filters = Filters(audience="public")
    query = "How long do I have to send something back?"
    rerank = retriever.search(query, 20, filters, method="rerank")
    deep = retriever.search(query, 20, filters, method="deep")
    assert {h.chunk.chunk_id for h in deep} == {h.chunk.chunk_id for h in rerank}
    assert [h.rank for h in deep] == list(range(1, len(deep) + 1))
    assert all(h.method == "deep" for h in deep)
    depth = retriever.deep.depth if retriever.deep is not None else 0
    assert 1 <= depth < 20
    assert all("deep_answers" not in h.signals for h in deep[depth:])  # read no further
    for h in deep[:depth]:
        probs = [h.signals[f"deep_{n}"] for n in ("answers", "on_topic", "unrelated")]
        assert all(0.0 <= p <= 1.0 for p in probs) and abs(sum(probs) - 1.0) < 1e-3
        assert "rerank" in h.signals or "rule" in h.signals  # the gate's scale, kept
    scores = [h.score for h in deep[:depth] if "rule" not in h.signals]
    assert scores == sorted(scores, reverse=True)
    assert [h.chunk.chunk_id for h in deep[depth:]] == [h.chunk.chunk_id for h in rerank[depth:]]
    rules = [h.rank for h in rerank if "rule" in h.signals]
    assert rules == [h.rank for h in deep if "rule" in h.signals]  # a standing rule stays


def test_deep_changes_the_order_on_the_bundled_questions(retriever: Retriever) -> None:
    """The reader is read: over 20 bundled questions the deep top 5 differs from rerank's on
    some (a deep rerank that changed nothing would be rerank under another name)."""
    questions = [q for q in load_questions() if q.relevant][:20]
    differ = 0
    for q in questions:
        filters = Filters(as_of=q.as_of, audience=q.audience)
        a = [h.chunk.chunk_id for h in retriever.search(q.question, 5, filters, method="rerank")]
        b = [h.chunk.chunk_id for h in retriever.search(q.question, 5, filters, method="deep")]
        differ += a != b
    assert differ >= 1


def test_the_reader_sees_the_title_and_the_best_sentences_first(retriever: Retriever) -> None:
    deep = retriever.deep
    assert isinstance(deep, DeepReranker)
    query = "What does error E-041 mean?"
    hits = retriever.search(query, 3, Filters(audience="public"), method="rerank")
    for h, (sentences, order) in zip(hits, deep.evidence(query, hits), strict=True):
        title = window_title(h.chunk)
        assert sentences[0] == title and order[0] == 0
        assert sorted(order) == list(range(len(sentences)))
        assert all(s.strip() and s in h.chunk.text for s in sentences[1:])


def test_ask_uses_deep_and_gates_it_on_rerank_floors(retriever: Retriever) -> None:
    assert retriever.answer_method == "deep"
    assert floor_method("deep") == "rerank" and floor_method("bm25") == "bm25"
    query = "Can I return an opened item?"
    filters = Filters(audience="public")
    deep = retriever.search(query, 5, filters, method="deep")
    for h in deep:
        assert support_score(h) == pytest.approx(h.signals["rerank"])


def test_without_the_reader_deep_is_a_clear_error_and_ask_keeps_rerank(demo_store) -> None:
    plain = Retriever(demo_store, retriever_for(demo_store).embedder, reader=lambda: None)
    assert plain.deep is None and plain.answer_method == "rerank"
    with pytest.raises(TetherError, match="reader"):
        plain.search("return window", 5, Filters(), method="deep")


def test_search_default_stays_rerank(demo_store) -> None:
    """`search`'s default cost is unchanged: auto is rerank, and the reader is not loaded
    by a rerank search."""
    loads: list[int] = []

    def loader():
        loads.append(1)
        return None

    r = Retriever(demo_store, retriever_for(demo_store).embedder, reader=loader)
    assert r.default_method == "rerank"
    r.search("return window", 5, Filters(), method="auto")
    assert not loads


def test_the_reader_setting_off_turns_every_reading_off(demo_store, tmp_path) -> None:
    """TETHER_READER=off: ask answers from rerank, and neither the answerability judge nor
    the claim judge reads with the reader."""
    from tether.app import Workspace
    from tether.config import settings_from_mapping

    on = Workspace.open(demo_store.path, settings=settings_from_mapping({}))
    off = Workspace.open(demo_store.path, settings=settings_from_mapping({"TETHER_READER": "off"}))
    try:
        assert on.retriever().answer_method == "deep"
        assert off.retriever().answer_method == "rerank" and off.retriever().deep is None
        assert getattr(off.judge(), "reader", None) is None
        assert getattr(on.judge(), "reader", None) is not None
        with pytest.raises(TetherError, match="TETHER_READER"):
            off.judge_named("reader")
    finally:
        on.close()
        off.close()
