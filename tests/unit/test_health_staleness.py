"""The health report's stale documents without a model or an index: a document in force past
its review date (`review_by`) is stale, with its owner, beside one that ended with no
successor; a review date still ahead, one due on the report's date, a superseded version's,
and a document not in force are not reported."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from fakes import FakeSearchable

from tether.health.report import build_report
from tether.health.upkeep import ended, review_overdue
from tether.types import Chunk, DocMeta, DocumentInfo

AS_OF = date(2026, 12, 1)


def _doc(doc_id: str, version: str = "1", **fields: object) -> DocumentInfo:
    meta = DocMeta(doc_id=doc_id, version=version, title=doc_id.replace("-", " ").title())
    return DocumentInfo(replace(meta, **fields), 1, doc_id)  # type: ignore[arg-type]


def test_a_document_in_force_past_its_review_date_is_stale_with_its_owner() -> None:
    docs = [
        _doc("aup", review_by=date(2026, 9, 30), owner="Information Security"),
        _doc("printer-guide", review_by=date(2026, 5, 31)),  # no owner: none named
        _doc("wifi-guide", review_by=date(2027, 3, 31), owner="Network Services"),  # ahead
        _doc("due-today", review_by=AS_OF, owner="Service Desk"),  # due, not yet overdue
        _doc("no-date", owner="Service Desk"),
    ]
    found = review_overdue(docs, AS_OF)
    assert [(f.kind, f.doc_ids, f.owners) for f in found] == [
        ("stale", ("aup",), ("Information Security",)),
        ("stale", ("printer-guide",), ()),
    ]
    assert found[0].title == "Aup: review overdue since 2026-09-30"
    assert "aup version 1 was to be reviewed by 2026-09-30" in found[0].detail
    assert "still in force on 2026-12-01" in found[0].detail


def test_only_the_current_version_of_a_document_counts() -> None:
    docs = [
        # ended and replaced: its overdue review is not its owner's to keep
        _doc("loans", "1", effective_from=date(2025, 1, 1), effective_to=date(2026, 8, 31),
             review_by=date(2026, 6, 30)),
        _doc("loans", "2", effective_from=date(2026, 9, 1), review_by=date(2027, 8, 31)),
        # no end date, but a later version took effect: the later one is current
        _doc("vpn", "9", effective_from=date(2024, 8, 1), review_by=date(2026, 1, 31)),
        _doc("vpn", "10", effective_from=date(2026, 4, 1), review_by=date(2027, 4, 1)),
        # the current version is overdue while an older one was not
        _doc("email", "1", effective_from=date(2024, 1, 1), effective_to=date(2025, 12, 31),
             review_by=date(2027, 1, 1)),
        _doc("email", "2", effective_from=date(2026, 1, 1), review_by=date(2026, 10, 1),
             owner="Email Team"),
        # not in force on the date at all: an ended document (`ended`) or a future one
        _doc("summer-hours", effective_from=date(2026, 6, 1), effective_to=date(2026, 9, 6),
             review_by=date(2026, 7, 1)),
        _doc("next-year", effective_from=date(2027, 1, 1), review_by=date(2026, 11, 1)),
    ]  # fmt: skip
    found = review_overdue(docs, AS_OF)
    assert [(f.doc_ids, f.owners) for f in found] == [(("email",), ("Email Team",))]
    assert "email version 2" in found[0].detail
    assert [f.doc_ids for f in ended(docs, AS_OF)] == [("summer-hours",)]


def test_the_report_lists_overdue_reviews_beside_ended_documents() -> None:
    metas = [
        DocMeta("aup", "4", "Acceptable use", owner="Information Security",
                effective_from=date(2024, 9, 1), review_by=date(2026, 9, 30)),
        DocMeta("summer-hours", "1", "Summer lab hours", doc_type="notice", owner="Labs",
                effective_from=date(2026, 6, 1), effective_to=date(2026, 9, 6)),
        DocMeta("wifi", "1", "Wi-Fi guide", review_by=date(2027, 3, 31)),
    ]  # fmt: skip
    store = FakeSearchable([Chunk(f"c{i}", m, "Some text.", (), 0, 10, 0) for i, m in
                            enumerate(metas)])  # fmt: skip
    report = build_report(store, AS_OF, collection="test")  # type: ignore[arg-type]
    stale = report.of("stale")
    assert [(f.title, f.owners) for f in stale] == [
        ("Summer lab hours ended on 2026-09-06 with no successor", ("Labs",)),
        ("Acceptable use: review overdue since 2026-09-30", ("Information Security",)),
    ]
