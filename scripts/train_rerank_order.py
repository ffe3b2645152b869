"""Rebuild the learned rerank order (`src/tether/retrieval/rerank_model.json`) from tuned-on
collections: `python scripts/train_rerank_order.py` (`make rerank-model`).

Reads the real manuals set up by `bench/corpora/setup.py` (under `--corpora`, default
TETHER_CORPORA or /work/corpora: Python, PostgreSQL, SQLite and Git with their questions,
flex for pseudo-queries only; Larkfield when `bench/retrieval/bench_real_corpora.py` has staged it
there), and the bundled demo (staged there by the same bench, else ingested into `--cache`,
kept between runs). The held-out manuals
(gettext, MkDocs) are never opened. Then `tether.evaluation.rerank_training.fit`; the model's
`trained` record says on what, how it compared out of collection, and in how many seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tether.app import Workspace, retriever_for
from tether.config import settings_from_mapping
from tether.evaluation.questions import demo_collection, load_questions
from tether.evaluation.rerank_training import (
    Query,
    candidate_queries,
    fit,
    pseudo_queries,
)
from tether.retrieval.rerank import ORDER_MODEL_PATH
from tether.stores.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"
MANUALS = ("python", "postgresql", "sqlite", "git", "flex")
HELD_OUT = ("gettext", "mkdocs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ORDER_MODEL_PATH)
    parser.add_argument(
        "--corpora", type=Path, default=Path(os.environ.get("TETHER_CORPORA", "/work/corpora"))
    )
    parser.add_argument("--cache", type=Path, default=ROOT / ".tether" / "rerank-order")
    parser.add_argument("--no-pseudo", action="store_true", help="real questions only")
    args = parser.parse_args()
    began = time.perf_counter()
    queries: list[Query] = []
    missed: dict[str, int] = {}

    def read(name: str, store: SqliteStore, questions: list, audience: Any = None) -> None:
        retriever = retriever_for(store, rerank_order=None)
        if not args.no_pseudo:
            questions = [*questions, *pseudo_queries(store, name)]
        print(f"{name}: {len(questions)} queries …", file=sys.stderr)
        found, none = candidate_queries(name, retriever, questions, audience)
        queries.extend(found)
        missed[name] = none

    for name in MANUALS:
        index = args.corpora / name / ".tether" / "index.sqlite"
        if not index.is_file():
            print(f"{name}: no index at {index} (bench/corpora/setup.py): skipped", file=sys.stderr)
            continue
        path = ROOT / "bench" / "corpora" / name / "questions.jsonl"
        store = SqliteStore(index)
        try:
            read(name, store, load_questions(path) if path.is_file() else [])
        finally:
            store.close()
    larkfield = args.corpora / "larkfield" / ".tether" / "index.sqlite"
    if larkfield.is_file() and LARKFIELD.is_dir():
        store = SqliteStore(larkfield)
        try:
            questions = load_questions(LARKFIELD / "questions" / "questions.jsonl")
            read("larkfield", store, questions, "staff")
        finally:
            store.close()
    bundled = args.corpora / "bundled" / ".tether" / "index.sqlite"  # bench_real_corpora's
    args.cache.mkdir(parents=True, exist_ok=True)
    index = bundled if bundled.is_file() else args.cache / "demo.sqlite"
    ws = Workspace(settings_from_mapping({}), index=index)
    try:
        ws.ingest(demo_collection(), executor="serial")
        read("demo", ws.store, load_questions())
    finally:
        ws.close()
    assert not any(q.set in HELD_OUT for q in queries)
    model = fit(queries, missed, time.perf_counter() - began)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    print(json.dumps(model.trained["pooled_mrr"], indent=1), file=sys.stderr)
    print(f"wrote {args.out} in {model.trained['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
