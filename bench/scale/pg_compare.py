"""The PostgreSQL store against the SQLite store: retrieval quality of every method on the
bundled questions and on Larkfield, and how often the two stores return the same top 5.

Both stores ingest the same folder with the same embedder (each passage is embedded once;
the second store reuses the vectors), then `run_retrieval_eval` runs every method (bm25,
dense, hybrid, rerank) at k = 5 on each. The PostgreSQL store computes BM25 in SQL from its
own postings (tokenised by FTS5's tokenizer); the goal is recall@5 within 0.02 of SQLite.

    TETHER_TEST_PG_URL=postgresql://postgres@127.0.0.1:55432/postgres \\
        python bench/scale/pg_compare.py          # writes bench/results/postgres.md and .json

What it cannot do: it measures quality and agreement, not speed (bench/scale/pg_scale.py does).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.app import retriever_for, shared_models
from tether.evaluation.questions import demo_collection, larkfield_collection, load_questions
from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.ingest.sync import sync
from tether.protocols import Store
from tether.retrieval.retriever import METHODS
from tether.stores import open_store

ROOT = Path(__file__).resolve().parents[2]
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"


class Remembering:
    """An embedder that embeds each passage once (the second store reuses the vectors)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name, self.version, self.dim = inner.name, inner.version, inner.dim
        self.memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed_passages(self, texts):
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            self.memo.update(zip(todo, self.inner.embed_passages(todo), strict=True))
        return np.stack([self.memo[t] for t in texts]) if texts else self.inner.embed_passages([])

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


def compare(name: str, folder: Path, questions, audience: str | None, pg: str, tmp: Path, emb):
    stores: dict[str, Store] = {
        "sqlite": open_store(tmp / f"{name}.sqlite", must_exist=False),
        "postgres": open_store(
            f"{pg}{'&' if '?' in pg else '?'}collection=bench-{name}-{uuid.uuid4().hex[:8]}",
            must_exist=False,
        ),
    }
    results = {}
    for label, store in stores.items():
        began = time.perf_counter()
        report = sync(store, folder, embedder=emb, sentences=True)
        assert report.committed and not report.problems, report.problems
        ingest_s = time.perf_counter() - began
        retriever = retriever_for(store, embedder=emb.inner)
        began = time.perf_counter()
        result = run_retrieval_eval(store, retriever, questions, METHODS, 5, audience=audience)
        results[label] = (result, ingest_s, time.perf_counter() - began)
        print(f"{name} {label}: ingest {ingest_s:.1f} s", file=sys.stderr)
    lines = [
        f"### {name} ({results['sqlite'][0].notes[0]})",
        "",
        "| method | recall@5 SQLite | recall@5 PostgreSQL | Δ | MRR SQLite | MRR PostgreSQL |"
        " same top 5 |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for m in METHODS:
        a = results["sqlite"][0].aggregates[m]["overall"]
        b = results["postgres"][0].aggregates[m]["overall"]
        tops_a = {r.id: r.top for r in results["sqlite"][0].rows if r.method == m}
        tops_b = {r.id: r.top for r in results["postgres"][0].rows if r.method == m}
        same = sum(tops_a[q] == tops_b.get(q) for q in tops_a)
        delta = b["recall"] - a["recall"]
        worst = max(worst, abs(delta))
        lines.append(
            f"| {m} | {a['recall']:.3f} | {b['recall']:.3f} | {delta:+.3f} | {a['mrr']:.3f} |"
            f" {b['mrr']:.3f} | {same}/{len(tops_a)} |"
        )
    lines += [
        "",
        f"Ingest: SQLite {results['sqlite'][1]:.1f} s, PostgreSQL {results['postgres'][1]:.1f} s"
        f" (vectors computed once, during the first); evaluation of the four methods: SQLite"
        f" {results['sqlite'][2]:.1f} s, PostgreSQL {results['postgres'][2]:.1f} s."
        f" Largest recall@5 difference: {worst:.3f} (goal ≤ 0.02).",
        "",
    ]
    for store in stores.values():
        store.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("TETHER_TEST_PG_URL"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "postgres.md")
    args = parser.parse_args()
    if not args.pg:
        sys.exit("error: pass --pg URL or set TETHER_TEST_PG_URL")
    load_before = load_average()
    emb = Remembering(shared_models().embedder())
    report = [
        "# PostgreSQL store against SQLite store (bench/scale/pg_compare.py)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python"
        f" {platform.python_version()}, PostgreSQL 15 + pgvector 0.8.0 on loopback; other"
        f" engineers' jobs were running (2 shared cores). Embedder {emb.name}. {time.strftime('%Y-%m-%d')}.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        report += compare("bundled", demo_collection(), load_questions(), None, args.pg, tmp, emb)
        if LARKFIELD.is_dir():
            folder = larkfield_collection(LARKFIELD, tmp / "larkfield")
            lq = load_questions(LARKFIELD / "questions" / "questions.jsonl")
            report += compare("Larkfield", folder, lq, "staff", args.pg, tmp, emb)
    write_page_result(args.out, report, load_before=load_before)
    print("\n".join(report))


if __name__ == "__main__":
    main()
