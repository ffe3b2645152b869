"""The sentence reranker's cache of each chunk's words changes no result: on the bundled demo
questions the reranked hits (order, scores, every signal) are bit-identical with the words
derived as the reranker did before it had the cache (its former inline code, below), without
the cache (size 0: `chunk_words` on each query), with it cold, and with it warm, for the
public and the staff audience. Uses the session's demo index (`demo_store`)."""

from __future__ import annotations

from datetime import date
from typing import Any

from tether.app import retriever_for
from tether.evaluation.questions import demo_questions, load_questions
from tether.retrieval.rerank import ChunkWords, ChunkWordsCache, SentenceReranker
from tether.retrieval.retriever import Retriever
from tether.text import codes, collapse_code, content_words, fold_plural
from tether.types import Chunk, Filters

TODAY = date(2026, 11, 30)


def _ranked(retriever: Retriever, questions: list[str], filters: Filters) -> list[Any]:
    out = []
    for q in questions:
        hits = retriever.search(q, 10, filters, "rerank")
        out.append([(h.chunk.chunk_id, h.rank, h.score, dict(h.signals)) for h in hits])
    return out


class FormerWords:
    """The words as `SentenceReranker.features` derived them, per candidate and query, before
    the cache (its code then, copied here)."""

    def of(self, c: Chunk) -> ChunkWords:
        def terms(text: str) -> set[str]:
            return {fold_plural(w) for w in content_words(text)}

        return ChunkWords(
            text=frozenset(terms(c.text)),
            heading=frozenset(terms(" ".join((c.meta.title, *c.heading_path)))),
            codes=frozenset(
                collapse_code(x) for x in codes(c.text + " " + " ".join(c.heading_path))
            ),
        )


def _with_words(store: Any, words: Any) -> Retriever:
    retriever = retriever_for(store)
    assert isinstance(retriever.reranker, SentenceReranker)
    retriever.reranker.words = words
    return retriever


def test_cached_words_give_bit_identical_rankings(demo_store) -> None:
    questions = [q.question for q in load_questions(demo_questions())]
    assert len(questions) > 100
    cache = ChunkWordsCache()
    cached = _with_words(demo_store, cache)
    plain = _with_words(demo_store, ChunkWordsCache(0))
    former = _with_words(demo_store, FormerWords())
    for filters in (Filters(as_of=TODAY, audience="public"), Filters(audience="staff")):
        derived = _ranked(former, questions, filters)
        assert _ranked(plain, questions, filters) == derived
        cold = _ranked(cached, questions, filters)
        warm = _ranked(cached, questions, filters)
        assert cold == derived
        assert warm == derived
        assert any("rr_coverage" in s and s["rr_coverage"] > 0 for r in derived for *_, s in r)
    counts = cache.counts()
    assert counts["hits"] > counts["misses"] > 0  # the warm passes were served from it
    assert plain.reranker.words.counts()["entries"] == 0  # type: ignore[union-attr]
