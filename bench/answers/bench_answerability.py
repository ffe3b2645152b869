"""Answerability measured end to end (issue 24): every question of each set asked as `tether
ask` asks it, with the extractive answerer (default) or the local model in select mode, and
scored by its keys (`tether.evaluation.answer_eval`).

Sets, side by side:
- tuned on: the bundled set's training half (`answerability_training.split`), the library
  and transit training sets (`bench/data/answer_training/`), the test suite's 3- and 10-file
  collections (`tests/data/`);
- held out: the bundled set's other half, and the two held-out answer sets
  (`bench/data/answer_heldout/`, checked against their SHA256SUMS before anything runs).

Reported per set: answerable questions wrongly refused (and by whom), must-refuse questions
refused, answerable questions right by their keys, claims that are not statements (a heading,
a title or a question quoted), median seconds. `--no-answerability` measures the same
without the answerability judge (the gate alone), for the before/after.

    python bench/answers/bench_answerability.py [--provider extractive|local] [--no-answerability]
        [--sets demo-heldout,heldout-10] [--limit N] [--every N]
        [--out bench/results/answerability.json]

Writes the JSON given by --out (default `bench/results/answerability[-local][-off].json`: the
run's date, commit, machine and load, and its figures); `--markdown` rewrites
`bench/results/answerability.md` from the JSON files present (each section names its run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*

from bench.frozen import changed
from bench.harness import load_average, make_record, run_line, write_record
from bench.provenance import names_run
from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.config import settings_from_mapping
from tether.evaluation.answer_eval import run_answer_eval

try:
    from tether.evaluation.answerability_training import split
except ImportError:  # `--baseline` on a tether from before the judge: the same halves
    import zlib

    def split(question_id: str) -> str:
        return "train" if zlib.crc32(question_id.encode("utf-8")) % 2 == 0 else "heldout"


from tether.evaluation.questions import demo_collection, load_questions
from tether.text import is_statement
from tether.types import AskResult, Question

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data"
HELDOUT = DATA / "answer_heldout"
# Harbourview Marina (issue 44), frozen before the reader ranked
HELDOUT2 = DATA / "answer_heldout2"
RESULTS = ROOT / "bench" / "results"


def verify_heldout() -> None:
    """Stop unless every held-out file matches its recorded checksum."""
    for path in [*changed(HELDOUT), *changed(HELDOUT2)]:
        sys.exit(f"held-out file changed: {path} (its numbers would not be held out)")


def sets() -> dict[str, tuple[str, Path, list[Question]]]:
    """name → (tuned-on | held-out, collection, questions)."""
    demo = load_questions()
    out = {
        "demo-train": ("tuned-on", demo_collection(), [q for q in demo if split(q.id) == "train"]),
        "library": ("tuned-on", DATA / "verifier_heldout" / "collection",
                    load_questions(DATA / "answer_training" / "questions-library.jsonl")),
        "transit": ("tuned-on", DATA / "judge_heldout" / "collection",
                    load_questions(DATA / "answer_training" / "questions-transit.jsonl")),
        "small3": ("tuned-on", ROOT / "tests" / "data" / "small3" / "docs",
                   load_questions(ROOT / "tests" / "data" / "small3" / "questions.jsonl")),
        "small10": ("tuned-on", ROOT / "tests" / "data" / "small10" / "docs",
                    load_questions(ROOT / "tests" / "data" / "small10" / "questions.jsonl")),
        "demo-heldout": ("held-out", demo_collection(),
                         [q for q in demo if split(q.id) == "heldout"]),
        "heldout-10": ("held-out", HELDOUT / "collection-10",
                       load_questions(HELDOUT / "questions-10.jsonl")),
        "heldout-3": ("held-out", HELDOUT / "collection-3",
                      load_questions(HELDOUT / "questions-3.jsonl")),
        "harbourview": ("held-out", HELDOUT2 / "collection",
                        load_questions(HELDOUT2 / "questions.jsonl")),
    }  # fmt: skip
    return out


def index_name(name: str) -> str:
    return "demo" if name.startswith("demo") else name


def not_statements(result: AskResult) -> int:
    """Claims shown that are a heading, a title or a question."""
    if result.answer is None:
        return 0
    heads = [h for p in (result.context.passages if result.context else ())
             for h in (*p.chunk.heading_path, p.chunk.meta.title)]  # fmt: skip
    return sum(not is_statement(c.text, heads, fragments=False) for c in result.answer.claims)


def measure(name: str, args: argparse.Namespace) -> dict:
    kind, folder, questions = sets()[name]
    questions = questions[:: args.every]
    if args.limit:
        questions = questions[: args.limit]
    args.cache.mkdir(parents=True, exist_ok=True)
    given = {"TETHER_READER": "off"} if args.no_reader else {}
    ws = Workspace.open(
        args.cache / f"{index_name(name)}.sqlite", settings=settings_from_mapping(given)
    )
    ws.ingest(folder, executor="serial")
    if args.provider == "extractive":
        from tether.providers.extractive import ExtractiveProvider

        quoting = ExtractiveProvider()
        if args.no_reader_quotes:  # the reader ranks and judges; the quotes are chosen without it
            quoting.READER_WEIGHT, quoting.READER_FLOOR = 0.0, 2.0
        ws.use_provider(quoting)
    else:
        ws.use_provider(ws.make_provider(args.provider, None))
    extra = {"not_statements": 0}

    def ask(q: Question) -> AskResult:
        extra_options = {} if args.baseline else {"answerability": not args.no_answerability}
        options = AskOptions(as_of=q.as_of, audience=q.audience, **extra_options)
        result = ws.ask(q.question, options, audit=False)
        extra["not_statements"] += not_statements(result)
        if kind == "tuned-on":
            print(f"  {q.id} {result.status} {result.refused_by or ''}", file=sys.stderr)
        return result

    began = time.perf_counter()
    evaluated = run_answer_eval(questions, ask, provider=args.provider)
    ws.close()
    rows = evaluated.rows
    answerable = [r for r in rows if not r.abstain]
    refuse = [r for r in rows if r.abstain]
    wrongly = [r for r in answerable if r.refused_by is not None]
    by: dict[str, int] = {}
    for r in wrongly:
        by[str(r.refused_by)] = by.get(str(r.refused_by), 0) + 1
    return {
        "set": name,
        "kind": kind,
        "questions": len(rows),
        "answerable": len(answerable),
        "must_refuse": len(refuse),
        "wrongly_refused": len(wrongly),
        "wrongly_refused_by": by,
        "refused_of_must_refuse": sum(r.refused_by is not None for r in refuse),
        "refused_all": sum(r.refused_by is not None for r in rows),
        "right_of_answerable": sum(r.correct for r in answerable),
        "not_statements": extra["not_statements"],
        "median_s": round(statistics.median(r.seconds for r in rows), 3) if rows else 0.0,
        "errors": len(evaluated.errors),
        "seconds": round(time.perf_counter() - began, 1),
        # which questions went wrong: only for tuned-on sets (a held-out set is read in sums)
        "wrong_ids": sorted(r.id for r in rows if not r.correct) if kind == "tuned-on" else [],
    }


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b:.0%})" if b else "–"


def markdown() -> str:
    lines = ["# Answerability (issue 24)", "",
             "Produced by `python bench/answers/bench_answerability.py` (see its docstring); each row"
             " one question set asked end to end. Tuned-on sets trained the answerability"
             " judge (`scripts/train_answerability.py`); held-out sets were written before it"
             " and never tuned on.", ""]  # fmt: skip
    runs: list[str] = []  # the line naming each run that was recorded with one
    for path in sorted([*RESULTS.glob("answerability-*.json"), RESULTS / "answerability.json"]):
        if not path.is_file():
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        data = record.get("figures", record)
        run = [run_line(record), ""] if "bench" in record else []
        runs += run[:1]
        lines += [f"## {data['title']}", "", *run, f"Load: {data['load']}", "",
                  "| set | kind | answerable wrongly refused (by) | must-refuse refused |"
                  " abstention precision | answerable right by keys |"
                  " headings/questions as claims | median s |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for s in data["sets"]:
            by = ", ".join(f"{k} {v}" for k, v in sorted(s["wrongly_refused_by"].items()))
            lines.append(
                f"| {s['set']} | {s['kind']} | {pct(s['wrongly_refused'], s['answerable'])}"
                f"{f' ({by})' if by else ''} | {pct(s['refused_of_must_refuse'], s['must_refuse'])}"
                f" | {pct(s['refused_of_must_refuse'], s.get('refused_all', 0))}"
                f" | {pct(s['right_of_answerable'], s['answerable'])} | {s['not_statements']} |"
                f" {s['median_s']} |"
            )
        lines.append("")
    if runs:  # "Run DATE at ...": the latest date sorts last
        newest = max(runs)
        lines[1:1] = ["", f"The latest run: {newest[0].lower()}{newest[1:]}"]
    else:  # no run recorded one: keep the line the page names its run with
        page = RESULTS / "answerability.md"
        old = page.read_text(encoding="utf-8").split("\n")[:6] if page.is_file() else []
        lines[1:1] = ["", *[x for x in old if names_run(x)][:1]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="extractive", help="extractive or local")
    parser.add_argument(
        "--no-answerability",
        action="store_true",
        help="without the answerability judge (the gate alone)",
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="the tether on PYTHONPATH as it is (one from before the judge)",
    )
    parser.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="at most N questions a set")
    parser.add_argument(
        "--every",
        type=int,
        default=1,
        help="every N-th question of each set (a sample for slow providers)",
    )
    parser.add_argument("--cache", type=Path, default=ROOT / ".tether" / "answerability")
    parser.add_argument("--out", type=Path, help="the JSON to write")
    parser.add_argument(
        "--no-reader",
        action="store_true",
        help="TETHER_READER=off: rerank, no reader in answerability or quotes",
    )
    parser.add_argument(
        "--no-reader-quotes",
        action="store_true",
        help="the extractive answerer chooses its quotes without the reader",
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="only rewrite bench/results/answerability.md from the JSON files",
    )
    args = parser.parse_args()
    if args.markdown:
        (RESULTS / "answerability.md").write_text(markdown(), encoding="utf-8")
        return 0
    verify_heldout()
    load_before = load_average()
    names = [n for n in args.sets.split(",") if n] or list(sets())
    results = [measure(n, args) for n in names]
    suffix = (
        ("" if args.provider == "extractive" else f"-{args.provider}")
        + ("-baseline" if args.baseline else "-off" if args.no_answerability else "")
        + ("-noreader" if args.no_reader else "")
        + ("-noquotes" if args.no_reader_quotes else "")
    )
    out = args.out or RESULTS / f"answerability{suffix}.json"
    title = f"{args.provider} answerer, " + (
        "before this change (main before issue 24's judge)" if args.baseline
        else "gate only (answerability judge off)" if args.no_answerability
        else "gate + answerability judge"
    ) + (", reader off (TETHER_READER=off)" if args.no_reader else "") + (
        ", quotes chosen without the reader (--no-reader-quotes)" if args.no_reader_quotes else ""
    )  # fmt: skip
    load = (f"{len(names)} sets, 2-core machine shared with other jobs; every"
            f" {args.every} question(s), limit {args.limit or 'none'}")  # fmt: skip
    figures = {"title": title, "load": load, "sets": results}
    write_record(out, make_record(out.stem, figures, load_before))
    print(markdown(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
