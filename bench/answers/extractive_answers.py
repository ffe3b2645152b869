"""How many of the extractive answerer's answers match the bundled answer keys (run on demand:
`python bench/answers/extractive_answers.py [--index PATH]`).

Asks every bundled question (its own as_of and audience, method auto, the index's gate) with
the extractive answerer over the demo collection, and counts, on the answerable questions
(`abstain` false): answers whose text matches every `keys` pattern and no `must_not` pattern
(what the model said, and what is shown: the answer text after claims withheld from a
public reader), refusals, and claims that quote a sentence holding text addressed to AI
assistants (`instruction_in_source`). Prints a Markdown table (paste it into
bench/results/extractive.md with the commit measured).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.evaluation.questions import demo_collection, load_questions
from tether.providers.extractive import ExtractiveProvider
from tether.types import AskResult, Question


def matches(q: Question, text: str) -> bool:
    """Every key matches `text` and no must_not does (case-insensitive regular expressions)."""
    return all(re.search(k, text, re.IGNORECASE) for k in q.keys) and not any(
        re.search(m, text, re.IGNORECASE) for m in q.must_not
    )


def said(r: AskResult) -> str:
    """What the answerer said: every claim, withheld or not."""
    return " ".join(ch.claim.text for ch in r.checks) or (r.answer.answer if r.answer else "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, help="a demo index to reuse (else built)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        index = args.index or Path(tmp) / "demo.sqlite"
        ws = Workspace.open(index, create=True)
        if args.index is None:
            ws.ingest(demo_collection())
        ws.use_provider(ExtractiveProvider())
        answerable = [q for q in load_questions(None) if not q.abstain and q.keys]
        right_said = right_shown = refused = instructed = 0
        by_kind: dict[str, list[int]] = {}
        for q in answerable:
            r = ws.ask(q.question, AskOptions(as_of=q.as_of, audience=q.audience))
            shown = r.answer.answer if r.answer is not None and r.answer.answerable else ""
            ok_said = bool(r.checks) and matches(q, said(r))
            ok_shown = bool(shown) and matches(q, shown)
            right_said += ok_said
            right_shown += ok_shown
            refused += r.refused
            instructed += any(
                f.startswith("instruction_in_source") for ch in r.checks for f in ch.flags
            )
            by_kind.setdefault(q.kind, [0, 0])
            by_kind[q.kind][0] += ok_shown
            by_kind[q.kind][1] += 1
        ws.close()
    n = len(answerable)
    print(f"| measure | value (of {n} answerable bundled questions with keys) |")
    print("|---|---|")
    print(f"| keys match what the answerer said | {right_said} ({100 * right_said / n:.0f}%) |")
    print(f"| keys match what is shown | {right_shown} ({100 * right_shown / n:.0f}%) |")
    print(f"| refused (gate, answerer or verifier) | {refused} |")
    print(f"| answers with an instruction_in_source claim | {instructed} |")
    print()
    print("| kind | shown and right |")
    print("|---|---|")
    for kind, (ok, total) in sorted(by_kind.items()):
        print(f"| {kind} | {ok}/{total} |")


if __name__ == "__main__":
    main()
