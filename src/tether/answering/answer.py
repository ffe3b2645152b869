"""The answer: its schema, the request that asks for it, and reading it back.

Two citation modes:
- `json` (default): the model returns {"answerable", "answer", "claims": [{"text",
  "chunk_ids"}]}, requested as strict structured output where the provider supports it, then
  validated again here with Pydantic. Chunk IDs are not constrained by a pattern: a wrong ID
  must stay visibly wrong for the checker (only the square brackets of the passage header,
  which small models copy, are removed).
- `inline`: for models without structured output, numbered sources [1]..[n]; every sentence
  cites markers; markers map back to chunk IDs; a marker outside 1..n is kept as the
  invalid citation `marker:[n]` so the checker reports it; an exact refusal sentence.

Prompts are files in `tether/prompts/`, loaded byte-exact and identified by name and the first
12 hex characters of their SHA-256 (`answer@1a2b3c4d5e6f`); a change to a prompt changes the
ID, so recordings made with the old prompt no longer replay as exact matches.

Problems (`AnswerProblem`): cut (token limit), refused (provider refusal), not_json, not_schema,
too_long (a reply over `MAX_REPLY_CHARS`, more than `MAX_CLAIMS` claims, or a claim over
`MAX_CLAIM_CHARS`: checking costs grow with the text, so a runaway or hostile reply is not
read at all).

What it cannot do: it does not judge whether the answer is right (that is `verify`); in inline
mode a sentence is a claim, so a sentence that states two facts is one claim.
"""

from __future__ import annotations

import json
import re
from datetime import date
from string import Template

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tether.prompts import load_prompt
from tether.text import REFUSAL_SENTENCES, is_refusal, refusal_sentence, sentences
from tether.types import (
    Answer,
    AnswerProblem,
    Claim,
    Completion,
    Context,
    Message,
    ModelRequest,
)

REFUSAL = REFUSAL_SENTENCES  # defined once, in tether.text
LANGUAGE_NAMES = {"en": "English", "fr": "French"}

ANSWER_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "answerable": {"type": "boolean"},
        "answer": {"type": "string"},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "chunk_ids": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["text", "chunk_ids"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["answerable", "answer", "claims"],
    "additionalProperties": False,
}


class _ClaimModel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str = Field(min_length=1)
    chunk_ids: list[str]


class _AnswerModel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    answerable: bool
    answer: str
    claims: list[_ClaimModel]


def build_request(
    question: str,
    context: Context,
    *,
    as_of: date | None,
    language: str = "en",
    mode: str = "json",
    closed_book: bool = False,
    max_tokens: int = 400,
    closeness: tuple[tuple[str, int, int, float], ...] = (),
    answers: tuple[tuple[str, int, int, float], ...] = (),
) -> ModelRequest:
    """The request for one answer: prompt file filled with the passages and the question;
    `closeness` (the question's cosine to each sentence span) and `answers` (the reader's
    P(answers) of the closest spans) ride along for answerers that read passages directly."""
    name = "closed_book" if closed_book else ("answer_inline" if mode == "inline" else "answer")
    template, prompt_id = load_prompt(name)
    if mode == "inline":
        passages = "\n\n".join(
            f"[{p.marker}] {p.header.split('] ', 1)[1]}\n{p.chunk.text}" for p in context.passages
        )
    else:
        passages = context.render()
    text = Template(template).safe_substitute(
        as_of=as_of.isoformat() if as_of else "unknown",
        language=LANGUAGE_NAMES.get(language, language),
        refusal=refusal_sentence(language),
        passages=passages,
        question=question,
    )
    shown = () if closed_book else context.chunk_ids
    return ModelRequest(
        messages=(Message("user", text),),
        json_schema=None if mode == "inline" else ANSWER_SCHEMA,
        schema_name="answer",
        max_tokens=max_tokens,
        purpose="closed_book" if closed_book else "answer",
        prompt_id=prompt_id,
        chunk_ids=shown,
        question=question,
        passages=tuple((p.chunk.chunk_id, p.chunk.text) for p in context.passages)
        if not closed_book
        else (),
        closeness=() if closed_book else closeness,
        answers=() if closed_book else answers,
    )


