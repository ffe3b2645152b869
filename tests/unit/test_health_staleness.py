"""The health report's stale documents without a model or an index: a document in force past
its review date (`review_by`) is stale, with its owner, beside one that ended with no
successor; a review date still ahead, one due on the report's date, a superseded version's,
and a document not in force are not reported."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from fakes import FakeReader, FakeSearchable

from tether.health.report import build_report
from tether.health.upkeep import ended, review_overdue, superseded_cited
from tether.types import AuditEntry, Chunk, DocMeta, DocumentInfo

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


def test_a_superseded_version_is_quoted_by_its_most_cited_passages_every_run() -> None:
    """The evidence of `superseded_cited` is its two most cited passages (ties by ID): it was
    the first two met in a set's order, which changed from one process to the next."""
    old = DocMeta(doc_id="delivery", version="4", title="Delivery",
                  effective_from=date(2025, 1, 1), effective_to=date(2026, 6, 30))  # fmt: skip
    new = replace(old, version="5", effective_from=date(2026, 7, 1), effective_to=None)
    chunks = [Chunk(cid, old, f"text {cid}", (cid,), 0, 6, n) for n, cid in enumerate("abcd")]
    chunks.append(Chunk("z", new, "text z", ("z",), 0, 6, 0))
    cites = [("a", "d"), ("d",), ("c", "d", "b"), ("c",)]  # d three times, c twice, a and b once
    entries = [
        AuditEntry("2026-11-01T00:00:00Z", "cli", "public", f"q{n}", "answered",
                   claims=({"text": "t", "chunk_ids": list(ids)},))
        for n, ids in enumerate(cites)
    ]  # fmt: skip
    (found,) = superseded_cited(entries, FakeReader(chunks), AS_OF)
    assert [q.chunk_id for q in found.evidence] == ["d", "c"] and found.count == 7
