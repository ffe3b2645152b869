"""Transitional: the old import path `tether.evaluation.evaluate`, re-exporting question sets
(`questions`), metrics (`metrics`), the retrieval runner (`retrieval_eval`), the HTML report
(`report`), the verifier measurement (`verifier_eval`) and the gate calibration (`calibration`).

Kept only while modules outside this package (cli/main.py, tests/conftest.py and a few tests
and benches) still import the old path; it holds no logic of its own and can be deleted once
nothing imports it.
"""

from __future__ import annotations

from tether.evaluation.calibration import GateCalibration, GateRow, calibrate_gate
from tether.evaluation.metrics import (
    DEPTH,
    METRIC_NAMES,
    METRICS,
    EvalResult,
    QuestionRun,
    aggregate,
    ranking_metrics,
)
from tether.evaluation.questions import (
    demo_claims,
    demo_collection,
    demo_questions,
    larkfield_collection,
    load_questions,
    matches,
    passage_label,
    question_filters,
)
from tether.evaluation.report import write_report
from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.evaluation.verifier_eval import (
    VerifierResult,
    VerifierRow,
    load_claims,
    run_verifier_eval,
)

__all__ = [
    "DEPTH",
    "METRICS",
    "METRIC_NAMES",
    "EvalResult",
    "GateCalibration",
    "GateRow",
    "QuestionRun",
    "VerifierResult",
    "VerifierRow",
    "aggregate",
    "calibrate_gate",
    "demo_claims",
    "demo_collection",
    "demo_questions",
    "larkfield_collection",
    "load_claims",
    "load_questions",
    "matches",
    "passage_label",
    "question_filters",
    "ranking_metrics",
    "run_retrieval_eval",
    "run_verifier_eval",
    "write_report",
]
