"""`ExtractiveProvider`: answers without a language model, by quoting passage sentences.

It picks 1–3 sentences from the given passages by word overlap with the question (EN+FR stop
words, accent folding, a crude suffix stemmer, exact codes and numbers, passage rank) and
cites each sentence's passage.

What it cannot do: it never paraphrases, never combines facts and never reasons: it only
finds sentences that share words with the question, so it can cite a sentence that mentions
the right words without answering. It cites only passages it was given, and answers only
`answer` / `closed_book` requests (not judge or rewrite prompts).

Its stemmer (`_stem`) and sentence splitter (`split_sentences`) are its own, not
`tether.text`'s `fold_plural` / `sentences`: those give other terms and other sentences
(see the notes at each), which would change which sentences it quotes.
"""

from __future__ import annotations

import json
import re
import time

from tether.errors import ProviderError
from tether.providers.base import join_notes, with_selection
from tether.text import STOP_WORDS, fold
from tether.types import Completion, ModelRequest

_WORD = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9]|\d")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»)\]]*\s+(?=[\"'«(\[]?[A-Z0-9À-ÖØ-Þ])")
_LIST_MARK = re.compile(r"^\s*(?:[#>]+|[-*+•]|\d+[.)])\s+")


def _stem(word: str) -> str:
    """A crude EN/FR suffix stripper for matching question and sentence words.

    Not `tether.text.fold_plural`: this one also strips -ement(s), -ation(s), -ing(s), -ed, -es
    (stem of 4+ letters left) and any final s/x/e after 3 letters (take → tak, avis → avi),
    where fold_plural only makes plurals singular (policies → policy, chevaux → cheval) and
    leaves -ed/-ing/-e words alone; they differ on about a third of the demo collection's
    words, which would change the scores and so the quoted sentences."""
    for suffix in ("ements", "ement", "ations", "ation", "ings", "ing", "ies", "es", "ed"):
        if len(word) - len(suffix) >= 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    if len(word) > 3 and word[-1] in "sxe":
        return word[:-1]
    return word


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(fold(text)) if w not in STOP_WORDS}


def _codes(question: str) -> set[str]:
    """Exact codes and numbers in the question: tokens with a digit, or all-caps IDs."""
    out = set()
    for token in _CODE.findall(question):
        if any(c.isdigit() for c in token) or (len(token) >= 2 and token.isupper()):
            out.add(token.lower())
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage: lines first, then sentence ends; list markers stripped.

    Not `tether.text.sentences`: this one ends a sentence at every line break, strips list
    markers (-, *, 1., #, >), and splits after . ! ? … only before a capital, a digit or an
    opening quote, with no abbreviation list; `sentences` keeps single line breaks inside a
    sentence, keeps the markers, splits before a lowercase word too, and does not split after
    a one-letter token or an abbreviation (so "17,95 $. Les vélos" in the demo collection
    stays one sentence there and is two here)."""
    out: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        if not line:
            continue
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if piece:
                out.append(piece)
    return out


class ExtractiveProvider:
    """Answers by quoting the passage sentences that best match the question (no model)."""

    MODEL = "extractive-v1"
    _MIN_WORDS = 3

    def __init__(self, min_score: float = 0.34, max_claims: int = 3, max_passages: int = 2) -> None:
        self.name = "extractive"
        self.model = self.MODEL
        self.min_score = min_score
        self.max_claims = max_claims
        self.max_passages = max_passages
        self.selection = ""

    def describe(self) -> str:
        return with_selection(self.selection, f"extractive answerer ({self.MODEL}, no model)")

    def score(self, question: str, sentence: str, rank: int) -> float:
        """Share of the question's content words in the sentence, + codes, + passage rank."""
        q_terms = _terms(question)
        if not q_terms:
            return 0.0
        s_terms = _terms(sentence)
        overlap = len(q_terms & s_terms) / len(q_terms)
        if overlap == 0:
            return 0.0
        folded = fold(sentence)
        codes = _codes(question)
        hits = sum(
            1 for c in codes if re.search(rf"(?<![a-z0-9]){re.escape(fold(c))}(?![a-z0-9])", folded)
        )
        return overlap + min(1.0, 0.5 * hits) + 0.1 / (1 + rank)

    def complete(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        if request.purpose not in ("answer", "closed_book"):
            raise ProviderError(
                f"the extractive answerer only answers questions; it cannot do "
                f"'{request.purpose}' (configure a language model with TETHER_PROVIDER)"
            )
        question = request.question.strip()
        if not question and request.passages:
            raise ProviderError(
                "the extractive answerer needs request.question (the user's question)"
            )
        scored: list[tuple[float, int, int, str, str]] = []
        seen: set[str] = set()
        for rank, (chunk_id, text) in enumerate(request.passages):
            for index, sentence in enumerate(split_sentences(text)):
                if len(sentence.split()) < self._MIN_WORDS:
                    continue
                key = " ".join(fold(sentence).split())
                if key in seen:
                    continue
                seen.add(key)
                value = self.score(question, sentence, rank)
                if value >= self.min_score:
                    scored.append((value, rank, index, chunk_id, sentence))
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        chosen: list[tuple[float, int, int, str, str]] = []
        passages: list[str] = []
        if scored:
            floor = max(self.min_score, 0.6 * scored[0][0])
            for item in scored:
                if len(chosen) >= self.max_claims or item[0] < floor:
                    break
                if item[3] not in passages:
                    if len(passages) >= self.max_passages:
                        continue
                    passages.append(item[3])
                chosen.append(item)
        chosen.sort(key=lambda s: (s[1], s[2]))
        claims = [{"text": s[4], "chunk_ids": [s[3]]} for s in chosen]
        payload = {
            "answerable": bool(claims),
            "answer": " ".join(s[4] for s in chosen)
            if claims
            else "No passage answers this question.",
            "claims": claims,
        }
        note = (
            f"extractive answerer: quoted {len(claims)} sentence(s) sharing words with the "
            f"question; no language model"
            if claims
            else f"extractive answerer: no sentence scored {self.min_score} or more"
        )
        return Completion(
            text=json.dumps(payload, ensure_ascii=False),
            finish_reason="stop",
            model=self.MODEL,
            provider=self.name,
            latency_s=time.perf_counter() - started,
            note=join_notes(note, self.selection),
        )
