"""The hand-written retrieval metrics (`tether.evaluation.metrics.ranking_metrics`) against
a reference implementation: ir-measures (trec_eval through pytrec_eval) on 300 random
rankings. Where each chunk matches at most one passage, and no two chunks one passage, the
two must agree to 1e-9; the hand-written code stays because it also scores chunks that
match several passages (or one passage split over two chunks), which trec_eval's one
document = one judgement cannot express."""

from __future__ import annotations

import random

import pytest

from tether.evaluation.metrics import ranking_metrics

ir_measures = pytest.importorskip("ir_measures")


def _random_case(rng: random.Random) -> tuple[list[set[int]], int, int]:
    n_relevant = rng.randint(1, 6)
    depth = rng.randint(0, 15)
    found = rng.sample(range(n_relevant), rng.randint(0, n_relevant))
    covers: list[set[int]] = [set() for _ in range(depth)]
    for passage in found:
        if depth:
            slot = rng.randrange(depth)
            if not covers[slot]:
                covers[slot] = {passage}
    return covers, n_relevant, rng.choice([1, 3, 5, 10])


def test_ranking_metrics_equal_trec_eval_on_one_to_one_relevance() -> None:
    rng = random.Random(14)
    for case in range(300):
        covers, n_relevant, k = _random_case(rng)
        qrels = {"q": {f"p{j}": 1 for j in range(n_relevant)}}
        docs = [f"p{next(iter(c))}" if c else f"n{i}" for i, c in enumerate(covers)]
        run = {"q": {doc: float(len(docs) - i) for i, doc in enumerate(docs)}}
        measures = {
            "hit": ir_measures.Success @ k,
            "recall": ir_measures.R @ k,
            "precision": ir_measures.P @ k,
            "mrr": ir_measures.RR,
            "ndcg": ir_measures.nDCG @ k,
        }
        reference = ir_measures.calc_aggregate(list(measures.values()), qrels, run)
        ours = ranking_metrics(covers, n_relevant, k)
        for name, measure in measures.items():
            assert ours[name] == pytest.approx(reference.get(measure, 0.0), abs=1e-9), (
                case,
                name,
                covers,
                n_relevant,
                k,
            )
