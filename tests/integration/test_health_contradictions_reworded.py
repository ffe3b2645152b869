"""The contradiction finder on a small collection written for this test (a leisure centre),
ingested with the default embedder (sentence and chunk vectors): a number said in other
words with another value and a rule said with the opposite modal are found, each with both
quotes, also by the reworded check alone (`contradiction_reworded`, which reads the e5
cosines); the same price in words ("forty-five dollars"), two versions of one policy, junior
and adult members' booking windows, and unrelated numbers are not reported."""

from __future__ import annotations

from datetime import date

import pytest

from tether.health.contradiction_pairs import Vectors
from tether.health.contradiction_reworded import Corpus, check_reworded
from tether.health.contradiction_units import Unit, read_units
from tether.health.contradictions import find_contradictions

AS_OF = date(2026, 6, 1)
DOCS = {
    "faq/membership-faq.md": """\
---
doc_id: membership-faq
version: "1"
title: Membership questions
doc_type: faq
access: public
language: en
effective_from: 2026-01-01
owner: Membership Services
---

# Membership questions

## How much is a membership?

Monthly membership is forty-five dollars, taken by direct debit at the start of the month.

## Can I pause my membership?

Yes. Freezing is allowed for as long as 6 months in a membership year, if you travel or have an injury.

## Can I book a court for my child?

Junior members can book squash courts up to 3 days ahead in the app.
""",
    "policies/membership-policy-v1.md": """\
---
doc_id: membership-policy
version: "1"
title: Membership policy
doc_type: policy
access: public
language: en
effective_from: 2025-01-01
effective_to: 2025-12-31
owner: Membership Services
---

# Membership policy

Riverside Leisure Centre memberships give access to the gym, the pool and the fitness classes.

## Fees

A monthly membership costs $40, paid by direct debit on the first day of each month.

## Freezing a membership

You can freeze your membership for up to 3 months in each membership year, for example while you are travelling or recovering from an injury.
""",
    "policies/membership-policy-v2.md": """\
---
doc_id: membership-policy
version: "2"
title: Membership policy
doc_type: policy
access: public
language: en
effective_from: 2026-01-01
owner: Membership Services
---

# Membership policy

Riverside Leisure Centre memberships give access to the gym, the pool and the fitness classes.

## Fees

A monthly membership costs $45, paid by direct debit on the first day of each month.

## Freezing a membership

You can freeze your membership for up to 3 months in each membership year, for example while you are travelling or recovering from an injury.

## Guests

Guests must be accompanied by a member at all times while they are in the gym.

## Court bookings

Adult members can book squash courts up to 7 days ahead in the app.
""",
    "staff/front-desk-procedure.md": """\
---
doc_id: front-desk-procedure
version: "1"
title: Front desk procedure
doc_type: procedure
access: staff
language: en
effective_from: 2026-01-01
owner: Centre Operations
---

# Front desk procedure

For front desk staff on every shift.

## Signing in guests

Guests do not have to be accompanied by a member while they are in the gym; sign them in and give them a visitor wristband.

## Lost property

Keep lost property for 30 days, then give unclaimed items to charity.
""",
}


@pytest.fixture(scope="module")
def leisure(tmp_path_factory: pytest.TempPathFactory):
    from tether.app import shared_models
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    folder = tmp_path_factory.mktemp("leisure")
    for name, text in DOCS.items():
        (folder / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    store = SqliteStore(folder / "index.sqlite")
    report = sync(store, folder / "docs", embedder=shared_models().embedder(), sentences=True)
    assert report.committed and not report.problems, report.problems
    yield store
    store.close()


def _pairs(found: list) -> set[tuple[str, str, str]]:
    return {(c.kind, *sorted((c.a.doc_id, c.b.doc_id))) for c in found}


@pytest.mark.slow
def test_reworded_conflicts_found_and_look_alikes_not(leisure) -> None:
    found = find_contradictions(leisure, AS_OF)
    assert _pairs(found) == {
        ("number", "membership-faq", "membership-policy"),
        ("rule", "front-desk-procedure", "membership-policy"),
    }, [(c.detail, c.a.text, c.b.text) for c in found]
    number = next(c for c in found if c.kind == "number")
    assert {number.a.text, number.b.text} == {
        "Freezing is allowed for as long as 6 months in a membership year, if you travel or"
        " have an injury.",
        "You can freeze your membership for up to 3 months in each membership year, for"
        " example while you are travelling or recovering from an injury.",
    }
    assert "3 months" in number.detail and "6 months" in number.detail
    rule = next(c for c in found if c.kind == "rule")
    assert any("do not have to be accompanied" in q.text for q in (rule.a, rule.b))
    for c in found:  # never the two versions, never the price said in words
        assert "$40" not in c.detail and "forty-five" not in c.detail


def _unit(units: list[Unit], doc: str, start: str) -> int:
    return next(n for n, u in enumerate(units) if u.doc == doc and u.text.startswith(start))


@pytest.mark.slow
def test_the_reworded_check_reads_the_vectors(leisure) -> None:
    chunks = [c for c in leisure.chunks() if c.meta.in_force(AS_OF)]
    units = [u for c in chunks for u in read_units(c)]
    vectors = Vectors.build(leisure, units, None, lambda *_: None)
    assert vectors is not None
    corpus = Corpus.build(units)

    def check(i: int, j: int):
        a, b = units[i], units[j]
        return check_reworded(a, b, vectors.cosine(i, j), vectors.chunk_cosine(a, b), corpus)

    freeze = (
        _unit(units, "membership-faq", "Freezing"),
        _unit(units, "membership-policy", "You can freeze"),
    )
    guests = (
        _unit(units, "front-desk-procedure", "Guests"),
        _unit(units, "membership-policy", "Guests"),
    )
    courts = (_unit(units, "membership-faq", "Junior"), _unit(units, "membership-policy", "Adult"))
    price = (
        _unit(units, "membership-faq", "Monthly"),
        _unit(units, "membership-policy", "A monthly"),
    )
    found = check(*freeze)
    assert found is not None and found[0].kind == "number" and found[1] is not None
    found = check(*guests)
    assert found is not None and found[0].kind == "rule"
    assert check(*courts) is None  # junior and adult members: two groups
    assert check(*price) is None  # $45 and forty-five dollars: one value
