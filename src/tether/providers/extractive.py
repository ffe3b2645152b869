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
a section named "Refunds": `tether.text.is_statement`), and to a question that asks how many,
how long, how much or when it quotes only sentences that give an amount, a length or a time
(a number, a number word, "a week", a weekday): none, and it refuses.

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
from tether.types import Completion, ModelRequest

_WORD = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9]|\d")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»)\]]*\s+(?=[\"'«(\[]?[A-Z0-9À-ÖØ-Þ])")
_LIST_MARK = re.compile(r"^\s*(?:[#>]+|[-*+•]|\d+[.)])\s+")
# Question-type cues (read on the folded question): how many / how long / when ... asks for a
# quantity, can / is / does ... for yes or no.
_ASKS_QUANTITY = re.compile(
    r"\b(?:how (?:many|much|long|far|often|soon|late|early|old|big|heavy)|what (?:percentage|"
    r"percent|price|fee|amount|time|date|day|hours?|size|weight|discount)|when|within how|"
    r"combien|quand|jusqu'a quand|a quelle heure|quel(?:le)?s? (?:est|sont) (?:le|la|les) "
    r"(?:delai|prix|montant|frais|duree|date|heures?|taille|poids|rabais))\b"
)
_ASKS_YES_NO = re.compile(
    r"^\s*(?:can|could|do|does|did|is|are|will|would|may|must|should|has|have|est-ce|"
    r"puis-je|peut-on|peut|peuvent|dois-je|faut-il|y a-t-il|ai-je|suis-je)\b"
)
_NUMBERISH = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|"
    r"sixty|ninety|hundred|deux|trois|quatre|cinq|sept|huit|neuf|dix|douze|quinze|vingt|"
    r"trente|soixante|cent|half|twice|once|free|gratuit\w*|"
    r"(?:a|an|one|un|une) (?:day|week|month|year|hour|jour|semaine|mois|an|annee|heure)|"
    r"(?:daily|weekly|monthly|yearly|annual\w*|quotidien\w*|hebdomadaire|mensuel\w*|annuel\w*)|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|"
    r"lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche)\b"
)
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
        folded_q, folded_s = fold(question), fold(sentence)
        cue = 0.0
        if _ASKS_QUANTITY.search(folded_q) and _NUMBERISH.search(folded_s):
            cue += 0.15
        if _ASKS_YES_NO.search(folded_q) and _POLAR.search(folded_s):
            cue += 0.1
        return matched / total + self._code_bonus(question, sentence) + cue + 0.05 / (1 + rank)

    def rank_sentences(
        self,
        question: str,
        passages: Sequence[tuple[str, str]],
        min_score: float | None = None,
    ) -> list[tuple[float, int, int, str, str]]:
        """The sentences of `passages` ((chunk_id, text) in rank order) that may be quoted,
        best answer first: (answer score, passage rank, sentence index, chunk_id, sentence).

        A sentence may be quoted when `score` reaches `min_score` (this answerer's own when
        None); passages holding text addressed to AI assistants, sentences under three words
        and repeated sentences are left out."""
        floor = self.min_score if min_score is None else min_score
        candidates: list[tuple[int, int, str, str]] = []
        seen: set[str] = set()
        for rank, (chunk_id, text) in enumerate(passages):
            if find_instructions(text):  # the verifier flags every claim citing it
                continue
            for index, sentence in enumerate(split_sentences(text)):
                if len(sentence.split()) < self._MIN_WORDS:
                    continue
                if not is_statement(sentence, fragments=False):
                    continue  # a heading, a title or an FAQ's question answers nothing
                key = " ".join(fold(sentence).split())
                if key in seen:
                    continue
                seen.add(key)
                if self.score(question, sentence, rank) >= floor:
                    candidates.append((rank, index, chunk_id, sentence))
        weight = _rarity(question, [c[3] for c in candidates])
        scored = [(self.answers(question, c[3], c[0], weight), *c) for c in candidates]
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
        scored = self.rank_sentences(question, request.passages)
        if _ASKS_QUANTITY.search(fold(question)):
            # how long, how much, when: only a sentence that gives an amount, a length or a
            # time answers; none, and the answer is a refusal
            scored = [s for s in scored if _NUMBERISH.search(fold(s[4]))]
        chosen: list[tuple[float, int, int, str, str]] = []
        passages: list[str] = []
        if scored:
            floor = 0.6 * scored[0][0]
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
