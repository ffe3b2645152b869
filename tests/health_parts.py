"""The demo collection with faults planted, shared by the health report's tests
(tests/integration/test_health.py), its page in Chromium (tests/faces/test_server_browser.py)
and `bench/health/bench_health_report.py`: a stale document, a document in force past its review
date (review dates given in inventory.csv, one of them a replaced version's, one still
ahead), an unlabelled one with a link to a missing file, ten refused questions in three
subjects and a wrong verdict in the audit."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

from tether.app import Workspace
from tether.config import Settings
from tether.evaluation.questions import demo_collection
from tether.types import AskResult, Gate

AS_OF = "2026-11-30"
REFUSED = {  # subjects the demo's documents never mention
    "gift wrapping": ["Do you offer gift wrapping?", "Can you gift wrap my order?",
                      "How much does gift wrapping cost?", "Is gift wrap available online?"],
    "scuba": ["Do you sell scuba diving gear?", "Can I buy a scuba regulator from you?",
              "Do you service scuba tanks?"],
    "drones": ["Do you repair drones?", "Can I bring my camera drone in for a repair?",
               "How much is a drone propeller repair?"],
}  # fmt: skip
ANSWERED = "How many days do I have to return a bicycle?"
STALE = """---
doc_id: bike-storage-offer
version: "1"
title: Summer bike storage offer
doc_type: policy
access: public
effective_from: 2025-05-01
effective_to: 2026-09-30
owner: Service Workshop
---

# Summer bike storage offer

We store your bicycle in our Halifax workshop from May to September for $15 a month.
"""
UNLABELLED = """---
doc_id: workshop-checklist
version: "1"
title: Workshop opening checklist
owner: Service Workshop
---

# Workshop opening checklist

Turn on the compressor, check the stand clamps and read the [safety sheet](safety-sheet.md)
before the first repair of the day. The [tune-up guide](../policies/bike-assembly-and-tune-ups.md)
lists the prices.
"""


REVIEW_DATES = {  # review_by given to demo documents through inventory.csv
    "policies/warranty-policy.md": "2026-06-30",  # in force: overdue on AS_OF (stale)
    "policies/returns-policy-v3.md": "2026-05-31",  # overdue, but replaced by v4: not reported
    "policies/returns-policy-v4.md": "2027-02-28",  # in force, review still ahead
}
REVIEW_OVERDUE = "warranty-policy"  # its owner: Customer Care


def plant_review_dates(docs: Path) -> None:
    """Give the documents of `REVIEW_DATES` a review date: a review_by column in the copy's
    inventory.csv (their files are left as they are)."""
    path = docs / "inventory.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*rows[0], "review_by"])
    for row in rows[1:]:
        writer.writerow([*row, REVIEW_DATES.get(row[0], "")])
    path.write_text(out.getvalue(), encoding="utf-8")


def planted_index(root: Path) -> Path:
    """A copy of the demo collection in `root` with the faults planted, ingested with vectors,
    and ten refused questions plus a wrong verdict recorded in its audit."""
    docs = root / "docs"
    shutil.copytree(demo_collection(), docs)
    (docs / "policies" / "bike-storage-offer.md").write_text(STALE)
    (docs / "guides" / "workshop-checklist.md").write_text(UNLABELLED)
    plant_review_dates(docs)
    index = root / "index.sqlite"
    with Workspace.open(index, settings=Settings(provider="extractive")) as ws:
        report = ws.ingest(docs)
        assert report.committed and not report.problems, report.problems
        gate = Gate(False, 0.8, 1, 0, 0.41, "retrieval too weak")
        for questions in REFUSED.values():
            for q in questions:
                ws.record(AskResult(q, None, "public", "en", "rerank", gate=gate), "desk")
        # refused then, answered by the documents now: no gap
        ws.record(AskResult(ANSWERED, None, "public", "en", "rerank", gate=gate), "desk")
        answered = ws.ask("How long does standard delivery take?", who="desk")
        assert answered.audit_id is not None
        ws.feedback(answered.audit_id, "wrong", "it should say express too", who="desk")
    return index
