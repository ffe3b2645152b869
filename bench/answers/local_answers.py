"""Accuracy and latency of an answerer on bundled questions, scored against the answer keys
(run on demand: `python bench/answers/local_answers.py --index demo.sqlite --mode select`).

Asks each question (its own as_of and audience, method auto, the index's gate) and scores it:
an answerable question (`abstain` false) is right when the answer is not a refusal and what
the answerer said (`extractive_answers.said`: every claim, withheld or not) matches every
`keys` pattern and no `must_not` pattern (`extractive_answers.matches`); a must-refuse
question (`abstain` true) is right when it is refused (by the gate, the model or the
verifier). Abstention precision and recall count refusals against the must-refuse questions.

Latency: every model call of a question (the answer, and the local model's entailment judge
in json mode) is counted through a wrapper: wall seconds, prompt tokens the model processed
(llama.cpp's `prompt_n`, which leaves out a cached prompt prefix; else the reported input
tokens) and generated tokens, and an unloaded estimate at `--prompt-tps` / `--gen-tps`
(defaults: 35 and 9 tokens/s, measured on 2 unloaded cores).

`--provider replay` replays the recorded local answers (src/tether/demo/recordings/) through
today's pipeline (the replay provider: the judge is then the embedding one, so only the
recorded answer call is counted). `--ids` picks the questions (default: the fixed subset of
15 answerable and 3 must-refuse questions, `SUBSET`); `--all` takes every bundled question.
Prints a Markdown table and, with `--jsonl FILE`, one line per question; with `--out FOLDER`
also FOLDER/local_answers.json (the run's date, commit, machine, load and rows) and its page.

What it cannot do: a regular expression key is a proxy for a right answer; it measures on
the collection the keys were written for.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.answers.extractive_answers import matches, said
from bench.harness import load_average, write_result
from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.evaluation.questions import demo_collection, load_questions
from tether.providers.replay import ReplayProvider
from tether.types import Completion, ModelRequest

SUBSET = (
    "Q001 Q002 Q003 Q004 Q005 Q006 Q053 Q068 Q069 Q071 Q080 Q083 Q095 Q102 Q138 Q170 Q171 Q172"
).split()
RECORDINGS = Path(__file__).parents[2] / "src/tether/demo/recordings/local-qwen.jsonl"


@dataclass
class Counting:
    """A provider wrapper that counts each call's tokens and seconds (same name and model)."""

    inner: Any
    calls: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.inner.name
        self.model = self.inner.model
        self.selection = ""

    def describe(self) -> str:
        return str(self.inner.describe())

    def complete(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        done = self.inner.complete(request)
        timings = getattr(self.inner, "last_timings", {}) or {}
        self.calls.append(
            {
                "purpose": request.purpose,
                "seconds": time.perf_counter() - started,
                "prompt": int(timings.get("prompt_n", done.input_tokens) or 0),
                "prompt_total": done.input_tokens,
                "generated": done.output_tokens,
            }
        )
        return done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, required=True, help="demo index (built if absent)")
    parser.add_argument("--provider", default="local", help="local | replay | extractive")
    parser.add_argument("--mode", default="json", help="json | select")
    parser.add_argument("--ids", nargs="*", default=SUBSET)
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--jsonl", type=Path)
    parser.add_argument("--prompt-tps", type=float, default=35.0)
    parser.add_argument("--gen-tps", type=float, default=9.0)
    parser.add_argument("--out", type=Path, help="a folder: write local_answers.json and .md")
    args = parser.parse_args()
    load_before = load_average()
    ws = Workspace.open(args.index, create=True)
    if not args.index.exists() or not ws.store.info().get("chunks"):
        ws.ingest(demo_collection())
    inner = (
        ReplayProvider(RECORDINGS, mode="replay")
        if args.provider == "replay"
        else ws.make_provider(args.provider)
    )
    counting = Counting(inner)
    ws.use_provider(counting)
    questions = [q for q in load_questions(None) if args.all or q.id in args.ids]
    rows = []
    out = args.jsonl.open("w") if args.jsonl else None
    for q in questions:
        counting.calls = []
        r = ws.ask(q.question, AskOptions(as_of=q.as_of, audience=q.audience, mode=args.mode))
        text = said(r)
        ok = r.refused if q.abstain else (not r.refused and matches(q, text))
        prompt = sum(c["prompt"] for c in counting.calls)
        generated = sum(c["generated"] for c in counting.calls)
        row = {
            "id": q.id, "kind": q.kind, "abstain": q.abstain, "right": bool(ok),
            "refused": r.refused, "refused_by": r.refused_by, "said": text[:300],
            "note": r.provider_note,
            "calls": len(counting.calls), "prompt_tokens": prompt, "generated_tokens": generated,
            "model_s": round(sum(c["seconds"] for c in counting.calls), 2),
            "unloaded_estimate_s": round(prompt / args.prompt_tps + generated / args.gen_tps, 2),
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
        if out:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    ws.close()
    report(rows)
    if args.out is not None:
        figures = {"provider": args.provider, "mode": args.mode, "rows": rows}
        write_result("local_answers", figures, render, load_before=load_before, folder=args.out)


def render(record: dict[str, Any]) -> str:
    """The page of a run (`--out`), from its JSON record (`harness.write_result`)."""
    f = record["figures"]
    return "\n".join([
        f"# The local model's answers: {f['provider']} answerer, mode {f['mode']}", "",
        "| measure | value |", "|---|---|", *summary(f["rows"]), "",
    ])  # fmt: skip


def report(rows: list[dict]) -> None:
    """Print the Markdown summary of scored rows."""
    print("\n".join(summary(rows)))


def summary(rows: list[dict]) -> list[str]:
    """The Markdown summary rows of scored rows."""
    lines = []
    answerable = [r for r in rows if not r["abstain"]]
    must = [r for r in rows if r["abstain"]]
    refused = [r for r in rows if r["refused"]]
    true_refusals = sum(r["abstain"] for r in refused)
    precision = true_refusals / len(refused) if refused else float("nan")
    recall = true_refusals / len(must) if must else float("nan")
    asked = [r for r in rows if r["calls"]]
    right = sum(r["right"] for r in answerable)
    lines.append(f"| answerable right | {right}/{len(answerable)} |")
    lines.append(f"| must-refuse refused | {sum(r['right'] for r in must)}/{len(must)} |")
    lines.append(f"| abstention precision / recall | {precision:.2f} / {recall:.2f} |")
    if asked:
        med = statistics.median
        lines.append(
            f"| median prompt tokens processed | {med(r['prompt_tokens'] for r in asked):.0f} |"
        )
        lines.append(
            f"| median generated tokens | {med(r['generated_tokens'] for r in asked):.0f} |"
        )
        lines.append(f"| median model calls | {med(r['calls'] for r in asked):.0f} |")
        lines.append(
            f"| median model seconds (loaded machine) | {med(r['model_s'] for r in asked):.1f} |"
        )
        lines.append(
            f"| median unloaded estimate, s | {med(r['unloaded_estimate_s'] for r in asked):.1f} |"
        )

    return lines


if __name__ == "__main__":
    main()
