"""The sentence reranker's cache of what it reads from a chunk's text
(`tether.retrieval.rerank.ChunkWordsCache`): derived once and kept, bounded, and a chunk whose
text, title or headings changed is never answered from what was derived from its old ones.
That the rankings stay bit-identical is tests/integration/test_rerank_words.py."""

from __future__ import annotations

from dataclasses import replace

from fakes import chunk

from tether.retrieval.rerank import ChunkWordsCache, chunk_words


def test_a_chunk_s_words_are_derived_once_and_kept() -> None:
    words = ChunkWordsCache(8)
    c = chunk("c1", "Refunds for damaged boxes take 30 days (code RT-2200-07).", heading="Returns")
    first = words.of(c)
    assert first == chunk_words(c)
    assert {"refund", "damaged", "box", "day"} <= first.text  # plurals folded
    assert "return" in first.heading and "rt220007" in first.codes
    assert words.of(replace(c)) is first  # another read of the same chunk: kept
    assert words.counts() == {"hits": 1, "misses": 1, "entries": 1}


def test_a_changed_chunk_never_gets_its_old_words() -> None:
    words = ChunkWordsCache(8)
    c = chunk("c1", "Refunds take 30 days.", heading="Returns")
    old = words.of(c)
    text = words.of(replace(c, text="Exchanges take 14 days."))  # same ID, new text
    assert "exchange" in text.text and "refund" not in text.text
    heading = words.of(replace(c, heading_path=("Exchanges",)))
    assert "exchange" in heading.heading and "return" not in heading.heading
    title = words.of(replace(c, meta=replace(c.meta, title="Warranty")))
    assert "warranty" in title.heading and title.text == old.text
    # "a" + "bc" and "ab" + "c": one text with another split is another key
    split = chunk("c2", "x", heading="")
    one = words.of(replace(split, heading_path=("alpha beta", "gamma")))
    two = words.of(replace(split, heading_path=("alpha", "beta gamma")))
    assert one == two and words.counts()["misses"] == 6  # same words, still two derivations
    assert words.of(c) == old


def test_the_words_cache_is_bounded() -> None:
    words = ChunkWordsCache(3)
    for i in range(10):
        words.of(chunk(f"c{i}", f"passage number {i}"))
    assert words.counts()["entries"] == 3
    words.of(chunk("c0", "passage number 0"))  # dropped long ago: derived again
    assert words.counts()["misses"] == 11
