"""Rebuild the answerability judge's model (`src/tether/answering/answerability_model.json`)
from the tuned-on question sets: `python scripts/train_answerability.py` (`make answerability`).

Each training collection (`tether.evaluation.answerability_training.training_sets`) is
ingested with embeddings into `--cache` (kept between runs: an unchanged collection is not
embedded again), its questions read, and the logistic regression fitted
(`answerability_training.fit`); the model's `trained` record says on what and how well.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tether.answering.answerable import MODEL_PATH
from tether.app import Workspace
from tether.config import settings_from_mapping
from tether.evaluation.answerability_training import Row, fit, read_rows, training_sets

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=MODEL_PATH, help="where to write the model")
    parser.add_argument("--cache", type=Path, default=ROOT / ".tether" / "answerability",
                        help="where the training collections' indexes are kept between runs")
    parser.add_argument("--rows", type=Path, help="also write every question's features (JSONL)")
    args = parser.parse_args()
    began = time.perf_counter()
    rows: list[Row] = []
    args.cache.mkdir(parents=True, exist_ok=True)
    for name, folder, questions in training_sets():
        print(f"reading {len(questions)} questions on {name} …", file=sys.stderr)
        ws = Workspace(settings_from_mapping({}), index=args.cache / f"{name}.sqlite")
        try:
            ws.ingest(folder, executor="serial")
            rows += read_rows(name, ws.store, ws.retriever(), questions)
        finally:
            ws.close()
    model = fit(rows, time.perf_counter() - began)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    if args.rows:
        with args.rows.open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r.__dict__) + "\n")
    print(json.dumps(model.trained, indent=1), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
