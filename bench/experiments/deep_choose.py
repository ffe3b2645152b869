"""Choose the deep rerank's depth, weight and on-topic share from `bench/experiments/deep_candidates.py`'s
dumps (tuned-on sets only): hit@5 and MRR@20 of each setting, pooled and per set.

`python bench/experiments/deep_choose.py [DIR]` prints a table of the settings ranked by the pooled
macro mean of hit@5 and MRR (each set counts once), with the rerank order (weight 0) first.
On the sets the reader's relevance head was fine-tuned on (`training/reader/mine.py`), only
the held-back fifth of the questions counts.

What it cannot do: "hit" here is any labelled passage in the top 5 (a question with several
labels counts as one hit when one is found, as recall@5 does not); it reorders the dumped
top 20 only, so it cannot show what a deeper candidate list would bring.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training" / "reader"))

from mine import split_of

from tether.linear import clipped_logit

logit = clipped_logit


def order(cands: list[dict], weight: float, on_topic: float, depth: int) -> list[int]:
    head = cands[:depth]
    if weight == 0 or len(head) < 2:
        return list(range(len(cands)))
    r = np.array([logit(c["probs"][0] + on_topic * c["probs"][1]) for c in head])
    b = np.array([c["rerank"] for c in head])
    spread = (r.std() or 1.0) / max(b.std(), 1e-6)
    s = weight * r + b * spread
    idx = sorted(range(len(head)), key=lambda i: (-s[i], i))
    return idx + list(range(depth, len(cands)))


def measure(
    questions: list[dict], weight: float, on_topic: float, depth: int
) -> tuple[float, float]:
    hits, rr = [], []
    for q in questions:
        cands = q["candidates"]
        idx = order(cands, weight, on_topic, depth)
        rel = [cands[i]["relevant"] for i in idx]
        first = next((i + 1 for i, x in enumerate(rel) if x), None)
        hits.append(1.0 if first and first <= 5 else 0.0)
        rr.append(1.0 / first if first else 0.0)
    return float(np.mean(hits)), float(np.mean(rr))


TRAINED = {"gettext", "mkdocs", "doxygen", "bundled"}  # registry: manuals, bundled-questions


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench/results/deep_candidates")
    sets = {}
    for p in sorted(folder.glob("*.json")):
        qs = json.loads(p.read_text())["questions"]
        if p.stem in TRAINED:  # only the fifth the reader did not train on
            qs = [q for q in qs if split_of(p.stem, q["id"]) == "val"]
        sets[p.stem] = qs
    rows = []
    grid = itertools.product(
        (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 100.0), (0.0, 0.25, 0.5), (5, 10, 15, 20)
    )
    for weight, on_topic, depth in grid:
        if weight == 0 and (on_topic, depth) != (0.0, 20):
            continue
        per = {n: measure(qs, weight, on_topic, depth) for n, qs in sets.items()}
        macro = float(np.mean([h + m for h, m in per.values()]) / 2)
        rows.append((macro, weight, on_topic, depth, per))
    base = next(r for r in rows if r[1] == 0)
    rows.sort(key=lambda r: -r[0])
    names = list(sets)
    print("weight on_topic depth macro | " + " | ".join(f"{n} hit@5 mrr" for n in names))
    for macro, w, c, d, per in [base, *rows[:25]]:
        cells = " | ".join(f"{per[n][0]:.3f} {per[n][1]:.3f}" for n in names)
        print(f"{w:6} {c:4} {d:3} {macro:.4f} | {cells}")


if __name__ == "__main__":
    main()
