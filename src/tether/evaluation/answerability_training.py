"""Training the answerability judge (`tether.answering.answerable`): labelled questions on
real collections, each question's reading of its retrieved passages, a logistic regression,
the model file.

One command rebuilds `src/tether/answering/answerability_model.json` (`make answerability`):

    python scripts/train_answerability.py [--out PATH] [--cache DIR] [--rows FILE]

Training questions (all tuned on): the bundled question set's training half (`split`: a
stable hash of the question ID; the other half is kept for measurement), the question sets
of `bench/data/answer_training/` on the collections they were written for (a library's,
`bench/data/verifier_heldout/collection`, and a transit agency's,
`bench/data/judge_heldout/collection`), and the test suite's 3- and 10-file collections
(`tests/data/small3`, `tests/data/small10`), when present. The held-out answer sets
(`bench/data/answer_heldout/`) are never read here.

Each collection is ingested once with embeddings into `--cache` (reused while its files are
unchanged); each question is searched as `ask` searches it (rerank, 5 passages, its date and
audience) and read (`read_question`). Label: answerable unless the question must be refused
(`abstain`).

Fitting: scikit-learn's LogisticRegression (balanced classes) on standardised features;
every question gets an out-of-fold probability (five folds by question); the threshold is the
highest under which at most `MAX_WRONGLY_REFUSED` of the answerable questions fall out of
fold (refusing a good question costs a help desk more than answering a near miss, which the
claim checks still see). The out-of-fold rates, by set and kind, go into the model's `trained`
record with the counts and seconds.

What it cannot do: it needs scikit-learn (the `dev` extra) and the e5 model; a few hundred
questions fit a handful of weights, not a vocabulary, so the judge learns how much each named
signal counts, nothing about a subject.
"""

from __future__ import annotations

import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tether.answering.answerable import read_question, reader_probabilities
from tether.evaluation.questions import demo_collection, load_questions
from tether.linear import fit_scaled
from tether.protocols import Store
from tether.types import Filters, Question
from tether.verify.learned import JudgeModel

if TYPE_CHECKING:
    from tether.protocols import Searcher

REPO = Path(__file__).resolve().parents[3]
FEATURES = (
    "rerank", "best_cover", "typed_cover", "typed_rare_cover", "unknown_rare", "unknown_max",
    "missing_rare", "passage_cover", "missing_top", "unknown_share", "any_unknown",
    "codes_missing", "best_cos", "typed_cos", "cross", "cross_cos", "typed_asked",
    "typed_found", "same_language", "n_terms", "reader_answers", "reader_topic",
)  # fmt: skip
MAX_WRONGLY_REFUSED = 0.05
C = 0.1  # the logistic regression's strength
SEED = 7


def split(question_id: str) -> str:
    """"train" or "heldout": the bundled set's half a question belongs to (stable)."""
    return "train" if zlib.crc32(question_id.encode("utf-8")) % 2 == 0 else "heldout"


@dataclass(frozen=True)
class Row:
    """One question read against its passages."""

    set: str
    id: str
    kind: str
    answerable: bool
    features: dict[str, float]


def training_sets() -> list[tuple[str, Path, list[Question]]]:
    """(name, collection folder, questions) of every training set present here."""
    out = [("demo", demo_collection(), [q for q in load_questions() if split(q.id) == "train"])]
    data = REPO / "bench" / "data"
    tests = REPO / "tests" / "data"
    for name, folder, path in (
        ("library", data / "verifier_heldout" / "collection",
         data / "answer_training" / "questions-library.jsonl"),
        ("transit", data / "judge_heldout" / "collection",
         data / "answer_training" / "questions-transit.jsonl"),
        ("small3", tests / "small3" / "docs", tests / "small3" / "questions.jsonl"),
        ("small10", tests / "small10" / "docs", tests / "small10" / "questions.jsonl"),
    ):  # fmt: skip
        if path.is_file() and folder.is_dir():
            out.append((name, folder, load_questions(path)))
    return out


def read_rows(
    name: str, store: Store, retriever: Searcher, questions: Sequence[Question]
) -> list[Row]:
    """Each question searched as `ask` searches it (deep when the reader loads, 5 passages,
    its date and audience) and read against its passages (and by the reader)."""
    rows = []
    for q in questions:
        filters = Filters(as_of=q.as_of, audience=q.audience)
        hits = retriever.search(q.question, 5, filters, method=retriever.answer_method)
        vector = retriever.query_vector(q.question) if retriever.embedder is not None else None
        read = reader_probabilities(q.question, hits, retriever)
        reading = read_question(q.question, hits, store, filters, vector, read)
        rows.append(Row(name, q.id, q.kind, not q.abstain, reading.features))
    return rows


def _matrix(rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r.features.get(f, 0.0) for f in FEATURES] for r in rows], dtype=np.float64)
    return x, np.array([1 if r.answerable else 0 for r in rows])


def out_of_fold(rows: Sequence[Row]) -> np.ndarray:
    """Each row's P(answerable) from a model fitted without it (five folds by question)."""
    x, y = _matrix(rows)
    folds = np.array([zlib.crc32(f"{r.set}:{r.id}".encode()) % 5 for r in rows])
    oof = np.zeros(len(rows))
    for k in range(5):
        part = folds == k
        scaler, lr = fit_scaled(x[~part], y[~part], C)
        oof[part] = lr.predict_proba(scaler.transform(x[part]))[:, 1]
    return oof


def fit(rows: Sequence[Row], seconds_so_far: float = 0.0) -> JudgeModel:
    """A logistic regression on `rows` (see the module docstring)."""
    began = time.perf_counter()
    x, y = _matrix(rows)
    oof = out_of_fold(rows)
    pos = np.sort(oof[y == 1])
    allowed = int(MAX_WRONGLY_REFUSED * len(pos))
    threshold = round(float(pos[allowed]) - 1e-6, 4) if len(pos) else 0.5
    refused = oof < threshold
    by: dict[str, list[int]] = {}
    for r, refuse in zip(rows, refused, strict=True):
        key = f"{r.set}:{'answerable' if r.answerable else 'must_refuse'}"
        cell = by.setdefault(key, [0, 0])
        cell[0] += int(refuse)
        cell[1] += 1
    wrong = Counter(
        f"{r.set}:{r.kind}" for r, refuse in zip(rows, refused, strict=True)
        if refuse == r.answerable
    )  # fmt: skip
    scaler, lr = fit_scaled(x, y, C)
    return JudgeModel.fitted(
        FEATURES,
        scaler,
        lr,
        threshold,
        {
            "questions": len(rows),
            "answerable": int(y.sum()),
            "must_refuse": int(len(y) - y.sum()),
            "sets": dict(sorted(Counter(r.set for r in rows).items())),
            "threshold_chosen_on": f"out of fold: at most {MAX_WRONGLY_REFUSED:.0%} of the"
            " answerable questions under it",
            "out_of_fold_refused": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by.items())},
            "out_of_fold_wrong_by_kind": dict(sorted(wrong.items())),
            "seconds": round(seconds_so_far + time.perf_counter() - began, 1),
            "seed": SEED,
        },
    )
