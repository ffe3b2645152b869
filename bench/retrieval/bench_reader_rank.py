"""The deep rerank measured, reader off and on: every retrieval method on every question set,
tuned-on and held-out side by side, and what the reader costs.

`python bench/retrieval/bench_reader_rank.py [--root /work/corpora] [--only NAME ...]` (or `make
bench-reader-rank`) evaluates bm25, dense, hybrid, rerank (the reader off) and deep (the
reader on: the rerank list's top 20 reread) at k = 5 on the bundled set, Larkfield and the
manuals of `bench/corpora` (`bench/corpora/setup.py` first), with the defaults of this
checkout, and writes `bench/results/reader_rank.json` (the run's date, commit, machine and
load, and the figures) and `.md` rendered from it: hit@5, MRR, recall@5 per
method, the paraphrase questions' hit@5, question-by-question counts of deep against
rerank, and search latency p50/p95 per method (the deep rerank's own cost is deep's minus
rerank's); and, from `bench/answers/bench_answerability.py`'s runs with the reader off and on, the
answerability and extractive-answer figures side by side. A held-out set (Apache) is reported
as held out only while its checksums match.

What it cannot do: timings on a shared machine are pessimistic (the load is recorded); it
measures the indexes as they are (the parser and chunker of the checkout that built them).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*

from bench.harness import read_figures, write_result
from bench.retrieval.bench_real_corpora import ROOT, corpora
from tether.app import retriever_for
from tether.evaluation.questions import load_questions
from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.retrieval.retriever import METHODS
from tether.stores.sqlite import SqliteStore

OUT = ROOT / "bench" / "results" / "reader_rank"
NOTES = "<!-- notes: kept across runs -->"


def evaluate(index: Path, questions: Path, audience: str | None) -> dict[str, Any]:
    store = SqliteStore(index)
    retriever = retriever_for(store)
    result = run_retrieval_eval(store, retriever, load_questions(questions), METHODS, 5,
                                audience=audience)  # fmt: skip
    agg = result.aggregates
    ranks = {(r.id, r.method): min((x for x in r.ranks if x is not None), default=None)
             for r in result.rows}  # fmt: skip
    ids = sorted({r.id for r in result.rows})

    def top5(qid: str, m: str) -> bool:
        x = ranks.get((qid, m))
        return x is not None and x <= 5

    out = {
        "scored": len(ids),
        "questions": result.n_questions,
        "methods": {
            m: {
                "hit": agg[m]["overall"]["hit"],
                "mrr": agg[m]["overall"]["mrr"],
                "recall": agg[m]["overall"]["recall"],
                "paraphrase_hit": agg[m]["by_kind"].get("paraphrase", {}).get("hit"),
                "n_paraphrase": agg[m]["by_kind"].get("paraphrase", {}).get("n"),
                "p50_ms": result.timings[m]["median_ms"],
                "p95_ms": result.timings[m]["p95_ms"],
            }
            for m in METHODS
        },
        "deep_wins": sum(top5(q, "deep") and not top5(q, "rerank") for q in ids),
        "deep_losses": sum(top5(q, "rerank") and not top5(q, "deep") for q in ids),
    }
    store.close()
    return out


def order_ok(m: dict[str, Any], metric: str) -> bool:
    return (
        m["deep"][metric]
        >= m["rerank"][metric]
        >= m["hybrid"][metric]
        >= max(m["bm25"][metric], m["dense"][metric])
    )


def report(results: dict[str, Any], load: float, day: str = "") -> list[str]:
    lines = [
        "# The reader ranks: deep rerank, reader off (rerank) and on (deep)",
        "",
        f"Run on {day or date.today()}, {platform.system().lower()}, {os.cpu_count()} cores shared"
        f" (load average {load:.1f} at the start: timings are pessimistic). Written by"
        " `bench/retrieval/bench_reader_rank.py` (`make bench-reader-rank`). Tuned on: every set but"
        " Apache (the reader's relevance head was fine-tuned on the manuals' and the bundled"
        " questions, `training/reader/mine.py`; the deep rerank's depth and weight were chosen"
        " on their held-back fifth). Held out: Apache (questions frozen by checksum before any"
        " search).",
        "",
        "| set | role | n | method | hit@5 | MRR | recall@5 | paraphrase hit@5 | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, res in results.items():
        role = "tuned on" if res["tuned"] else "**held out**"
        for m, v in res["methods"].items():
            para = (
                ""
                if v["paraphrase_hit"] is None
                else f"{v['paraphrase_hit']:.3f} ({v['n_paraphrase']})"
            )
            lines.append(
                f"| {name} | {role} | {res['scored']} | {m} | {v['hit']:.3f} | {v['mrr']:.3f} |"
                f" {v['recall']:.3f} | {para} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} |"
            )
    lines += ["", "Goals (deep ≥ rerank ≥ hybrid ≥ max(bm25, dense) on hit@5 and MRR; question by"
              " question, deep's top 5 against rerank's):", ""]  # fmt: skip
    for name, res in results.items():
        m = res["methods"]
        best = max(v["hit"] for v in m.values())
        paras = [v["paraphrase_hit"] for v in m.values() if v["paraphrase_hit"] is not None]
        lines.append(
            f"- {name}: order on hit@5 {'yes' if order_ok(m, 'hit') else 'NO'}, on MRR"
            f" {'yes' if order_ok(m, 'mrr') else 'NO'}; best hit@5 {best:.3f}"
            + (f"; best paraphrase hit@5 {max(paras):.3f}" if paras else "")
            + f"; deep finds {res['deep_wins']} that rerank misses, rerank {res['deep_losses']}"
            f" that deep misses; deep costs {m['deep']['p50_ms'] - m['rerank']['p50_ms']:.0f} ms"
            " more at the median"
        )
    return lines


def answer_runs() -> dict[str, dict[str, Any]]:
    """Answerability and extractive answers, reader off and on, from
    `bench/answers/bench_answerability.py`'s JSON (`--no-reader` and the default run)."""
    results = ROOT / "bench" / "results"
    runs = {}
    for label, name in (("off", "answerability-noreader.json"), ("on", "answerability.json")):
        path = results / name
        if path.is_file():
            runs[label] = {s["set"]: s for s in read_figures(path)["sets"]}
    return runs


