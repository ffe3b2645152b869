"""How far the question's own evidence tells answerable from must-refuse questions: a
measurement for issue 24's answerability judge, before it is built (run on demand:
`python bench/experiments/answerability_signal.py`; tuned-on question sets only: the bundled one and
Larkfield's scorable part; the held-out answer sets are not read).

For each question, the passages `ask` would show (rerank, k 5, the question's date and
audience) are searched, and two signals are read from their sentences (headings and questions
left out, `tether.text.is_statement`): the share of the question's content words that one
sentence (with its section's heading) holds, and whether that sentence holds what the
question asks for (a number or a length for how much / how long / how many, a date, weekday
or time for when, anything for the rest). Reported: the rerank score's own separation (the
gate's signal) and these, as the area under the ROC curve (answerable high, must-refuse low)
and the must-refuse share refused when at most 5% of answerable questions are. Writes
bench/results/answerability_signal.md.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from tether.app import Workspace
from tether.config import settings_from_mapping
from tether.evaluation.questions import demo_collection, load_questions
from tether.text import STOP_WORDS, fold, is_statement, sentences, stem
from tether.types import Filters

ROOT = Path(__file__).resolve().parents[2]
_ASKS_AMOUNT = re.compile(
    r"\b(?:how (?:many|much|long|far|often|old)|what (?:is|are) the (?:price|fee|cost|deposit)|"
    r"combien|quel(?:le)?s? (?:est|sont) (?:le|la|les) (?:prix|frais|montant|delai|duree))\b"
)
_ASKS_TIME = re.compile(r"\b(?:when|what time|quand|a quelle heure|jusqu'a quand)\b")
_AMOUNT = re.compile(r"\d|\b(?:free|gratuit\w*|half|twice|once|a (?:day|week|month|year))\b")
_TIME = re.compile(
    r"\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|lundi|mardi|"
    r"mercredi|jeudi|vendredi|samedi|dimanche|noon|midnight|midi|minuit)\b"
)
_QWORDS = frozenset("how what when where which who why can could do does is are may should".split())


def _terms(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z0-9]+", fold(text)) if w not in STOP_WORDS
            and w not in _QWORDS and len(w) > 1}  # fmt: skip


def signals(question: str, passages: list[tuple[str, str]]) -> tuple[float, float]:
    """(best coverage of the question's words by one sentence, the same counting only a
    sentence that holds the type of answer asked for)."""
    q = _terms(question)
    folded_q = fold(question)
    wants = (
        _AMOUNT if _ASKS_AMOUNT.search(folded_q) else _TIME if _ASKS_TIME.search(folded_q) else None
    )
    best = typed = 0.0
    for heading, text in passages:
        head = _terms(heading)
        for a, b in sentences(text):
            s = text[a:b]
            if not is_statement(s, fragments=False):
                continue
            cover = len(q & (_terms(s) | head)) / max(len(q), 1)
            best = max(best, cover)
            if wants is None or wants.search(fold(s)):
                typed = max(typed, cover)
    return best, typed


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def refused_at(pos: list[float], neg: list[float], allowed: float = 0.05) -> tuple[float, float]:
    """(threshold, share of `neg` under it) for the highest threshold under which at most
    `allowed` of `pos` fall."""
    ordered = sorted(pos)
    cut = ordered[int(allowed * len(ordered))] if ordered else 0.0
    return cut, sum(n < cut for n in neg) / max(len(neg), 1)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.open(Path(tmp) / "demo.sqlite", settings=settings_from_mapping({}))
        ws.ingest(demo_collection(), executor="serial")
        rows = []
        for q in load_questions():
            filters = Filters(as_of=q.as_of, audience=q.audience)
            hits = ws.retriever().search(q.question, 5, filters, method="rerank")
            passages = [(" ".join(h.chunk.heading_path), h.chunk.text) for h in hits]
            best, typed = signals(q.question, passages)
            top = max((h.score for h in hits), default=0.0)
            must_refuse = q.abstain or (q.audience == "public" and q.kind == "staff-only")
            rows.append((q.id, q.kind, must_refuse, top, best, typed))
    lines = ["# Answerability signals on the bundled questions (tuned on)", "",
             "| signal | AUC (answerable above must-refuse) | threshold at 5% answerable refused |"
             " must-refuse refused there |", "|---|---|---|---|"]  # fmt: skip
    for i, name in ((3, "rerank score (the gate's)"), (4, "word coverage, best sentence"),
                    (5, "word coverage, sentence with the asked type")):  # fmt: skip
        pos = [r[i] for r in rows if not r[2]]
        neg = [r[i] for r in rows if r[2]]
        cut, share = refused_at(pos, neg)
        lines.append(f"| {name} | {auc(pos, neg):.3f} | {cut:.3f} | {share:.0%} ({len(neg)}) |")
    out = ROOT / "bench" / "results" / "answerability_signal.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
