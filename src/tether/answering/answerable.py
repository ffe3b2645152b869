"""Answerability: does a passage the asker may see answer this question? Decided after
retrieval and before any model call, from the retrieved passages themselves.

`read_question` measures the question against its retrieved passages (`Reading.features`):
- which of the question's content words the collection the asker may see holds at all (a
  product, a person or a rule the documents never name: "the Kestrel TR-2200", "employees"
  asked by the public), weighted by how rare each word is there;
- how much of the question one sentence (with its section heading and document title) covers,
  and the same counting only sentences that give what the question asks for (`tether.asks`: a
  number for how much, a time for when);
- codes and numbers of the question missing from the passages;
- the closest sentence's cosine to the question (e5 sentence vectors, when the index has
  them: the only signal that crosses languages) and the closest sentence's that gives the
  asked type;
- the reranker's best score.

`AnswerabilityJudge` turns them into P(answerable) with a logistic regression fitted on
labelled question sets (`tether.evaluation.answerability_training`, one command; the model is
`answerability_model.json` beside this module, the same `JudgeModel` format as the claim
judge's) and refuses under its threshold, saying why in plain words (`Reading.reason`).

What it cannot do: it reads words, numbers and sentence vectors, not meaning: a passage that
names every word of the question and gives a number of the asked kind looks like an answer
even when its number is about something else, and a question whose words all differ from its
answer's (a paraphrase across vocabularies) relies on the cosine alone. It decides whether the
passages answer, not whether the answer is true.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template

import numpy as np

from tether.answering.evidence import SpanCosines, overlap_cosine, span_cosines
from tether.answering.gate import support_score
from tether.asks import QUANTITIES, AskKind, asks, gives
from tether.errors import UpstreamError
from tether.prompts import load_prompt
from tether.protocols import Provider, SearchableStore, Store
from tether.text import STOP_WORDS, codes, detect_language, fold, is_statement, sentences, stem
from tether.types import Filters, Hit, Message, ModelRequest
from tether.verify.judges import p_yes
from tether.verify.learned import JudgeModel, load_model

MODEL_PATH = Path(__file__).with_name("answerability_model.json")
# The second opinion (the local model, when it is the provider): asked when the judge's
# probability falls in SECOND_BAND (every question, by default), it decides with
# SECOND_WEIGHT x its P(yes) + (1 - SECOND_WEIGHT) x the judge's probability against
# SECOND_THRESHOLD. Chosen on tuned-on questions only (every must-refuse question of the
# bundled training half, the library's and the transit's sets, a third of their answerable
# ones), where the mix told the two kinds apart better than the judge or the model alone, and
# 0.6 is the highest threshold on the mix that refused no answerable question
# (bench/experiments/answerability_second_opinion.py, bench/results/answerability_second_opinion.md).
SECOND_BAND = (0.0, 1.0)
SECOND_WEIGHT = 0.7
SECOND_THRESHOLD = 0.6

# Question words that carry no subject (on top of the stop words).
_QUESTION_WORDS = frozenset(
    """how what when where which who whom why can could do does did is are was were will would
    may must should has have am much many long far often soon late early old big heavy kind
    type comment quand quel quelle quels quelles pourquoi combien ou qui que quoi est-ce
    puis-je peut-on dois-je faut-il il elle y a t je on nous vous i you we they me my your our
    need needs want wants get know tell please possible able allowed still""".split()
)
# Words that say what kind of answer is wanted, not what it is about: a question made of these
# alone ("How much does it cost?", "Combien ?", "?") names no subject, and no passage can be
# said to answer it (refused whatever the features say).
ASKING_WORDS = frozenset(
    """cost costs price prices fee fees charge charges pay paid amount time times long days
    day hours hour weeks week months month years year take takes taking last lasts often soon
    late early big size weight number answer question info information help thing things
    something anything coute coutent prix frais tarif montant temps duree delai combien jours
    jour heures heure semaines semaine mois ans annee faut prend chose choses quelque reponse
    aide""".split()
)
_TERM = re.compile(r"[a-z0-9]+")
_RAW_TERM = re.compile(r"[^\W_]+", re.UNICODE)
_PASSAGES = 5  # the retrieved passages read (the context's best)
EVIDENCE_SENTENCES = 6  # the closest sentences a second opinion reads
COUNTED_TERMS = 16  # question words looked up in the index (the rarest in everyday language)
NAMED_RARITY = 2.0  # a missing word rarer than this (Zipf 5: "price", "card") is named


def question_terms(question: str) -> dict[str, str]:
    """The question's content words: stem → the word as written (lower case)."""
    out: dict[str, str] = {}
    for raw in _RAW_TERM.findall(question.lower()):
        for word in _TERM.findall(fold(raw)):
            if len(word) < 2 or word in STOP_WORDS or word in _QUESTION_WORDS:
                continue
            out.setdefault(stem(word), raw if fold(raw) == word else word)
    return out