# What a reply may hold before it is refused unread (checking time grows with the text's
# length; bench/serve/hostile_soak.py times checks near and over these caps,
# bench/results/hostile_soak.md); far above what an answer of a few claims needs.
MAX_REPLY_CHARS = 32_000
MAX_CLAIMS = 30
MAX_CLAIM_CHARS = 2_000


def _too_long(text: str, claims: tuple[Claim, ...]) -> AnswerProblem | None:
    if len(text) > MAX_REPLY_CHARS:
        return AnswerProblem(
            "too_long", f"the reply is {len(text):,} characters (at most {MAX_REPLY_CHARS:,})"
        )
    if len(claims) > MAX_CLAIMS:
        return AnswerProblem("too_long", f"{len(claims)} claims (at most {MAX_CLAIMS})")
    longest = max((len(c.text) for c in claims), default=0)
    if longest > MAX_CLAIM_CHARS:
        return AnswerProblem(
            "too_long", f"a claim of {longest:,} characters (at most {MAX_CLAIM_CHARS:,})"
        )
    return None


def parse_completion(
    completion: Completion, context: Context, *, mode: str = "json", language: str = "en"
) -> Answer | AnswerProblem:
    """The Answer in a completion, or the AnswerProblem that stops it being read."""
    if completion.refusal or completion.finish_reason == "refusal":
        return AnswerProblem("refused", completion.refusal or "the provider refused to answer")
    if len(completion.text) > MAX_REPLY_CHARS:
        return _too_long(completion.text, ()) or AnswerProblem("too_long", "")
    if mode == "inline":
        if completion.finish_reason == "length":
            return AnswerProblem("cut", "the answer hit the token limit")
        inline = parse_inline(completion.text, context, language)
        return _too_long("", inline.claims) or inline
    text = strip_fences(completion.text)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        if completion.finish_reason == "length":
            return AnswerProblem("cut", f"the answer hit the token limit ({exc.msg})")
        return AnswerProblem("not_json", f"{exc.msg} at character {exc.pos}: {text[:80]!r}")
    except RecursionError:  # a hostile or broken model: JSON nested thousands of levels deep
        return AnswerProblem("not_json", f"JSON nested too deeply to read: {text[:80]!r}")
    try:
        model = _AnswerModel.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "answer"
        return AnswerProblem("not_schema", f"{where}: {first['msg']}")
    claims = tuple(
        Claim(c.text.strip(), tuple(_clean_id(i) for i in c.chunk_ids)) for c in model.claims
    )
    if not model.answerable:
        claims = ()  # an unanswerable answer makes no claims
    return _too_long("", claims) or Answer(model.answerable, model.answer.strip(), claims, "json")


_MARKER = re.compile(r"\[(\d+)\]")
_TRAILING_MARKERS = re.compile(r"([.!?])\s*((?:\[\d+\](?:\s*(?=\[))?)+)")


def parse_inline(text: str, context: Context, language: str = "en") -> Answer:
    """An inline-marker answer: each sentence a claim, its markers mapped to chunk IDs."""
    body = text.strip()
    if is_refusal(body):
        return Answer(False, body, (), "inline")
    ids = context.chunk_ids
    claims: list[Claim] = []
    body = _TRAILING_MARKERS.sub(r"\2\1", body)  # "45 days.[1]" -> "45 days[1]."
    for start, end in sentences(body):
        sentence = body[start:end]
        cited: list[str] = []
        for n in (int(m) for m in _MARKER.findall(sentence)):
            cited.append(ids[n - 1] if 1 <= n <= len(ids) else f"marker:[{n}]")
        clean = _MARKER.sub("", sentence).strip()
        if clean and not is_refusal(clean):
            claims.append(Claim(clean, tuple(dict.fromkeys(cited))))
    answer = _MARKER.sub("", body).strip()
    return Answer(bool(claims), answer, tuple(claims), "inline")


def _clean_id(chunk_id: str) -> str:
    """An ID as cited, without the square brackets and spaces of the header it was copied from
    ("[0a0c1063e971]" -> "0a0c1063e971"); anything else in it is kept, so a wrong ID stays wrong."""
    return chunk_id.strip().removeprefix("[").removesuffix("]").strip()


def strip_fences(text: str) -> str:
    """`text` without the Markdown code fence a model may wrap its JSON in."""
    text = text.strip()
    if text.startswith("```"):
        text = re.sub(r"^```[a-zA-Z]*\s*", "", text)
        text = re.sub(r"\s*```$", "", text)
    return text
