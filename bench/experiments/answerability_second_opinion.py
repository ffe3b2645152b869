"""How the local model's second opinion on answerability was chosen (issue 24): its P(yes) to
"does one of these passages give the answer to this exact question?" (`ModelAnswerability`,
reading the judge's closest sentences), against the answerability judge's own out-of-fold
probability, on tuned-on questions only (every must-refuse question of the training sets and a
third of the answerable ones, `zlib.crc32(id) % 3 == 0`).

    python bench/experiments/answerability_second_opinion.py [--ask] [--cache DIR]

`--ask` asks the local model (10-20 s a question on 2 loaded cores) and appends to
`bench/results/answerability_second_opinion.jsonl`; without it the recorded answers are read.
Writes `bench/results/answerability_second_opinion.md`: AUCs and, for the mix the judge uses
(`SECOND_WEIGHT` x P(yes) + the rest x its probability), the shares refused at each threshold.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from tether.answering.answerable import SECOND_WEIGHT, ModelAnswerability, read_question
from tether.app import Workspace
from tether.config import settings_from_mapping
from tether.evaluation.answerability_training import (
    Row,
    out_of_fold,
    read_rows,
    training_sets,
)
from tether.types import Filters

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "bench" / "results" / "answerability_second_opinion.jsonl"


def picked(questions: list) -> list:
    return [q for q in questions if q.abstain] + [
        q for q in questions if not q.abstain and zlib.crc32(q.id.encode()) % 3 == 0
    ]


def ask(cache: Path) -> None:
    done = {json.loads(x)["id"] for x in RECORDED.open()} if RECORDED.exists() else set()
    judge = None
    with RECORDED.open("a", encoding="utf-8") as out:
        for name, folder, questions in training_sets():
            ws = Workspace.open(cache / f"{name}.sqlite", settings=settings_from_mapping({}))
            ws.ingest(folder, executor="serial")
            judge = judge or ModelAnswerability(ws.make_provider("local", None))
            retriever = ws.retriever()
            for q in picked(questions):
                if q.id in done:
                    continue
                filters = Filters(as_of=q.as_of, audience=q.audience)
                hits = retriever.search(q.question, 5, filters, method="rerank")
                vector = retriever.query_vector(q.question)
                reading = read_question(q.question, hits, ws.store, filters, vector)
                began = time.perf_counter()
                p = judge.score(q.question, reading.evidence)
                row = {"set": name, "id": q.id, "answerable": not q.abstain, "p": p,
                       "s": round(time.perf_counter() - began, 2)}  # fmt: skip
                out.write(json.dumps(row) + "\n")
                out.flush()
            ws.close()


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    return float(np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ask", action="store_true", help="ask the local model (slow)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".tether" / "answerability")
    args = parser.parse_args()
    if args.ask:
        ask(args.cache)
    rows: list[Row] = []
    for name, folder, questions in training_sets():
        ws = Workspace.open(args.cache / f"{name}.sqlite", settings=settings_from_mapping({}))
        ws.ingest(folder, executor="serial")
        rows += read_rows(name, ws.store, ws.retriever(), questions)
        ws.close()
    judge = {r.id: float(p) for r, p in zip(rows, out_of_fold(rows), strict=True)}
    said = [json.loads(x) for x in RECORDED.open()]
    said = [r for r in said if r["p"] is not None and r["id"] in judge]
    y = np.array([r["answerable"] for r in said])
    pl = np.array([r["p"] for r in said])
    pf = np.array([judge[r["id"]] for r in said])
    mix = SECOND_WEIGHT * pl + (1 - SECOND_WEIGHT) * pf
    lines = ["# The answerability judge's second opinion (tuned-on questions)", "",
             f"{len(said)} questions ({int(y.sum())} answerable); seconds a question (median,"
             f" 2 loaded cores): {np.median([r['s'] for r in said]):.1f}", "",
             "| signal | AUC |", "|---|---|",
             f"| the judge (out of fold) | {auc(pf[y], pf[~y]):.3f} |",
             f"| the local model's P(yes) | {auc(pl[y], pl[~y]):.3f} |",
             f"| {SECOND_WEIGHT} x P(yes) + {1 - SECOND_WEIGHT:.1f} x judge | {auc(mix[y], mix[~y]):.3f} |",
             "", "| threshold on the mix | answerable refused | must-refuse refused |",
             "|---|---|---|"]  # fmt: skip
    for t in np.arange(0.5, 0.725, 0.025):
        lines.append(f"| {t:.3f} | {np.mean(mix[y] < t):.0%} | {np.mean(mix[~y] < t):.0%} |")
    text = "\n".join(lines) + "\n"
    (ROOT / "bench" / "results" / "answerability_second_opinion.md").write_text(text, "utf-8")
    print(text, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
