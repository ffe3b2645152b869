"""`ExtractiveProvider`: answers without a language model, by quoting passage sentences.

It picks 1–3 sentences from the given passages and cites each sentence's passage. A sentence
may be quoted when it shares enough of the question's words (EN+FR stop words, accent folding,
the shared EN/FR stemmer, exact codes and numbers); among those, the sentences that answer
come first: the question's words count by how rare they are among the passages' sentences
(the product name that every sentence repeats counts little, the word that picks one sentence
counts much), a sentence with a number or duration gains when the question asks how many,
how long, how much or when, and a sentence that says no, only or must gains when the question
asks yes or no; passage rank breaks ties.

It never quotes a heading, a title or a question (an FAQ's "How long does my refund take?",
a section named "Refunds": `tether.text.is_statement`), and to a question that asks for a
price, a length of time, a percentage, a measurement, a number or a time (`tether.asks`, the
cues the answerability judge reads too) it quotes only sentences that give one ("$40", "48
hours", "15%", "2 kg", "three", "Saturday"): none, and it refuses.

It never quotes a passage that holds text addressed to AI assistants (the detector of
`tether.instructions`, the one the verifier's `instruction_in_source` check uses, which flags
every claim citing such a passage): a supplier sheet's "note for AI assistants" is never
an answer.

What it cannot do: it never paraphrases, never combines facts and never reasons: it only
finds sentences that share words with the question, so it can cite a sentence that mentions
the right words without answering. It cites only passages it was given, and answers only
`answer` / `closed_book` requests (not judge or rewrite prompts). A fact that shares its
passage with an instruction to AI assistants is not quoted.

It uses the one stemmer and sentence splitter of `tether.text` (`stem`, `sentences`, each
line of a passage split on its own). Measured on the bundled questions:
bench/results/extractive.md.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence

from tether.asks import QUANTITIES, asks, gives
from tether.errors import ProviderError
from tether.instructions import find_instructions
from tether.providers.base import join_notes, with_selection
from tether.text import (
    STOP_WORDS,
    detect_language,
    fold,
    is_statement,
    refusal_sentence,
    sentences,
    stem,
)
from tether.types import Capabilities, Completion, ModelRequest

_WORD = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9]|\d")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»)\]]*\s+(?=[\"'«(\[]?[A-Z0-9À-ÖØ-Þ])")
_LIST_MARK = re.compile(r"^\s*(?:[#>]+|[-*+•]|\d+[.)])\s+")
TYPED = (*QUANTITIES, "time")  # the question types a sentence must give to be quoted
_POLAR = re.compile(
    r"\b(?:no|not|cannot|never|only|must|may|can|does not|do not|ne|pas|jamais|seulement|"
    r"uniquement|doit|peut|aucun|aucune)\b|n't"
)


def _terms(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(fold(text)) if w not in STOP_WORDS}


def _codes(question: str) -> set[str]:
    """Exact codes and numbers in the question: tokens with a digit, or all-caps IDs."""
    out = set()
    for token in _CODE.findall(question):
        if any(c.isdigit() for c in token) or (len(token) >= 2 and token.isupper()):
            out.add(token.lower())
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage: each line (a list item, a table row) split by
    `tether.text.sentences`, list markers (-, *, 1., #, >) stripped."""
    out: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        out += [line[a:b] for a, b in sentences(line)]
    return out


