"""Fit the claim judge's combination of the words model and the reader
(`src/tether/verify/judge_reader_model.json`): `python training/reader/judge.py`.

The claim checker is run on every labelled claim set whose role for `judge` is `tuned` in
training/datasets.toml (the bundled claims, Maplebrook, Larkfield, Coldwater), each on its
own index (kept in `--work`), with the shipped reader; for each claim the judge is asked about,
it records what the combination reads (`tether.verify.learned.reading_features`: the words
model's logit, the reader's three logits, whether the claim is in another language). A
class-balanced logistic regression is fitted on them; its threshold is the one with the fewest
false passes + false alarms (in rates) over the out-of-fold probabilities, each set left out
in turn; those out-of-fold rates per set are written into the model's `trained` record.

What it cannot do: it learns from ~600 labelled claims of four collections, so its weights
say how far the reader is trusted on kinds of text like those; the held-out claims
(bench/data/reader_heldout) are never read here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "bench"))

import numpy as np  # noqa: E402
import registry  # noqa: E402

from tether.linear import LinearModel, fit_scaled  # noqa: E402
from tether.verify.learned import READER_FEATURES, READER_MODEL_PATH, AlignmentJudge  # noqa: E402


class _Recorder:
    """A stand-in combination that keeps what the judge would read (and passes everything)."""

    threshold = 0.5

    def __init__(self) -> None:
        self.seen: list[dict[str, float]] = []

    def probability(self, values: dict[str, float]) -> float:
        self.seen.append(dict(values))
        return 1.0


def collect(work: Path) -> list[tuple[str, str, dict[str, float], int]]:
    """(set, claim, features, 1 if supported) for every claim the judge is asked about."""
    from bench_judge import sets

    from tether.app import shared_models
    from tether.embeddings.reader import load_reader
    from tether.evaluation.verifier_eval import load_claims
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore
    from tether.verify.check import check_answer  # noqa: F401  (the checker the eval runs)

    tuned = {s.name for s in registry.sets_for("judge", "tuned")} | {
        s.name for s in registry.sets_for("judge", "train")
    }
    embedder = shared_models().embedder()
    reader = load_reader()
    rows: list[tuple[str, str, dict[str, float], int]] = []
    from tether.evaluation.verifier_eval import run_verifier_eval

    for name, _status, folder, files in sets("tuned", work):
        if name.lower() not in tuned:
            raise SystemExit(f"{name}: not a tuned or training set for the judge in the registry")
        items = load_claims(files or None)
        store = SqliteStore(work / f"{name}.sqlite")
        sync(store, folder, embedder=embedder, sentences=True)
        recorder = _Recorder()
        judge = AlignmentJudge(reader=reader, combine=recorder)  # type: ignore[arg-type]
        seen_before = 0
        # one claim at a time, so each recorded reading is matched to its claim
        for item in items:
            run_verifier_eval(store, [item], judge=judge, embedder=embedder)
            if len(recorder.seen) > seen_before:
                rows.append(
                    (name, item["claim"], recorder.seen[-1], int(item["label"] == "supported"))
                )
                seen_before = len(recorder.seen)
        store.close()
        print(f"{name}: {sum(1 for r in rows if r[0] == name)} claims read", file=sys.stderr)
    return rows


def rates(p: np.ndarray, y: np.ndarray, t: float) -> tuple[float, float]:
    """(false pass rate, false alarm rate) of the judge alone at threshold t."""
    fp = float(((p >= t) & (y == 0)).sum() / max(1, (y == 0).sum()))
    fa = float(((p < t) & (y == 1)).sum() / max(1, (y == 1).sum()))
    return fp, fa


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/tether-bench-reader"))
    ap.add_argument("--out", type=Path, default=READER_MODEL_PATH)
    ap.add_argument("--c", type=float, default=1.0, help="the regression's strength")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    rows = collect(args.work)
    x = np.array([[r[2][f] for f in READER_FEATURES] for r in rows])
    y = np.array([r[3] for r in rows])
    groups = np.array([r[0] for r in rows])
    oof = np.zeros(len(rows))
    for g in sorted(set(groups)):
        test = groups == g
        scaler, reg = fit_scaled(x[~test], y[~test], args.c)
        oof[test] = reg.predict_proba(scaler.transform(x[test]))[:, 1]
    best = min((sum(rates(oof, y, t)), t) for t in np.unique(np.round(oof, 3)))
    threshold = round(float(best[1]), 3)
    per_set = {}
    for g in sorted(set(groups)):
        m = groups == g
        fp, fa = rates(oof[m], y[m], threshold)
        fp_r, fa_r = rates(1 / (1 + np.exp(-x[m][:, 1])), y[m], 0.5)
        per_set[g] = {"claims": int(m.sum()), "false_pass_rate": round(fp, 3), "false_alarm_rate": round(fa, 3),
                      "reader_alone_at_0.5": [round(fp_r, 3), round(fa_r, 3)]}  # fmt: skip
    scaler, reg = fit_scaled(x, y, args.c)
    model = LinearModel.fitted(READER_FEATURES, scaler, reg, threshold, {
        "what": "the claim judge's combination of the words model and the reader",
        "command": "python training/reader/judge.py",
        "claims": len(rows), "sets": sorted(set(groups)),
        "out_of_fold": per_set, "threshold_from": "out-of-fold probabilities, each set left out in turn",
        "seconds": round(time.time() - start),
    })  # fmt: skip
    args.out.write_text(
        json.dumps(model.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(json.dumps({"threshold": threshold, "weights": dict(zip(READER_FEATURES, model.weights, strict=True)),
                      "out_of_fold": per_set}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