@functools.lru_cache(maxsize=4096)
def rarity(word: str, language: str) -> float:
    """How rare `word` is in everyday `language` (English or French; wordfreq's Zipf scale
    turned round: 0 for "the", about 3 for "jacket", 7 for a word it has never seen): a
    question word the documents lack says little when it is common ("use", "back") and much
    when it is rare ("kayak", "magazines")."""
    import wordfreq  # loads its word lists on first use (about half a second a language)

    if any(c.isdigit() for c in word):
        return 7.0
    zipf = max(wordfreq.zipf_frequency(word, "en"), wordfreq.zipf_frequency(word, "fr"))
    return max(0.0, 7.0 - zipf)


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _TERM.findall(fold(text)) if w not in STOP_WORDS}


_WANT_EN = {
    "money": "the price or amount asked for",
    "duration": "the length of time asked for",
    "percent": "the percentage asked for",
    "measure": "the measurement asked for",
    "count": "the number asked for",
    "time": "the date or time asked for",
}
_WANT_FR = {
    "money": "le prix ou le montant demandé",
    "duration": "la durée demandée",
    "percent": "le pourcentage demandé",
    "measure": "la mesure demandée",
    "count": "le nombre demandé",
    "time": "la date ou l'heure demandée",
}


@dataclass(frozen=True)
class Reading:
    """How the question meets its passages: the features the judge reads, the type asked,
    the question words the collection never uses, and the sentence that comes closest."""

    features: dict[str, float]
    asked: AskKind
    unknown: tuple[str, ...] = ()  # question words no passage the asker may see holds
    best_sentence: str = ""
    best_chunk: str = ""
    # the sentences that come closest (words and cosine; those that give the asked type
    # first), each after its section's name: what a second opinion reads
    evidence: tuple[str, ...] = ()
    subjectless: bool = False  # no word names what is asked about ("How much does it cost?")

    def reason(self, language: str = "en") -> str:
        """Why the passages were judged not to answer, in plain words, with what to do."""
        if self.subjectless:
            return (
                "la question ne dit pas de quoi elle parle ; nommez le produit, le service ou"
                " la règle qui vous intéresse"
                if language == "fr"
                else "the question does not say what it is about; name the product, service or"
                " rule you are asking about"
            )
        if language == "fr":
            if self.unknown:
                return (
                    f"aucun passage ne parle de « {', '.join(self.unknown)} » ; vérifiez"
                    " l'orthographe ou demandez à une personne de l'équipe"
                )
            want = _WANT_FR.get(self.asked, "ce qui est demandé")
            return (
                f"les passages trouvés parlent du sujet mais aucun ne donne {want} ;"
                " reformulez la question ou demandez à une personne de l'équipe"
            )
        if self.unknown:
            return (
                f"no passage you may see mentions {', '.join(repr(u) for u in self.unknown)};"
                " check the spelling, or ask a person on the team"
            )
        want = _WANT_EN.get(self.asked, "what is asked")
        return (
            f"the passages found are about the subject, but none gives {want}; rephrase the"
            " question, or ask a person on the team"
        )