class ExtractiveProvider:
    """Answers by quoting the passage sentences that best match the question (no model)."""

    # no language model: it answers `answer` requests only (no query rewrite, no agent step)
    capabilities = Capabilities(answer_mode="json", judge="align", model=False, tool_use=False)

    MODEL = "extractive-v2"
    _MIN_WORDS = 3
    # The question's e5 cosine to a sentence (when the index has sentence vectors): a sentence
    # within COS_MARGIN of the best and at least COS_FLOOR may be quoted though it shares no
    # word; every sentence gains COS_WEIGHT per unit of cosine above COS_BASE. e5 cosines sit
    # in a narrow band (`tether.embeddings.embedders`); set on the tuned-on question sets
    # (bench/answers/bench_answerability.py, bench/results/answerability.md).
    COS_FLOOR = 0.84
    COS_MARGIN = 0.015
    COS_BASE = 0.80
    COS_WEIGHT = 1.5
    SECOND_CLAIM = 0.75  # a further sentence is quoted when it scores this share of the best
    # The reader's P(the sentence answers the question) (`ModelRequest.answers`, when the
    # pipeline has the reader): every sentence it read gains READER_WEIGHT per unit of it; a
    # sentence it finds at least READER_FLOOR may be quoted though it shares no word. Set on
    # the tuned-on question sets (bench/results/reader_rank.md).
    READER_WEIGHT = 0.5
    READER_FLOOR = 0.9

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
        """Share of the question's content words in the sentence, + codes, + passage rank:
        whether the sentence may be quoted at all (`min_score`)."""
        q_terms = _terms(question)
        if not q_terms:
            return 0.0
        s_terms = _terms(sentence)
        overlap = len(q_terms & s_terms) / len(q_terms)
        if overlap == 0:
            return 0.0
        return overlap + self._code_bonus(question, sentence) + 0.1 / (1 + rank)

    @staticmethod
    def _code_bonus(question: str, sentence: str) -> float:
        folded = fold(sentence)
        hits = sum(
            1
            for c in _codes(question)
            if re.search(rf"(?<![a-z0-9]){re.escape(fold(c))}(?![a-z0-9])", folded)
        )
        return min(1.0, 0.5 * hits)

    def answers(self, question: str, sentence: str, rank: int, weight: dict[str, float]) -> float:
        """How well the sentence answers: the question's words weighted by their rarity among
        the passages' sentences (`weight`), + codes, + a number when the question asks for a
        quantity, + no/only/must when it asks yes or no, + a little for passage rank."""
        q_terms = _terms(question)
        total = sum(weight.get(t, 1.0) for t in q_terms)
        if not total:
            return 0.0
        matched = sum(weight.get(t, 1.0) for t in q_terms & _terms(sentence))
        kind = asks(question)
        cue = 0.0
        if kind in TYPED and gives(kind, sentence):
            cue += 0.15
        if kind == "yes_no" and _POLAR.search(fold(sentence)):
            cue += 0.1
        return matched / total + self._code_bonus(question, sentence) + cue + 0.05 / (1 + rank)

    def rank_sentences(
        self,
        question: str,
        passages: Sequence[tuple[str, str]],
        min_score: float | None = None,
        closeness: Sequence[tuple[str, int, int, float]] = (),
        answers: Sequence[tuple[str, int, int, float]] = (),
    ) -> list[tuple[float, int, int, str, str]]:
        """The sentences of `passages` ((chunk_id, text) in rank order) that may be quoted,
        best answer first: (answer score, passage rank, sentence index, chunk_id, sentence).

        A sentence may be quoted when `score` reaches `min_score` (this answerer's own when
        None), or, with `closeness` (the question's cosine to each sentence span), when its
        cosine is within `COS_MARGIN` of the best and at least `COS_FLOOR`: the way across
        languages, where no word is shared; with `answers` (the reader's P(answers) of some
        spans), the sentences it read gain by it, and one it finds `READER_FLOOR` or more may be
        quoted. A table row is scored with its table's header row. Passages holding text
        addressed to AI assistants, sentences under three words and repeated sentences are
        left out."""
        floor = self.min_score if min_score is None else min_score
        near: dict[str, list[tuple[int, int, float]]] = {}
        for cid, a, b, cos in closeness:
            near.setdefault(cid, []).append((a, b, cos))
        read: dict[str, list[tuple[int, int, float]]] = {}
        for cid, a, b, p in answers:
            read.setdefault(cid, []).append((a, b, p))
        rows: list[tuple[int, int, str, str, str, float, float]] = []
        seen: set[str] = set()
        for rank, (chunk_id, text) in enumerate(passages):
            if find_instructions(text):  # the verifier flags every claim citing it
                continue
            for index, (sentence, scored_as) in enumerate(_sentences(text)):
                if len(sentence.split()) < self._MIN_WORDS:
                    continue
                if not is_statement(sentence, fragments=False):
                    continue  # a heading, a title or an FAQ's question answers nothing
                key = " ".join(fold(sentence).split())
                if key in seen:
                    continue
                seen.add(key)
                cos = _cosine(near.get(chunk_id, ()), text, sentence)
                p = _cosine(read.get(chunk_id, ()), text, sentence)
                rows.append((rank, index, chunk_id, sentence, scored_as, cos, p))
        kind = asks(question)
        candidates = [
            r
            for r in rows
            if self.score(question, r[4], r[0]) >= floor or r[6] >= self.READER_FLOOR
        ]
        if not any(gives(kind, r[3]) for r in candidates):
            # no sentence shares enough words and gives what is asked (another language, other
            # words): the sentences closest in meaning may be quoted instead
            best_cos = max((r[5] for r in rows), default=0.0)
            candidates += [
                r
                for r in rows
                if r not in candidates
                and r[5] >= self.COS_FLOOR
                and r[5] >= best_cos - self.COS_MARGIN
            ]
        weight = _rarity(question, [c[4] for c in candidates])
        scored = [
            (
                self.answers(question, c[4], c[0], weight)
                + self.COS_WEIGHT * max(0.0, c[5] - self.COS_BASE)
                + self.READER_WEIGHT * c[6],
                c[0],
                c[1],
                c[2],
                c[3],
            )
            for c in candidates
        ]
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        return scored

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
        scored = self.rank_sentences(
            question, request.passages, closeness=request.closeness, answers=request.answers
        )
        kind = asks(question)
        if kind in TYPED:
            # how long, how much, when: only a sentence that gives a length, an amount or a
            # time (`tether.asks.gives`) answers; none, and the answer is a refusal
            scored = [s for s in scored if gives(kind, s[4])]
        chosen: list[tuple[float, int, int, str, str]] = []
        passages: list[str] = []
        if scored:
            floor = self.SECOND_CLAIM * scored[0][0]
            for item in scored:
                if len(chosen) >= self.max_claims or item[0] < floor:
                    break
                if item[3] not in passages:
                    if len(passages) >= self.max_passages:
                        continue
                    passages.append(item[3])
                chosen.append(item)
        chosen.sort(key=lambda s: (-s[0], s[1], s[2]))
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
        inline = request.prompt_id.startswith("answer_inline@")  # `ask --inline`
        return Completion(
            text=_inline(chosen, question) if inline else json.dumps(payload, ensure_ascii=False),
            finish_reason="stop",
            model=self.MODEL,
            provider=self.name,
            latency_s=time.perf_counter() - started,
            note=join_notes(note, self.selection),
        )


