"""Answers scored against their keys (what `tether eval --answers` runs), on demand:
`python bench/answers/bench_answers.py`.

Ingests the bundled demo collection with the default embedder into a temporary index and
runs `run_answer_eval` on the whole bundled set with (1) the extractive answerer (default
options: rerank, k 5) and (2) the bundled recordings of the local model (replayed, with the
options they were recorded with: hybrid, k 4, budget 1000); then stages the shared Larkfield
benchmark and runs the extractive answerer on its scorable part (the questions whose
relevant passages the partial corpus holds, and the abstentions), asked as staff, as the
retrieval benchmark does. Writes bench/results/answers.md and its JSON
(`harness.write_page_result`: the run's date, commit, machine and load, the tables and lines).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.evaluation.answer_eval import (
    RECORDED_OPTIONS,
    AnswerEvalResult,
    run_answer_eval,
    with_recordings,
)
from tether.evaluation.questions import demo_collection, larkfield_collection, load_questions
from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.providers.extractive import ExtractiveProvider

ROOT = Path(__file__).resolve().parents[2]
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.1%}"


def _run(ws: Workspace, qs: list, label: str, options: dict, audience: str | None = None):
    def ask(q):
        o = AskOptions(as_of=q.as_of, audience=audience or q.audience, language=q.language,
                       **options)  # fmt: skip
        return ws.ask(q.question, o, audit=False)

    began = time.perf_counter()
    result = run_answer_eval(qs, ask, provider=label, options=options)
    print(f"{label}: {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return result


def _table(title: str, result: AnswerEvalResult) -> list[str]:
    s = result.summary
    lines = [
        f"### {title}",
        "",
        f"Answers by {result.provider}; options {result.options}; {len(result.rows)} scored,"
        f" {len(result.errors)} not scored (provider error, e.g. no recording).",
        "",
        "| group | n | accuracy | shown | abst. precision | abst. recall | flagged claims |"
        " unsupported claims | refused by | median s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = [("overall", s["overall"])] + [(f"kind {k}", v) for k, v in s["by_kind"].items()]
    groups += [(f"lang {k}", v) for k, v in s["by_language"].items()]
    for name, g in groups:
        lines.append(
            f"| {name} | {g['n']} | {_pct(g['accuracy'])} ({g['correct']}/{g['answerable']}) |"
            f" {_pct(g['accuracy_shown'])} | {_pct(g['abstention_precision'])} |"
            f" {_pct(g['abstention_recall'])} | {_pct(g['flagged_claim_rate'])} |"
            f" {_pct(g['unsupported_claim_rate'])} | {g['refused_by'] or '—'} |"
            f" {g['median_s']:.2f} |"
        )
    return [*lines, ""]


def _recorded_latency() -> float:
    """The median model time of the bundled recordings, as recorded."""
    import json
    import statistics

    from tether.evaluation.questions import demo_recordings

    lines = demo_recordings().read_text(encoding="utf-8").splitlines()
    return statistics.median(json.loads(line)["completion"]["latency_s"] for line in lines if line)


def main() -> None:
    load_before = load_average()
    tmp = Path(tempfile.mkdtemp(prefix="bench-answers-"))
    ws = Workspace.open(tmp / "demo.sqlite", provider=ExtractiveProvider(), create=True)
    ws.ingest(demo_collection())
    qs = load_questions()
    extractive = _run(ws, qs, "extractive (extractive-v1)", {})
    recorded_provider = ws.make_provider("recorded")
    ws.use_provider(recorded_provider)
    asked = with_recordings(qs, recorded_provider.recorded_questions())  # type: ignore[attr-defined]
    label = f"replay of recordings: {recorded_provider.recorded()}"  # type: ignore[attr-defined]
    recorded = _run(ws, asked, f"{label} ({len(asked)} of {len(qs)} questions recorded)",
                    RECORDED_OPTIONS)  # fmt: skip
    report = [
        "# Answers scored against their keys (`tether eval --answers`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} with `python bench/answers/bench_answers.py` on"
        f" {os.cpu_count()} CPU cores shared with other jobs (seven other engineers' builds and"
        " tests were running): the seconds are indicative only. Accuracy: answerable questions"
        " whose answer matches every key and no must_not; 'shown': the same over the claims the"
        " reader is shown (today all of them). Abstention precision: refusals that were due;"
        " recall: due refusals made (by the gate, the model or --strict).",
        "",
        "## The bundled question set (181 questions, demo collection)",
        "",
        *_table("Extractive answerer", extractive),
        *_table("Local model, recorded answers (replayed; the questions recorded)", recorded),
        f"A replay's seconds are retrieval, gate and verifier only; the model's own time when"
        f" it was recorded: median {_recorded_latency():.0f} s per answer (2 cores).",
        "",
    ]
    if (LARKFIELD / "questions" / "questions.jsonl").is_file():
        folder = larkfield_collection(LARKFIELD, tmp / "larkfield")
        lark = Workspace.open(tmp / "larkfield.sqlite", provider=ExtractiveProvider(), create=True)
        lark.ingest(folder)
        lq = load_questions(LARKFIELD / "questions" / "questions.jsonl")
        retrieval = run_retrieval_eval(lark.store, lark.retriever(), lq, ["bm25"], 5,
                                       audience="staff")  # fmt: skip
        absent = {i for i, why in retrieval.skipped if "not in the index" in why}
        scorable = [q for q in lq if q.id not in absent]
        held = _run(lark, scorable, "extractive (extractive-v1)", {}, audience="staff")
        report += [
            f"## Larkfield (held out; its scorable part: {len(scorable)} of {len(lq)} questions,"
            " asked as staff)",
            "",
            *_table("Extractive answerer", held),
        ]
    out = ROOT / "bench" / "results" / "answers.md"
    write_page_result(out, [*report, ""], load_before=load_before)
    print(out)


if __name__ == "__main__":
    main()