def read_question(
    question: str,
    hits: Sequence[Hit],
    store: Store,
    filters: Filters,
    query_vector: np.ndarray | None = None,
    read: Sequence[tuple[float, float, float]] | None = None,
) -> Reading:
    """The question measured against its best `hits` (see the module docstring); `store` and
    `filters` say which words the passages the asker may see hold; `query_vector` (e5, from
    the retriever) with the index's sentence vectors gives the cosines (0 without them);
    `read`, the reader's (answers, on topic, unrelated) for each of the top hits
    (`reader_probabilities`), gives `reader_answers` and `reader_topic` (absent without it:
    the model then counts them at their mean)."""
    terms = question_terms(question)
    asked = asks(question)
    top = list(hits[:_PASSAGES])
    language = detect_language(question)

    # how rare each question word is among the passages the asker may see (0: never seen);
    # counted for the `COUNTED_TERMS` words rarest in everyday language only (a long question
    # would cost a count a word), the others taken as common there too
    rare = {s: rarity(terms[s], language) for s in terms}
    counted = set(sorted(terms, key=lambda s: -rare[s])[:COUNTED_TERMS])
    total = max(1, len(store.allowed_ids(filters))) if terms else 1
    common = max(1, total // 2)
    seen = {
        s: store.count_lexical(w, filters) if s in counted else common for s, w in terms.items()
    }
    weight = {s: math.log(1 + total / (1 + seen[s])) for s in terms}
    weight_sum = sum(weight.values()) or 1.0
    in_top: set[str] = set()
    for h in top:
        in_top |= _stems(" ".join((h.chunk.meta.title, *h.chunk.heading_path, h.chunk.text)))
    # named in a refusal: the rarer question words no passage the asker may see holds
    unknown = tuple(
        terms[s]
        for s in sorted(terms, key=lambda s: -rare[s])
        if seen[s] == 0 and s not in in_top and len(terms[s]) > 2 and rare[s] >= NAMED_RARITY
    )[:3]
    rare_sum = sum(rare.values()) or 1.0
    missing_top = sum(weight[s] for s in terms if s not in in_top) / weight_sum
    unknown_rare = sum(rare[s] for s in terms if seen[s] == 0 and s not in in_top) / rare_sum
    unknown_max = max((rare[s] for s in terms if seen[s] == 0 and s not in in_top), default=0.0)
    missing_rare = max((rare[s] for s in terms if s not in in_top), default=0.0)
    unknown_share = sum(weight[s] for s in terms if seen[s] == 0 and s not in in_top) / weight_sum

    q_codes = {c.lower() for c in codes(question)} | {
        n for n in re.findall(r"\d+(?:[.,]\d+)?", question)
    }
    top_text = fold(" ".join(h.chunk.text for h in top))
    codes_missing = sum(1 for c in q_codes if fold(c) not in top_text)

    cosines = _cosines(top, store, query_vector)
    best_cover = typed_cover = best_cos = typed_cos = typed_rare = 0.0
    passage_cover = 0.0
    best_sentence, best_chunk, best_key = "", "", -1.0
    near_language, near_cos = "", -1.0  # the language of the sentence closest in meaning
    ranked: list[tuple[bool, float, str]] = []
    for h in top:
        head = _stems(" ".join((h.chunk.meta.title, *h.chunk.heading_path)))
        body = _stems(h.chunk.text)
        passage_cover = max(passage_cover, _cover(terms, weight, weight_sum, head | body))
        spans = cosines.get(h.chunk.chunk_id, ([], np.zeros(0)))
        for a, b in _sentence_offsets(h.chunk.text):
            sentence = h.chunk.text[a:b].strip()
            if not sentence or not is_statement(sentence, fragments=False):
                continue
            found = head | _stems(sentence)
            cover = _cover(terms, weight, weight_sum, found)
            cos = overlap_cosine(spans, a, b)
            typed = gives(asked, sentence)
            best_cover, best_cos = max(best_cover, cover), max(best_cos, cos)
            if cos > near_cos:
                near_cos, near_language = cos, h.chunk.meta.language or ""
            ranked.append((typed, cover + cos, f"{h.chunk.section}: {sentence}"))
            if typed:
                typed_cover, typed_cos = max(typed_cover, cover), max(typed_cos, cos)
                typed_rare = max(typed_rare, _cover(terms, rare, rare_sum, found))
                key = cover + cos
                if key > best_key:
                    best_key, best_sentence, best_chunk = key, sentence, h.chunk.chunk_id
    rerank = max((support_score(h) for h in top if h.method in ("rerank", "deep")), default=0.0)
    same_language = float(any(h.chunk.meta.language == language for h in top[:2]))
    # across languages no word is shared: the word signals are silenced (0) and the cosines
    # speak alone (`cross`, `cross_cos`)
    cross = float(near_language != language) if cosines else 1.0 - same_language
    words = 1.0 - cross
    features = {
        "rerank": rerank,
        "best_cover": words * best_cover,
        "typed_cover": words * typed_cover,
        "typed_rare_cover": words * typed_rare,
        "unknown_rare": words * unknown_rare,
        "unknown_max": words * unknown_max,
        "missing_rare": words * missing_rare,
        "passage_cover": words * passage_cover,
        "missing_top": words * missing_top,
        "unknown_share": words * unknown_share,
        "any_unknown": words * float(any(seen[s] == 0 and s not in in_top for s in terms)),
        "codes_missing": float(min(codes_missing, 2)),
        "best_cos": best_cos,
        "typed_cos": typed_cos,
        "cross": cross,
        "cross_cos": cross * typed_cos,
        "typed_asked": float(asked in QUANTITIES or asked == "time"),
        "typed_found": float(bool(best_sentence)),
        "same_language": same_language,
        "n_terms": float(min(len(terms), 8)),
    }
    if read:
        top_read = list(read)[: len(top)]
        features["reader_answers"] = max(p[0] for p in top_read)
        features["reader_topic"] = max(p[0] + p[1] for p in top_read)
    ranked.sort(key=lambda r: (not r[0], -r[1]))
    evidence = tuple(dict.fromkeys(r[2] for r in ranked))[:EVIDENCE_SENTENCES]
    unknown = unknown if not cross else ()
    subjectless = all(fold(w) in ASKING_WORDS for w in terms.values())
    return Reading(features, asked, unknown, best_sentence, best_chunk, evidence, subjectless)


def reader_probabilities(
    question: str, hits: Sequence[Hit], retriever: object
) -> list[tuple[float, float, float]] | None:
    """The reader's (answers, on topic, unrelated) for the top hits: from the hits' own
    signals when the deep rerank read them, else read now by the retriever's deep reranker
    (`retriever.deep`); None without a reader."""
    top = list(hits[:_PASSAGES])
    if top and all("deep_answers" in h.signals for h in top):
        return [
            (h.signals["deep_answers"], h.signals["deep_on_topic"], h.signals["deep_unrelated"])
            for h in top
        ]
    deep = getattr(retriever, "deep", None)
    if deep is None or not top:
        return None
    return list(deep.read(question, top))


def _sentence_offsets(text: str) -> list[tuple[int, int]]:
    """(start, end) of every sentence of every line of a chunk's text (headings included:
    `is_statement` leaves them out)."""
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        begin, pos = pos, pos + len(line) + 1
        out += [(begin + a, begin + b) for a, b in sentences(line)]
    return out


def _cover(
    terms: Mapping[str, str], weight: Mapping[str, float], total: float, found: set[str]
) -> float:
    return sum(weight[s] for s in terms if s in found) / total


def _cosines(
    hits: Sequence[Hit], store: SearchableStore, query_vector: np.ndarray | None
) -> SpanCosines:
    if query_vector is None:
        return {}
    return span_cosines(query_vector, store.sentence_vectors([h.chunk.chunk_id for h in hits]))


@dataclass(frozen=True)
class Verdict:
    """The judge's decision on one question: P(answerable), the threshold, the reading, and
    the second opinion's P(yes) when one was asked (else None)."""

    answerable: bool
    probability: float
    threshold: float
    reading: Reading
    second: float | None = None


class ModelAnswerability:
    """A language model's P(yes) to "does one of these passages answer this exact question?"
    (`prompts/answerable.txt`, one token with log-probabilities; the verdict word when the
    provider gives none). Seconds a question with the local 1.5B model on a small CPU (timed
    by bench/experiments/answerability_second_opinion.py:
    bench/results/answerability_second_opinion.md)."""

    def __init__(self, provider: Provider, *, words: int = 150) -> None:
        self.provider = provider
        self.words = words  # each passage is cut to its first `words` words
        self.name = f"llm ({getattr(provider, 'name', 'provider')})"

    def request(self, question: str, passages: Sequence[str]) -> ModelRequest:
        template, prompt_id = load_prompt("answerable")
        body = "\n\n".join(
            f"[{i}] " + " ".join(p.split()[: self.words]) for i, p in enumerate(passages, 1)
        )
        text = Template(template).safe_substitute(passages=body, question=question.strip())
        return ModelRequest(
            messages=(Message("user", text),),
            json_schema=None,
            schema_name="judge",
            max_tokens=1,
            temperature=0.0,
            purpose="judge",
            prompt_id=prompt_id,
            logprobs=True,
        )

    def score(self, question: str, passages: Sequence[str]) -> float:
        """P(yes); 0.5 (no opinion) when the reply cannot be read."""
        completion = self.provider.complete(self.request(question, passages))
        value = p_yes(completion.top_logprobs) if completion.top_logprobs else None
        if value is not None:
            return value
        word = completion.text.strip().strip(".!").lower()
        return 1.0 if word.startswith(("yes", "oui")) else 0.0 if word.startswith("no") else 0.5


class AnswerabilityJudge:
    """P(answerable) from a `Reading` (see the module docstring), with an optional second
    opinion (`second`, a `ModelAnswerability`) asked only when the probability falls in
    `band`: then `second_weight` x its P(yes) + the rest x the probability, against
    `second_threshold`, decides."""

    def __init__(
        self,
        model: JudgeModel | None = None,
        *,
        threshold: float | None = None,
        second: ModelAnswerability | None = None,
        band: tuple[float, float] = SECOND_BAND,
        second_weight: float = SECOND_WEIGHT,
        second_threshold: float = SECOND_THRESHOLD,
    ) -> None:
        self.model = model if model is not None else load_model(MODEL_PATH)
        self.threshold = self.model.threshold if threshold is None else threshold
        self.second = second
        self.band = band
        self.second_weight = second_weight
        self.second_threshold = second_threshold

    def decide(self, reading: Reading, question: str = "", passages: Sequence[str] = ()) -> Verdict:
        """Answerable when P(answerable) reaches the threshold, or, in the band where a second
        opinion is asked, when its mix with P(answerable) reaches `second_threshold`
        (`passages`: what the second opinion reads, the reading's closest sentences). A second
        opinion that fails upstream counts as none: the threshold decides alone."""
        p = self.model.probability(reading.features)
        if reading.subjectless:  # nothing to look for: no passage can be said to answer
            return Verdict(False, p, self.threshold, reading)
        low, high = self.band
        if self.second is not None and passages and low <= p < high:
            try:
                second = self.second.score(question, passages)
            except UpstreamError:  # the model failed (timeout, overload): no second opinion
                return Verdict(p >= self.threshold, p, self.threshold, reading)
            mixed = self.second_weight * second + (1.0 - self.second_weight) * p
            return Verdict(
                mixed >= self.second_threshold, p, self.second_threshold, reading, second
            )
        return Verdict(p >= self.threshold, p, self.threshold, reading)