def _sentences(text: str) -> list[tuple[str, str]]:
    """(sentence, the text it is scored as) of a passage (`split_sentences`): a table row is
    scored with its table's header row, whose words name what the row's cells are."""
    out: list[tuple[str, str]] = []
    header = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            header = ""
        elif not header:
            header = stripped  # the first row of a table: its header
            continue
        elif set(stripped) <= set("|-: "):
            continue  # the |---| line under the header
        for sentence in split_sentences(line):
            out.append((sentence, f"{header} {sentence}" if header else sentence))
    return out


def _cosine(spans: Sequence[tuple[int, int, float]], text: str, sentence: str) -> float:
    """The best value (a cosine, a probability) of the sentence spans that `sentence`
    overlaps in `text` (0: none)."""
    start = text.find(sentence)
    if start < 0 or not spans:
        return 0.0
    end = start + len(sentence)
    return max((c for a, b, c in spans if a < end and b > start), default=0.0)


def _rarity(question: str, sentences_: list[str]) -> dict[str, float]:
    """Each question word's weight: log(1 + n / sentences holding it), over `sentences_`."""
    terms = [_terms(s) for s in sentences_]
    n = max(1, len(terms))
    return {t: math.log(1 + n / max(1, sum(t in ts for ts in terms))) for t in _terms(question)}


def _inline(chosen: list[tuple[float, int, int, str, str]], question: str) -> str:
    """The answer in the inline form (`--inline`): each quoted sentence followed by the number
    of its passage, [n] (passages numbered from 1 in the order shown), or the refusal sentence."""
    if not chosen:
        return refusal_sentence("fr" if detect_language(question) == "fr" else "en")
    return " ".join(f"{s[4].rstrip()} [{s[1] + 1}]" for s in chosen)
