"""The local model as the learned judge's second opinion: where to ask it and how far to trust
it, measured (run on demand, about 5 s a claim on 2 cores:
`python bench/experiments/judge_second_opinion.py [--sets tuned|heldout] [--limit N]`).

For every labelled claim of the sets that no rule flags, it records the learned judge's
probability and the local model's P(yes) (`LLMJudge`, one token with log-probabilities), into
bench/results/second_opinion-SET.jsonl. With `--sets tuned` it then chooses the band (claims
whose probability is under `upper` are asked) and the model's threshold that make the fewest
false passes plus false alarms on those claims, and prints them; `verify.learned.SECOND_BAND`
and `SECOND_THRESHOLD` hold the values chosen. With `--sets heldout` it only records (the
held-out set is measured, never tuned on: bench/judge/bench_judge.py --llm reports it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*

from bench.judge.bench_judge import ROOT, sets
from tether.app import shared_models
from tether.config import load_settings
from tether.evaluation.verifier_eval import check_item, load_claims
from tether.ingest.sync import sync
from tether.providers.factory import make_provider
from tether.stores.sqlite import SqliteStore
from tether.verify.judges import LLMJudge
from tether.verify.learned import AlignmentJudge
from tether.verify.passages import VerifierCache


class _Both:
    """The learned judge, recording its probability and, for claims it reaches, the model's."""

    aligned = True
    name = "record"

    def __init__(self, llm: LLMJudge) -> None:
        self.align, self.llm = AlignmentJudge(), llm
        self.threshold = 0.0  # never flags: the rules alone decide what is flagged
        self.p: float | None = None
        self.passages: list[str] = []
        self.claim = ""

    def judge(self, features, claim, passages, evidence="", flagged=False):  # type: ignore[no-untyped-def]
        self.p = self.align.model.probability(features)
        self.claim, self.passages = claim, list(passages)
        return 1.0

    def score(self, claim: str, passages: list[str]) -> float:
        return 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", choices=["tuned", "heldout"], default="tuned")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/tether-bench-judge"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    embedder = shared_models().embedder()
    llm = LLMJudge(make_provider(load_settings(), name="local"))
    out = ROOT / "bench" / "results" / f"second_opinion-{args.sets}.jsonl"
    done = {}
    if out.is_file():
        done = {json.loads(x)["id"]: json.loads(x) for x in out.read_text().splitlines() if x}
    rows = list(done.values())
    for name, _status, folder, files in sets(args.sets, args.work):
        store = SqliteStore(args.work / f"{name}.sqlite")
        sync(store, folder, embedder=embedder, sentences=True)
        cache: dict = {}
        checked = VerifierCache()
        for n, item in enumerate(load_claims(files or None)):
            if args.limit and n >= args.limit:
                break
            if item["id"] in done:
                continue
            both = _Both(llm)
            row = check_item(store, item, cache, both, embedder, checked)
            if row.flags or both.p is None:
                continue  # a rule flagged it, or the judge was never asked: no second opinion
            t = time.perf_counter()
            p_llm = llm.score(both.claim, both.passages)
            rec = {"id": item["id"], "set": name, "label": item["label"], "kind": item.get("kind"),
                   "p": round(both.p, 4), "p_llm": round(p_llm, 4),
                   "llm_s": round(time.perf_counter() - t, 2)}  # fmt: skip
            rows.append(rec)
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            print(json.dumps(rec), file=sys.stderr)
        store.close()
    if args.sets != "tuned":
        return
    best = None
    for upper in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01):
        for t_llm in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            fp = sum(1 for r in rows if r["label"] == "unsupported"
                     and not (r["p"] < upper and r["p_llm"] < t_llm))  # fmt: skip
            fa = sum(1 for r in rows if r["label"] == "supported"
                     and r["p"] < upper and r["p_llm"] < t_llm)  # fmt: skip
            asked = sum(1 for r in rows if r["p"] < upper)
            cand = (fp + fa, asked, upper, t_llm, fp, fa)
            best = cand if best is None or cand < best else best
    print(
        f"claims no rule flags: {len(rows)}; best: ask under {best[2]}, trust P(yes) from"
        f" {best[3]}: {best[4]} false passes, {best[5]} false alarms, {best[1]} asked"
    )


if __name__ == "__main__":
    main()
