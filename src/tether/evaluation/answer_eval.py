"""`run_answer_eval`: every question of a set asked end to end (retrieval, gate, model,
verifier) and each answer scored against its answer keys; the summary per kind and language.

One answer is scored on:
- **correct**: an answerable question (`abstain` false) is answered (not refused, not a
  provider failure), every `keys` pattern matches the text shown, no `must_not` pattern
  matches it; a question with `abstain` true is correct when it is refused (by anyone);
- **abstention**: refused or not, and by whom (`gate`, `answerability`, `model`, `strict`,
  `verifier`; `refused_by` of
  the `AskResult`); precision and recall of refusals against `abstain`;
- **citations**: claims with any flag, and claims the verifier found unsupported (a clue
  flag: number, name, negation, entailment);
- latency (the whole `ask`), tokens and cost of the completion.

"Accuracy of what is shown" is computed over `shown_claims(result)` (the claims neither
withheld from the reader by `tether.verify.flags.withhold` nor removed by --strict), so
accuracy is reported twice: of what the model said (`answer_text`) and of what the reader
is shown (`shown_text`).

A question whose provider failed (for a replay: no recording of it) is not scored: it is
listed under `errors` with the provider's message and counts in no rate.

What it cannot do: keys are regular expressions over the answer text (case-insensitive), so
a right answer worded unlike the keys counts as wrong; it asks through a callable the caller
builds (`tether.app.Workspace.ask`), so it loads no model itself.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tether.providers.bundled import RECORDED_OPTIONS as RECORDED_OPTIONS  # re-exported
from tether.types import AskResult, ClaimCheck, Question
from tether.verify.flags import CLUE_FLAGS

SUPPORT_FLAGS = CLUE_FLAGS
"""Flags by which the verifier says a claim is not supported by its passages (number, name,
negation, entailment)."""


def shown_claims(result: AskResult) -> tuple[ClaimCheck, ...]:
    """The checked claims the reader is shown: neither withheld from this audience (a public
    reader does not see claims failing exact, instruction, precedence or number checks) nor
    removed by --strict."""
    return tuple(ch for ch in result.checks if not ch.removed and not ch.withheld)


def answer_text(result: AskResult) -> str:
    """What the model said: its short answer and every claim it does not already hold."""
    if result.answer is None:
        return ""
    said = result.answer.answer.strip()
    extra = [c.text.strip() for c in result.answer.claims if c.text.strip() not in said]
    return " ".join([said, *extra]).strip()


def shown_text(result: AskResult) -> str:
    """What the reader is shown: the short answer when every claim is shown, else only the
    claims shown (the short answer may repeat a withheld claim)."""
    if result.answer is None:
        return ""
    claims = shown_claims(result)
    if len(claims) == len(result.checks):
        return answer_text(result)
    return " ".join(ch.claim.text for ch in claims).strip()


def keys_right(q: Question, text: str) -> bool:
    """Every key matches `text` and no must_not does (case-insensitive regular expressions)."""
    found = all(re.search(k, text, re.IGNORECASE) for k in q.keys)
    return found and not any(re.search(m, text, re.IGNORECASE) for m in q.must_not)


@dataclass(frozen=True)
class AnswerRow:
    """One question's answer and how it scored."""

    id: str
    kind: str
    language: str
    audience: str
    question: str
    abstain: bool
    status: str  # answered, flagged, refused, no_answer
    refused_by: str | None
    correct: bool
    correct_shown: bool
    answer: str
    keys: tuple[str, ...]
    must_not: tuple[str, ...]
    passages: tuple[str, ...]  # "chunk_id doc_id vVERSION § section" of the context
    claims: int
    flagged_claims: int
    unsupported_claims: int
    flags: tuple[str, ...]
    seconds: float
    input_tokens: int
    output_tokens: int
    cost_usd: float
    note: str = ""


def score(q: Question, result: AskResult, seconds: float) -> AnswerRow:
    """Score one answer (see the module docstring)."""
    refused = result.refused_by is not None
    answered = result.answer is not None and not refused
    if q.abstain:
        correct = shown_ok = refused
    else:
        correct = answered and keys_right(q, answer_text(result))
        shown_ok = answered and bool(shown_claims(result)) and keys_right(q, shown_text(result))
    comp = result.completion
    passages = tuple(
        f"{p.chunk.chunk_id} {p.chunk.doc_id} v{p.chunk.version} § {p.chunk.section}"
        for p in (result.context.passages if result.context else ())
    )
    flags = tuple(sorted({str(f) for ch in result.checks for f in ch.flags}))
    return AnswerRow(
        id=q.id,
        kind=q.kind,
        language=q.language,
        audience=q.audience,
        question=q.question,
        abstain=q.abstain,
        status=result.status,
        refused_by=result.refused_by,
        correct=correct,
        correct_shown=shown_ok,
        answer=answer_text(result),
        keys=q.keys,
        must_not=q.must_not,
        passages=passages,
        claims=len(result.checks),
        flagged_claims=sum(1 for ch in result.checks if ch.flags),
        unsupported_claims=sum(
            1 for ch in result.checks if any(f.split(":")[0] in SUPPORT_FLAGS for f in ch.flags)
        ),
        flags=flags,
        seconds=seconds,
        input_tokens=comp.input_tokens if comp else 0,
        output_tokens=comp.output_tokens if comp else 0,
        cost_usd=comp.cost_usd if comp else 0.0,
        note=result.provider_note,
    )