def answers_table(runs: dict[str, dict[str, Any]]) -> list[str]:
    """The answers' table, reader off and on (`answer_runs()`); none without both runs."""
    if len(runs) < 2:
        return []

    def pct(a: int, b: int) -> str:
        return f"{a}/{b} ({a / b:.0%})" if b else "–"

    lines = [
        "## Answers: answerability and the extractive answerer, reader off and on",
        "",
        "From `bench/answers/bench_answerability.py --no-reader` (off: rerank, the answerability judge"
        " without the reader's features, quotes chosen by words and cosines) and"
        " `bench/answers/bench_answerability.py` (on: deep rerank, the judge reading P(answers), quotes"
        " scored by the reader too). Goals on held-out sets: answerable wrongly refused ≤ 5%,"
        " must-refuse refused ≥ 80%, extractive right ≥ 80% of answerable.",
        "",
        "| set | role | reader | answerable wrongly refused | must-refuse refused | answerable right | median s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, off in runs["off"].items():
        on = runs["on"].get(name)
        for label, s in (("off", off), ("on", on)):
            if s is None:
                continue
            lines.append(
                f"| {name} | {s['kind']} | {label} | {pct(s['wrongly_refused'], s['answerable'])}"
                f" | {pct(s['refused_of_must_refuse'], s['must_refuse'])}"
                f" | {pct(s['right_of_answerable'], s['answerable'])} | {s['median_s']} |"
            )
    return ["", *lines]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--root", type=Path, default=Path(os.environ.get("TETHER_CORPORA", "/work/corpora"))
    )
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    results: dict[str, Any] = {}
    for name, index, questions, audience, tuned in corpora(args.root, args.only):
        res = evaluate(index, questions, audience)
        res["tuned"] = tuned
        results[name] = res
        d, r = res["methods"]["deep"], res["methods"]["rerank"]
        print(f"{name}: rerank {r['hit']:.3f}/{r['mrr']:.3f}, deep {d['hit']:.3f}/{d['mrr']:.3f}",
              flush=True)  # fmt: skip
    md = OUT.with_suffix(".md")
    old = md.read_text(encoding="utf-8") if md.is_file() else ""
    notes = old[old.index(NOTES) :] if NOTES in old else NOTES + "\n"
    figures = {"load": load, "results": results, "answers": answer_runs(), "notes": notes}
    write_result(OUT.name, figures, render, load_before=load, folder=OUT.parent)
    print(f"wrote {md}")
    _ = statistics


def render(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.write_result`)."""
    f = record["figures"]
    lines = report(f["results"], f["load"], str(record["date"])[:10]) + answers_table(f["answers"])
    return "\n".join(lines) + "\n\n" + f["notes"]


if __name__ == "__main__":
    main()
