"""Dump the rerank top 20 of every question with the reader's relevance probabilities, to
choose the deep rerank's depth and weight on tuned-on sets only.

`python bench/experiments/deep_candidates.py NAME [NAME ...] [--root /work/corpora] [--out DIR]` writes
`DIR/NAME.json` (default DIR `bench/results/deep_candidates/`, ignored by git): per question,
its kind, language and each candidate's rerank score, reader probabilities and whether it is
one of the question's labelled passages. NAME is a corpus under ROOT (the manuals of
`bench/corpora/setup.py`), `bundled` or `larkfield`.

What it cannot do: it reads indexes already built (`bench/retrieval/bench_real_corpora.py` builds
`bundled` and `larkfield`, `bench/corpora/setup.py` the manuals); a held-out set must not be
dumped before its figures are final (this is a tuning tool).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*

from bench.retrieval.bench_real_corpora import LARKFIELD, ROOT, corpora
from tether.app import retriever_for
from tether.evaluation.questions import load_questions
from tether.evaluation.retrieval_eval import _plan, _Reachability
from tether.stores.sqlite import SqliteStore

DEPTH = 20


def dump(name: str, index: Path, questions: Path | list, audience: str | None) -> dict:
    store = SqliteStore(index)
    retriever = retriever_for(store)
    deep = retriever.deep
    assert deep is not None, "the reader cannot be loaded"
    qs = load_questions(questions) if isinstance(questions, Path) else questions
    reach = _Reachability(store)
    plan, _, _ = _plan(reach, qs, audience)
    out = []
    began = time.perf_counter()
    read_s: list[float] = []
    for q, filters, usable in plan:
        relevant = set().union(*(reach.where(r) for r in usable))
        hits = retriever.search(q.question, DEPTH, filters, method="rerank")
        t = time.perf_counter()
        probs = deep.read(q.question, hits)
        read_s.append(time.perf_counter() - t)
        out.append(
            {
                "id": q.id,
                "kind": q.kind,
                "language": q.language,
                "n_relevant": len(usable),
                "candidates": [
                    {
                        "rerank": float(h.signals.get("rerank", h.score)),
                        "score": float(h.score),
                        "probs": list(p),
                        "relevant": h.chunk.chunk_id in relevant,
                        "doc": h.chunk.doc_id,
                    }
                    for h, p in zip(hits, probs, strict=True)
                ],
            }
        )
    store.close()
    return {
        "name": name,
        "questions": out,
        "seconds": round(time.perf_counter() - began, 1),
        "read_median_s": sorted(read_s)[len(read_s) // 2] if read_s else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--root", type=Path, default=Path("/work/corpora"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/deep_candidates")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    _ = LARKFIELD
    for name, index, questions, audience, tuned in corpora(args.root, args.names):
        if not tuned:
            print(f"{name}: held out, not dumped")
            continue
        result = dump(name, index, questions, audience)
        (args.out / f"{name}.json").write_text(json.dumps(result), encoding="utf-8")
        print(
            f"{name}: {len(result['questions'])} questions, {result['seconds']} s,"
            f" read median {result['read_median_s'] * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
