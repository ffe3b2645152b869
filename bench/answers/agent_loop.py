"""The agent loop (`ask --agent`) against single-shot `ask`, with the local model, on the
bundled computed and cross-document questions (run on demand: `python bench/answers/agent_loop.py
[--limit N] [--ids Q158,Q164]`).

For each question: single-shot and agent answers, correct when every answer key (regex,
case-insensitive) matches the answer or a claim and no `must_not` does; the agent's steps,
the caps it reached, model tokens and seconds. The verifier is off for both (its judge is
the local model too: one more call per claim, the same for both sides); the answer and the
citations are still those the model gave. Every completion is recorded (replay format) to
bench/results/agent_loop.recordings.jsonl, so a run can be replayed. Writes
bench/results/agent_loop.json (the run's date, commit, machine and load, and the rows) and
agent_loop.md rendered from it.

What it cannot do: the local model is slow (30-100 s a call on 2 shared cores), so the
default is a subset; the machine's load is written with the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_result
from tether.answering.agent import AgentCaps
from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.evaluation.questions import demo_collection, load_questions
from tether.providers.local import LocalProvider
from tether.providers.replay import ReplayProvider
from tether.types import AskResult, Question

OUT = Path(__file__).parents[1] / "results"
DEFAULT_IDS = "Q158,Q164,Q166,Q154,Q021,Q042"  # computed (4), cross-document multi-part (2)


def correct(q: Question, r: AskResult) -> bool:
    """Every key found, no must_not, in the answer and its claims."""
    if r.answer is None or not r.answer.answerable:
        return False
    text = " ".join([r.answer.answer, *(c.text for c in r.answer.claims)])
    keys_ok = all(re.search(k, text, re.I) for k in q.keys)
    return keys_ok and not any(re.search(m, text, re.I) for m in q.must_not)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ids", default=DEFAULT_IDS)
    parser.add_argument("--index", default=".tether/demo.sqlite")
    args = parser.parse_args()
    load_before = load_average()
    wanted = args.ids.split(",")
    questions = [q for q in load_questions() if q.id in wanted]
    ws = Workspace.open(Path(args.index), create=True)
    if not Path(args.index).exists():
        ws.ingest(demo_collection())
    local = LocalProvider()
    OUT.mkdir(exist_ok=True)
    recorder = ReplayProvider(OUT / "agent_loop.recordings.jsonl", mode="auto", inner=local)
    ws.use_provider(recorder)
    rows = []
    for q in questions:
        opts = AskOptions(as_of=q.as_of, audience=q.audience, language=q.language, verify=False)
        t = time.perf_counter()
        single = ws.ask(q.question, opts)
        single_s = time.perf_counter() - t
        t = time.perf_counter()
        agent = ws.ask_agent(q.question, opts, AgentCaps(steps=6, tokens=16_000, wall_s=900))
        agent_s = time.perf_counter() - t
        trace = agent.agent
        assert trace is not None
        row = {
            "id": q.id, "kind": q.kind, "single_ok": correct(q, single), "single_s": single_s,
            "single_tokens": (single.completion.input_tokens + single.completion.output_tokens)
            if single.completion else 0,
            "agent_ok": correct(q, agent), "agent_s": agent_s, "steps": len(trace.steps),
            "actions": [s.action for s in trace.steps], "caps_reached": list(trace.caps_reached),
            "agent_tokens": trace.tokens, "read": list(trace.read),
            "single_answer": single.answer.answer if single.answer else str(single.problem),
            "agent_answer": agent.answer.answer if agent.answer else str(agent.problem),
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    write(rows, load_before)


def write(rows: list[dict], load_before: float) -> None:
    """bench/results/agent_loop.json (the run's date, commit, machine, load and rows) and
    agent_loop.md rendered from it."""
    write_result("agent_loop", {"rows": rows}, render, load_before=load_before, folder=OUT)


def render(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.write_result`)."""
    rows = record["figures"]["rows"]
    n = len(rows)
    med = statistics.median
    lines = [
        "# Agent loop vs single-shot (local model)",
        "",
        f"Run {record['date']} on {record['machine']['cpus']} cores; load average"
        f" at the end {record['load']['after']:.1f} (other engineers' jobs were running: latencies are"
        " inflated, compare the two columns with each other, not with other runs). Model:"
        " the local Qwen2.5-Coder 1.5B (q4_k_m); verifier off for both; caps: 6 steps,"
        " 16,000 tokens, 900 s. A SUBSET of the bundled set (the local model is slow): "
        + ", ".join(r["id"] for r in rows)
        + ".",
        "",
        "| | single-shot | agent |",
        "|---|---|---|",
        f"| correct (answer keys) | {sum(r['single_ok'] for r in rows)}/{n}"
        f" | {sum(r['agent_ok'] for r in rows)}/{n} |",
        f"| median seconds per question | {med(r['single_s'] for r in rows):.0f}"
        f" | {med(r['agent_s'] for r in rows):.0f} |",
        f"| median model tokens | {med(r['single_tokens'] for r in rows):.0f}"
        f" | {med(r['agent_tokens'] for r in rows):.0f} |",
        f"| median steps | 1 | {med(r['steps'] for r in rows):.0f} |",
        "",
        "| id | kind | single ok | agent ok | steps (actions) | caps reached | single s | agent s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['id']} | {r['kind']} | {r['single_ok']} | {r['agent_ok']} | {r['steps']}"
            f" ({' '.join(r['actions'])}) | {', '.join(r['caps_reached']) or '-'}"
            f" | {r['single_s']:.0f} | {r['agent_s']:.0f} |"
        )
    lines += ["", "Answers:", ""]
    for r in rows:
        lines.append(f"- {r['id']} single: {r['single_answer']!r}; agent: {r['agent_answer']!r}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
