"""The `select` answer mode: the model chooses evidence sentences by number instead of writing.

The passages of the context are cut into sentences, ranked against the question (the
extractive answerer's ranking, `ExtractiveProvider.rank_sentences`: the question's words
weighted by their rarity, codes, a number for how-many questions, passage rank; fused with
the cosine of the question to each sentence's vector when the index has sentence vectors;
headings left out), and the best `MAX_SENTENCES` are numbered, most relevant first, each
with a short source tag (title, type and the dates it is in force), followed by choice 0,
"no sentence answers the question". The model
replies {"sentences": [numbers]} under a JSON schema whose numbers are an enum of the ones
shown, so a constrained decoder (the local model) can only choose sentences that exist: a
made-up quote is impossible. The answer's claims are the chosen sentences, verbatim, each
citing its own passage; the answer text is those sentences joined. Choosing 0 first (or a
reply with "answerable": false) is the model's refusal.

The prompt puts its fixed instructions first (`answer_select.txt`), so a model that keeps the
key/value cache of the prompt prefix (llama.cpp's `cache_prompt`) reads them once.

What it cannot do: it never paraphrases, translates, combines or computes (a computed question
gets the sentences it rests on, not the result); a sentence that is not among the numbered
ones cannot be chosen, so an answer the ranking misses is lost; passages holding text
addressed to AI assistants are left out (as the extractive answerer does). A provider without
constrained decoding may still return a number outside the list: it is ignored, and an answer
made only of such numbers is a `not_schema` problem. The local 1.5B model almost never chooses
0 (its refusals: bench/answers/local_answers.py, bench/results/local_answers.md): refusals
still come from the gate and the verifier.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from string import Template

import numpy as np

from tether.answering.answer import LANGUAGE_NAMES, strip_fences
from tether.prompts import load_prompt
from tether.providers.extractive import ExtractiveProvider
from tether.text import fold, refusal_sentence
from tether.types import Answer, AnswerProblem, Claim, Completion, Context, Message, ModelRequest

MAX_SENTENCES = 8  # numbered sentences shown to the model
MAX_CHOSEN = 3  # sentences the model may choose
MAX_TOKENS = 24  # {"sentences": [1, 2, 3]} is about 12 tokens


@dataclass(frozen=True)
class Evidence:
    """One numbered sentence shown to the model: its number (from 1), passage and text."""

    number: int
    chunk_id: str
    text: str
    source: str


Closeness = Callable[[str, str], float]
"""(chunk_id, sentence) -> cosine of the question to the sentence (`sentence_closeness`)."""
FUSION_K = 5  # reciprocal-rank fusion constant for the word and vector rankings


def evidence(
    question: str,
    context: Context,
    limit: int = MAX_SENTENCES,
    closeness: Closeness | None = None,
) -> tuple[Evidence, ...]:
    """The `limit` sentences of the context that best answer `question`, numbered from 1,
    most relevant first. Without `closeness` the order is the extractive answerer's word
    ranking (sentences sharing no word with the question last, in passage order, so a question
    in another language still sees the top passages); with it, the word ranking and the
    ranking by closeness are fused (reciprocal ranks). Headings are left out."""
    passages = [(p.chunk.chunk_id, p.chunk.text) for p in context.passages]
    headings = {
        p.chunk.chunk_id: {fold(h).strip() for h in (*p.chunk.heading_path, p.chunk.meta.title)}
        for p in context.passages
    }
    ranked = [
        (chunk_id, sentence)
        for _, _, _, chunk_id, sentence in ExtractiveProvider().rank_sentences(
            question, passages, min_score=0.0
        )
        if fold(sentence).strip().rstrip(":") not in headings[chunk_id]
    ]
    if closeness is not None and ranked:
        near = sorted(range(len(ranked)), key=lambda i: -closeness(*ranked[i]))
        fused = {i: 1 / (FUSION_K + 1 + i) for i in range(len(ranked))}
        for place, i in enumerate(near):
            fused[i] += 1 / (FUSION_K + 1 + place)
        ranked = [ranked[i] for i in sorted(fused, key=lambda i: (-fused[i], i))]
    sources = {p.chunk.chunk_id: _source(p.chunk.meta) for p in context.passages}
    return tuple(
        Evidence(n, chunk_id, sentence, sources[chunk_id])
        for n, (chunk_id, sentence) in enumerate(ranked[:limit], start=1)
    )


SpanCosines = dict[str, tuple[list[tuple[int, int]], np.ndarray]]
"""chunk_id -> (its sentence spans, the question's cosine to each), from `span_cosines`."""


def span_cosines(
    query: np.ndarray, vectors: Mapping[str, tuple[list[tuple[int, int]], np.ndarray]]
) -> SpanCosines:
    """The question's cosine to every sentence span of `vectors` (as `Store.sentence_vectors`
    gives them: spans in the chunk's text and a matrix)."""
    q = query / (np.linalg.norm(query) or 1.0)
    return {
        cid: (spans, matrix @ q / np.maximum(np.linalg.norm(matrix, axis=1), 1e-9))
        for cid, (spans, matrix) in vectors.items()
    }


def overlap_cosine(found: tuple[list[tuple[int, int]], np.ndarray], start: int, end: int) -> float:
    """The best cosine of the spans of `found` that overlap [start, end) (0 when none does)."""
    spans, values = found
    over = [float(v) for (a, b), v in zip(spans, values, strict=True) if a < end and b > start]
    return max(over, default=0.0)


def sentence_closeness(
    query: np.ndarray,
    vectors: Mapping[str, tuple[list[tuple[int, int]], np.ndarray]],
    context: Context,
) -> Closeness:
    """A `Closeness` from the question's vector and the passages' sentence vectors: a
    sentence gets the best cosine of the spans it overlaps (0 when its chunk has none)."""
    texts = {p.chunk.chunk_id: p.chunk.text for p in context.passages}
    cosines = span_cosines(query, vectors)

    def close(chunk_id: str, sentence: str) -> float:
        found = cosines.get(chunk_id)
        start = texts.get(chunk_id, "").find(sentence)
        if found is None or start < 0:
            return 0.0
        return overlap_cosine(found, start, start + len(sentence))

    return close


def _source(meta: object) -> str:
    title = getattr(meta, "title", "")
    start, end = getattr(meta, "effective_from", None), getattr(meta, "effective_to", None)
    dates = (f", from {start.isoformat()}" if start else "") + (
        f" to {end.isoformat()}" if end else ""
    )
    return f"{title}, {getattr(meta, 'doc_type', '')}{dates}"


def select_schema(count: int) -> dict:
    """The reply's JSON schema: 1 to `MAX_CHOSEN` sentence numbers from 0 (no sentence
    answers) to `count`."""
    return {
        "type": "object",
        "properties": {
            "sentences": {
                "type": "array",
                "items": {"type": "integer", "enum": list(range(count + 1))},
                "minItems": 1,
                "maxItems": MAX_CHOSEN,
            },
        },
        "required": ["sentences"],
        "additionalProperties": False,
    }


def build_select_request(
    question: str,
    context: Context,
    *,
    as_of: date | None,
    language: str = "en",
    closeness: Closeness | None = None,
) -> tuple[ModelRequest, tuple[Evidence, ...]]:
    """The request that asks the model to choose sentences, and the numbered sentences
    (`closeness`: see `evidence`)."""
    shown = evidence(question, context, closeness=closeness)
    template, prompt_id = load_prompt("answer_select")
    text = Template(template).safe_substitute(
        sentences="\n".join(f"{e.number}. {e.text} [{e.source}]" for e in shown),
        as_of=as_of.isoformat() if as_of else "unknown",
        question=question,
        language=LANGUAGE_NAMES.get(language, language),
    )
    request = ModelRequest(
        messages=(Message("user", text),),
        json_schema=select_schema(len(shown)),
        schema_name="evidence",
        max_tokens=MAX_TOKENS,
        purpose="answer",
        prompt_id=prompt_id,
        chunk_ids=context.chunk_ids,
        question=question,
        passages=tuple((p.chunk.chunk_id, p.chunk.text) for p in context.passages),
    )
    return request, shown


def parse_selection(
    completion: Completion, shown: tuple[Evidence, ...], *, language: str = "en"
) -> Answer | AnswerProblem:
    """The Answer composed from the chosen sentences, or the problem that stops it."""
    if completion.refusal or completion.finish_reason == "refusal":
        return AnswerProblem("refused", completion.refusal or "the provider refused to answer")
    text = strip_fences(completion.text)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} at character {exc.pos}: {text[:80]!r}"
        if completion.finish_reason == "length":
            return AnswerProblem("cut", f"the answer hit the token limit ({where})")
        return AnswerProblem("not_json", where)
    if not isinstance(raw, dict) or not isinstance(raw.get("sentences"), list):
        return AnswerProblem("not_schema", "sentences: a list of numbers is required")
    numbers = raw["sentences"]
    by_number = {e.number: e for e in shown}
    chosen = [by_number[n] for n in dict.fromkeys(numbers) if isinstance(n, int) and n in by_number]
    answered = raw.get("answerable", True) is not False and numbers[:1] != [0]
    if answered and not chosen and any(n != 0 for n in numbers):
        return AnswerProblem(
            "not_schema", f"sentences: {numbers[:5]} are not among the numbers 0..{len(shown)}"
        )
    if not answered or not chosen:
        return Answer(False, refusal_sentence(language), (), "select")
    chosen = chosen[:MAX_CHOSEN]
    claims = tuple(Claim(e.text, (e.chunk_id,)) for e in chosen)
    return Answer(True, " ".join(e.text for e in chosen), claims, "select")
