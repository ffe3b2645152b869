"""How many of the extractive answerer's answers match the bundled answer keys (run on demand:
`python bench/answers/extractive_answers.py [--index PATH]`).

Asks every bundled question (its own as_of and audience, method auto, the index's gate) with
the extractive answerer over the demo collection, and counts, on the answerable questions
(`abstain` false): answers whose text matches every `keys` pattern and no `must_not` pattern
(what the model said, and what is shown: the answer text after claims withheld from a
public reader), refusals, and claims that quote a sentence holding text addressed to AI
assistants (`instruction_in_source`). Prints a Markdown table; with `--out FOLDER` also writes
FOLDER/extractive.json (the run's date, commit, machine and load, and the figures) and
extractive.md rendered from it (bench/results/extractive.md itself is written by hand around
a run's table, the run it names at its top).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_result
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
    parser.add_argument("--out", type=Path, help="a folder: write extractive.json and .md there")
    args = parser.parse_args()
    load_before = load_average()
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
    figures = {
        "answerable": len(answerable), "right_said": right_said, "right_shown": right_shown,
        "refused": refused, "instructed": instructed, "by_kind": by_kind,
    }  # fmt: skip
    if args.out is None:
        print(tables(figures))
        return
    out = write_result("extractive", figures, render, load_before=load_before, folder=args.out)
    print(out.with_suffix(".md").read_text(encoding="utf-8"))


def tables(f: dict[str, Any]) -> str:
    """The Markdown tables of a run's figures (what the script prints)."""
    n = f["answerable"]
    lines = [
        f"| measure | value (of {n} answerable bundled questions with keys) |",
        "|---|---|",
        f"| keys match what the answerer said | {f['right_said']} ({100 * f['right_said'] / n:.0f}%) |",
        f"| keys match what is shown | {f['right_shown']} ({100 * f['right_shown'] / n:.0f}%) |",
        f"| refused (gate, answerer or verifier) | {f['refused']} |",
        f"| answers with an instruction_in_source claim | {f['instructed']} |",
        "",
        "| kind | shown and right |",
        "|---|---|",
        *(f"| {kind} | {ok}/{total} |" for kind, (ok, total) in sorted(f["by_kind"].items())),
    ]
    return "\n".join(lines)


def render(record: dict[str, Any]) -> str:
    """The page of a run (`--out`), from its JSON record (`harness.write_result`)."""
    return "# Extractive answerer on the bundled questions\n\n" + tables(record["figures"]) + "\n"


if __name__ == "__main__":
    main()