def summarise(rows: Sequence[AnswerRow]) -> dict[str, Any]:
    """The figures of a group of rows: accuracy (answerable questions answered right),
    accuracy of what is shown, abstention precision and recall, flagged- and unsupported-
    claim rates, refusals by whom, median and p95 seconds, tokens and cost."""
    answerable = [r for r in rows if not r.abstain]
    refused = [r for r in rows if r.refused_by is not None]
    must_refuse = [r for r in rows if r.abstain]
    claims = sum(r.claims for r in rows)
    seconds = sorted(r.seconds for r in rows)
    by: dict[str, int] = {}
    for r in refused:
        by[str(r.refused_by)] = by.get(str(r.refused_by), 0) + 1
    return {
        "n": len(rows),
        "answerable": len(answerable),
        "correct": sum(r.correct for r in answerable),
        "accuracy": _rate(sum(r.correct for r in answerable), len(answerable)),
        "accuracy_shown": _rate(sum(r.correct_shown for r in answerable), len(answerable)),
        "must_refuse": len(must_refuse),
        "refused": len(refused),
        "refused_by": by,
        "abstention_precision": _rate(sum(r.abstain for r in refused), len(refused)),
        "abstention_recall": _rate(
            sum(r.refused_by is not None for r in must_refuse), len(must_refuse)
        ),
        "claims": claims,
        "flagged_claim_rate": _rate(sum(r.flagged_claims for r in rows), claims),
        "unsupported_claim_rate": _rate(sum(r.unsupported_claims for r in rows), claims),
        "median_s": statistics.median(seconds) if seconds else 0.0,
        "p95_s": seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))] if seconds else 0.0,
        "input_tokens": sum(r.input_tokens for r in rows),
        "output_tokens": sum(r.output_tokens for r in rows),
        "cost_usd": sum(r.cost_usd for r in rows),
    }


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True)
class AnswerEvalResult:
    """Every scored answer, the provider that gave them, and the questions not scored."""

    provider: str  # e.g. "extractive", or "replay: qwen… recorded 2026-11-30"
    questions_file: str
    index: str
    rows: tuple[AnswerRow, ...]
    errors: tuple[tuple[str, str], ...] = ()  # (question id, provider's message)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> dict[str, Any]:
        """Figures overall, per kind and per language."""
        kinds = sorted({r.kind for r in self.rows})
        langs = sorted({r.language for r in self.rows})
        return {
            "overall": summarise(self.rows),
            "by_kind": {k: summarise([r for r in self.rows if r.kind == k]) for k in kinds},
            "by_language": {g: summarise([r for r in self.rows if r.language == g]) for g in langs},
        }

    def failures(self) -> list[AnswerRow]:
        """The rows scored wrong."""
        return [r for r in self.rows if not r.correct]

    def weakest_kinds(self, n: int = 3) -> list[tuple[str, float]]:
        """The kinds with the lowest answer accuracy (answerable ones) or, for kinds that
        must be refused, abstention recall: up to `n`, worst first."""
        scored = []
        for kind, s in self.summary["by_kind"].items():
            value = s["accuracy"] if s["accuracy"] is not None else s["abstention_recall"]
            if value is not None:
                scored.append((kind, value))
        return sorted(scored, key=lambda kv: kv[1])[:n]

    def to_dict(self) -> dict[str, Any]:
        """The whole result as plain data (the shape of `tether.schemas.AnswerReport`)."""
        return {
            "provider": self.provider,
            "questions_file": self.questions_file,
            "index": self.index,
            "options": self.options,
            "n_questions": len(self.rows) + len(self.errors),
            "n_scored": len(self.rows),
            "errors": [{"id": i, "reason": why} for i, why in self.errors],
            "summary": self.summary,
            "weakest_kinds": [{"kind": k, "value": v} for k, v in self.weakest_kinds()],
            "rows": [asdict(r) for r in self.rows],
        }

    def stored_summary(self) -> dict[str, Any]:
        """What is kept with the index (`tether info` reads it back): when, with what, the
        overall figures and the weakest kinds, and whether staff questions were asked."""
        return {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "provider": self.provider,
            "questions_file": self.questions_file,
            "staff_questions": any(r.audience == "staff" for r in self.rows),
            "overall": self.summary["overall"],
            "weakest_kinds": [{"kind": k, "value": v} for k, v in self.weakest_kinds()],
        }


def with_recordings(questions: Sequence[Question], recorded: set[str]) -> list[Question]:
    """The questions that have a recording (`recorded`: question texts, whitespace folded),
    for an evaluation of a replay: the others would only be provider errors."""
    return [q for q in questions if " ".join(q.question.split()) in recorded]


def run_answer_eval(
    questions: Sequence[Question],
    ask: Callable[[Question], AskResult],
    *,
    provider: str,
    questions_file: str = "",
    index: str = "",
    options: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AnswerEvalResult:
    """Ask every question through `ask` (the caller's, with its filters) and score each
    answer; a provider failure is listed under `errors`, not scored."""
    rows: list[AnswerRow] = []
    errors: list[tuple[str, str]] = []
    for n, q in enumerate(questions, start=1):
        began = time.perf_counter()
        result = ask(q)
        seconds = time.perf_counter() - began
        if result.problem is not None and result.problem.kind == "provider_error":
            errors.append((q.id, result.problem.detail))
        else:
            rows.append(score(q, result, seconds))
        if progress:
            progress(n, len(questions))
    return AnswerEvalResult(
        provider=provider,
        questions_file=questions_file,
        index=index,
        rows=tuple(rows),
        errors=tuple(errors),
        options=dict(options or {}),
    )
