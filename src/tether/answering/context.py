"""Build the Context a model sees: passages in rank order, within a token budget, with
near-duplicates dropped and a header per passage that lets the model pick the version in force:

    [chunk_id] Title | doc_type, version V, in force from A to B | section: S

Tokens are counted by the `TokenCounter` the caller passes: the multilingual e5 tokenizer (an
XLM-R SentencePiece model shipped with the embedder) when the caller could load it, else
`ESTIMATE`, one token per 3.5 characters (the ratio measured on the demo collection with that
tokenizer, rounded down to over-count). This module loads no tokenizer itself.

What it cannot do: the budget is in e5 tokens, which differ from the answering model's own
tokens by a few percent either way; near-duplicates are found by word-shingle overlap, so two
passages that say the same thing in other words (or in two languages) both stay.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from tether.options import DEFAULT_BUDGET as DEFAULT_BUDGET
from tether.text import words
from tether.types import Chunk, Context, Dropped, Hit, Passage

NEAR_DUPLICATE = 0.8  # share of the smaller passage's 3-word shingles found in the other
CHARS_PER_TOKEN = 3.5


def header(chunk: Chunk) -> str:
    """The passage header line."""
    m = chunk.meta
    start = m.effective_from.isoformat() if m.effective_from else "unknown"
    end = f"to {m.effective_to.isoformat()}" if m.effective_to else "(no end date)"
    section = " > ".join(p for p in chunk.heading_path if p != m.title) or chunk.section
    return (
        f"[{chunk.chunk_id}] {m.title} | {m.doc_type}, version {m.version}, in force from"
        f" {start} {end} | section: {section}"
    )


def estimate_tokens(text: str) -> int:
    """The documented estimate: one token per `CHARS_PER_TOKEN` characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenCounter(NamedTuple):
    """How the context budget is counted: `name` (recorded in the Context) and `count`."""

    name: str
    count: Callable[[str], int]


ESTIMATE = TokenCounter(f"estimate (1 token per {CHARS_PER_TOKEN} characters)", estimate_tokens)


def token_counter(load: Callable[[], tuple[str, Callable[[str], int]] | None]) -> TokenCounter:
    """The (name, count) that `load` returns (an embedder's own tokenizer, for example
    `tether.embeddings.embedders.token_counter_of(embedder)`), else `ESTIMATE` when it returns None
    or fails to load one. Whatever `load` loads is the caller's choice."""
    try:
        found = load()
    except Exception:  # any failure to load a tokenizer falls back to the estimate
        found = None
    return TokenCounter(*found) if found is not None else ESTIMATE


def _shingles(text: str) -> set[tuple[str, ...]]:
    w = words(text)
    if len(w) < 3:
        return {tuple(w)} if w else set()
    return {tuple(w[i : i + 3]) for i in range(len(w) - 2)}


def overlap(a: str, b: str) -> float:
    """Share of the smaller text's 3-word shingles that the other text also has."""
    sa, sb = _shingles(a), _shingles(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def assemble(
    hits: Sequence[Hit],
    budget: int = DEFAULT_BUDGET,
    *,
    count: Callable[[str], int],
    tokenizer: str = "given",
    near_duplicate: float = NEAR_DUPLICATE,
) -> Context:
    """Passages in rank order within `budget` tokens counted by `count` (named `tokenizer` in
    the Context); each dropped chunk listed with why."""
    passages: list[Passage] = []
    dropped: list[Dropped] = []
    used = 0
    for hit in hits:
        chunk = hit.chunk
        twin = next(
            (
                (p, s)
                for p in passages
                if (s := overlap(p.chunk.text, chunk.text)) >= near_duplicate
            ),
            None,
        )
        if twin is not None:
            dropped.append(
                Dropped(
                    chunk, f"near-duplicate of {twin[0].chunk.chunk_id} ({twin[1]:.2f} overlap)"
                )
            )
            continue
        head = header(chunk)
        tokens = count(f"{head}\n{chunk.text}")
        if used + tokens > budget:
            dropped.append(Dropped(chunk, f"over the token budget ({used}+{tokens} > {budget})"))
            continue
        used += tokens
        passages.append(Passage(chunk, head, tokens, len(passages) + 1, hit.score))
    return Context(tuple(passages), tuple(dropped), budget, used, tokenizer)
