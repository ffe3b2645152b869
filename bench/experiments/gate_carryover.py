"""Does the support gate carry over to a collection it was not tuned on? (run on demand:
`python bench/experiments/gate_carryover.py`).

Compares, for the default method (rerank), the Profile's fixed floor (0.784, fitted on the
whole bundled set) with the floor that ingest fits on each index against itself
(`tether.evaluation.calibration.self_calibrate`: the bundled off-topic questions and questions
generated from the index's passages; the asker's audience's floor). The rule's one tuned value
(z = 2.0 in the Profile) was chosen on the ODD-numbered bundled questions; measured here on:
- the demo collection's held-out part: the EVEN-numbered bundled questions (Q002, Q004, ...);
- Larkfield (../shared/benchmarks/larkfield, held out whole): its answerable questions whose
  relevant passages are in the partial corpus (audience staff, the help desk asks), and its
  unanswerable ones;
- on both, the off-topic questions of bench/data/offtopic-heldout.jsonl (36, EN and FR;
  none of them is in the bundled calibration list), asked as public and as staff.
Also times the self-calibration at ingest. Writes bench/results/gate_carryover.md.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from tether.answering.gate import support_score
from tether.app import Workspace
from tether.evaluation.questions import (
    demo_collection,
    larkfield_collection,
    load_questions,
    question_filters,
)
from tether.evaluation.retrieval_eval import _plan, _Reachability
from tether.types import Filters, Question

ROOT = Path(__file__).resolve().parents[2]
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"
OFFTOPIC = ROOT / "bench" / "data" / "offtopic-heldout.jsonl"
OLD_FLOOR = 0.784
METHOD = "rerank"


def best(ws: Workspace, question: str, filters: Filters) -> float:
    hits = ws.retriever().search(question, 5, filters, method=METHOD)
    return max((support_score(h) for h in hits), default=0.0)


def floor_of(ws: Workspace, audience: str) -> float:
    fit = ws.self_calibration() or {}
    for f in fit.get("fits", []):
        if f["audience"] == audience and f["method"] == METHOD and f["floor"] is not None:
            return float(f["floor"])
    raise SystemExit(f"no self-calibrated {METHOD} floor for {audience}")


def rates(ws: Workspace, questions: list[tuple[Question, Filters]]) -> tuple[int, int, int]:
    """(n, refused by the old floor, refused by the self-calibrated floor)."""
    old = new = 0
    for q, filters in questions:
        score = best(ws, q.question, filters)
        old += score < OLD_FLOOR
        new += score < floor_of(ws, filters.audience)
    return len(questions), old, new


def pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "–"


def build(folder: Path, index: Path) -> tuple[Workspace, float, float]:
    ws = Workspace.open(index, create=True)
    began = time.perf_counter()
    ws.ingest(folder)
    total = time.perf_counter() - began
    return ws, total, float((ws.self_calibration() or {})["seconds"])


def main() -> None:
    offtopic = load_questions(OFFTOPIC)
    rows: list[str] = []
    fits: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        sets: list[tuple[str, Workspace, list[tuple[Question, Filters]], list]] = []
        print("demo …", file=sys.stderr)
        demo, demo_s, demo_cal = build(demo_collection(), Path(tmp) / "demo.sqlite")
        held = [q for q in load_questions(None) if int(q.id.lstrip("Q")) % 2 == 0]
        sets.append(
            ("demo, even-numbered bundled questions", demo,
             [(q, question_filters(q)) for q in held if not q.abstain],
             [(q, question_filters(q)) for q in held if q.abstain])
        )  # fmt: skip
        timing = [f"| demo | {demo_s:.1f} | {demo_cal:.2f} |"]
        if LARKFIELD.is_dir():
            print("Larkfield …", file=sys.stderr)
            folder = larkfield_collection(LARKFIELD, Path(tmp) / "larkfield")
            lark, lark_s, lark_cal = build(folder, Path(tmp) / "lark.sqlite")
            lq = load_questions(LARKFIELD / "questions" / "questions.jsonl")
            plan, _, _ = _plan(_Reachability(lark.store), lq, "staff")
            sets.append(
                ("Larkfield (held out whole; audience staff)", lark,
                 [(q, f) for q, f, _ in plan if not q.abstain],
                 [(q, question_filters(q, "staff")) for q in lq if q.abstain])
            )  # fmt: skip
            timing.append(f"| Larkfield | {lark_s:.1f} | {lark_cal:.2f} |")
        for name, ws, answerable, refuse in sets:
            n, old, new = rates(ws, answerable)
            m, old_refused, new_refused = rates(ws, refuse)
            ot = {
                aud: rates(ws, [(q, Filters(as_of=None, audience=aud)) for q in offtopic])
                for aud in ("public", "staff")
            }
            rows.append(f"| {name} | answerable refused | {pct(old, n)} | {pct(new, n)} | ≤ 5% |")
            for aud, (k, o, w) in ot.items():
                rows.append(
                    f"| {name} | off-topic refused ({aud}) | {pct(o, k)} | {pct(w, k)} | ≥ 70% |"
                )
            rows.append(
                f"| {name} | must-refuse (unanswerable, staff-only for public) refused"
                f" | {pct(old_refused, m)} | {pct(new_refused, m)} | |"
            )
            for f in (ws.self_calibration() or {})["fits"]:
                fits.append(
                    f"| {name} | {f['audience']} | {f['floor']} | {f['offtopic_mean']} ±"
                    f" {f['offtopic_sd']} (n {f['offtopic_n']}) | {f['generated_low']}"
                    f" (n {f['generated_n']}) | {'yes' if f['capped'] else 'no'} |"
                )
            ws.close()
    lines = [
        "# Support gate on collections it was not tuned on",
        "",
        f"Run on {date.today().isoformat()}, {platform.system().lower()}, {os.cpu_count()} CPUs"
        " shared with other jobs (seven other engineers' builds and tests were running), method"
        f" {METHOD}, k 5. Produced by `bench/experiments/gate_carryover.py`.",
        "",
        "Old: the Profile's floor 0.784 (fitted on all 181 bundled questions). New: the floor"
        " ingest fits on each index against itself, for the asker's audience: mean + 2.0 sd of"
        " the best scores of the 40 bundled off-topic questions (tether/evaluation/offtopic.txt),"
        " capped at the 5th percentile of the best scores of questions generated from the"
        " index's own passages (headings and sentences of up to 30 chunks). z = 2.0 was chosen"
        " on the odd-numbered bundled questions (1/80 answerable refused) and a split-half"
        " cross-validation of the calibration off-topic list (97% refused on the unseen half);"
        " everything below was held out: the even-numbered bundled questions, all of Larkfield,"
        " and the 36 off-topic questions of bench/data/offtopic-heldout.jsonl.",
        "",
        "| collection | measure | old floor 0.784 | self-calibrated | goal |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "## What was fitted",
        "",
        "| collection | audience | floor | off-topic best scores, mean ± sd | generated,"
        " 5th percentile | capped |",
        "|---|---|---|---|---|---|",
        *fits,
        "",
        "## Cost at ingest",
        "",
        "| collection | ingest s (with calibration) | self-calibration s |",
        "|---|---|---|",
        *timing,
        "",
        "What it cannot do: the must-refuse questions of both sets are near misses (a product the"
        " shop does not sell, a staff rule asked by the public); they score like answerable"
        " questions, and a lower floor lets more of them through to the model, where the"
        " verifier and the audience filter (a public search never sees a staff passage) stand"
        " behind it.",
        "",
    ]
    out = ROOT / "bench" / "results" / "gate_carryover.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print(out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
