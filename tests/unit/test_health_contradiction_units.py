"""How the contradiction finder reads a sentence (`tether.health.contradiction_units`),
without a model: numbers with canonical units (two weeks is 14 days, 1 TB is 1024 GB, 20p
is £0.20), numbers written as words, counted nouns, table cells bound to their row, the
groups of people a sentence names, and the negation of its main clause only."""

from __future__ import annotations

import pytest

from tether.health.contradiction_units import (
    Unit,
    read_units,
    same_unit,
    same_value,
    slots_differ,
)
from tether.types import Chunk, DocMeta
from tether.verify.stems import content_stem


def _units(text: str, title: str = "Policy", heading: tuple[str, ...] = ("Rules",)) -> list[Unit]:
    body = "# Heading\n\n" + text
    meta = DocMeta(doc_id="d", version="1", title=title)
    chunk = Chunk(chunk_id="c", meta=meta, text=body, heading_path=heading, start=0,
                  end=len(body), ordinal=0)  # fmt: skip
    return read_units(chunk)


def _one(text: str) -> Unit:
    (unit,) = _units(text)
    return unit


def _slot(text: str, n: int = 0) -> tuple[str, float]:
    s = _one(text).slots[n]
    return s.unit, s.value


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("A standard laptop loan lasts two weeks.", "Standard loans last 14 days."),
        ("Outage credits apply after 48 consecutive hours.", "Credits apply after 2 days."),
        ("As a student, your CalderDrive space is 1024 GB.", "Every student gets 1 TB of storage."),
        ("As a student, your CalderDrive space is 1000 GB.", "Every student gets 1 TB of storage."),
        ("Passwords need twelve or more characters.", "Passwords must be at least 12 characters."),
        ("The fee is twenty-one dollars per month here.", "The fee is $21 per month here."),
        ("The height barrier is 2.1 metres high.", "Vans under 210 cm high fit under the barrier."),
        ("Branches up to six inches thick are fine.", "Branches up to 15 cm thick are fine."),
    ],
)
def test_one_value_said_two_ways_reads_the_same(a: str, b: str) -> None:
    x, y = _one(a).slots[0], _one(b).slots[0]
    assert same_unit(x, y) and same_value(x, y), (x, y)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Passwords must be at least 14 characters long.", "Passwords need twelve characters."),
        (
            "Accounts lock after 10 failed sign-in attempts.",
            "Accounts lock after 5 failed attempts.",
        ),
        ("A single-sided colour A4 page costs 30p.", "A colour page costs £0.20 to print."),
        ("Backups are kept for 90 days in all.", "Snapshots older than sixty days are deleted."),
        ("Branches must be no thicker than 10 cm.", "Branches up to six inches thick are fine."),
        ("Hedges may be 2 metres tall.", "Hedges may be six feet tall."),
    ],
)
def test_other_values_of_one_unit_differ(a: str, b: str) -> None:
    x, y = _one(a).slots[0], _one(b).slots[0]
    assert same_unit(x, y) and not same_value(x, y), (x, y)


def test_units_that_are_not_one_kind_are_not_compared() -> None:
    days = _one("Book visits within 5 working days of the order.").slots[0]
    plain = _one("Book visits within 5 days of the order.").slots[0]
    pin = _one("Your print release PIN is locked after 3 wrong entries.").slots[0]
    sign_in = _one("An account is locked after 10 failed sign-in attempts.").slots[0]
    assert days.unit == "wday" and plain.unit != "wday"
    assert not same_unit(days, plain)
    assert pin.unit == "#entri" and not same_unit(pin, sign_in)


def test_money_and_shown_text() -> None:
    assert _slot("The early-termination fee is $150 in all cases.") == ("$", 150.0)
    assert _slot("Undergraduate students receive £15 of printing credit.") == ("$", 15.0)
    unit = _one("Book installation visits no later than 3 working days after the order.")
    assert unit.slots[0].shown == "3 working days"
    assert not unit.negative  # "no later than" is a bound, not a negation


def test_a_table_cell_is_bound_to_its_row_and_size() -> None:
    units = _units("| Job | Price per side |\n|---|---|\n| A4 colour | 20p |\n| A3 colour | 40p |")
    rows = [u for u in units if u.slots]
    assert [(u.slots[0].unit, u.slots[0].value) for u in rows] == [("$", 0.2), ("$", 0.4)]
    assert [sorted(u.slots[0].codes) for u in rows] == [["a4"], ["a3"]]


def test_groups_of_people() -> None:
    assert (
        _one("Undergraduate students receive £15 each term.").groups
        != _one("Postgraduate research students receive £40 each term.").groups
    )
    assert (
        _one("As a member of staff you get 5 TB of storage.").groups
        == _one("Staff get 5 TB of storage.").groups
    )
    assert _one("Pine Club members can return items within 90 days.").groups
    assert not _one("Book visits within 5 business days of the order.").groups
    (unit,) = _units("You get 1 TB of storage for coursework.", title="New student IT guide")
    assert unit.title_groups and not unit.groups


def test_holders_adults_and_the_readers_state_name_groups() -> None:
    holders = _one("Access card holders get loans of 6 weeks on books.").groups
    assert {content_stem("access"), content_stem("holders")} <= holders
    assert holders != _one("The standard loan period for books is 21 days.").groups
    assert _one("The adult late fee rose to 30p a day.").groups
    # a card of a group is the group's ("A visitor card does not include e-books" is not
    # said of every card), and one group's card on both sides is one subject
    assert _one("A visitor card does not include e-books.").groups
    assert (
        _one("An adult card lets you borrow up to 25 items.").groups
        == _one("An adult card allows up to 20 items on loan.").groups
    )
    concession = _one("If you have a concession on your card, a page costs 10p.").groups
    assert content_stem("concession") in concession
    assert concession != _one("A page costs 15p.").groups
    # what the reader does, or has done, is a case of the rule, not a group of people
    assert not _one("If you cancel your contract early, a fee of $150 applies.").groups
    assert not _one("If you have lost your card, a new one costs £2.").groups


@pytest.mark.parametrize(
    ("text", "negative"),
    [
        ("Loan laptops cannot be renewed, so bring the laptop back.", True),
        ("Unused data does not roll over: your allowance resets monthly.", True),
        ("Use this procedure when a user cannot reset their own password.", False),
        ("Whatever data you don't use carries over into the next month, on every plan.", False),
        ("Once the holder has passed verification, you can add an authorised person.", False),
        ("We cannot add an authorised person over the phone; the holder must write.", True),
    ],
)
def test_negation_of_the_main_clause_only(text: str, negative: bool) -> None:
    assert _one(text).negative is negative


def test_questions_and_a_readers_problem_are_not_statements() -> None:
    assert _units("My Android phone will not connect to eduroam.") == []
    assert _units("Can I renew a loan laptop for another two weeks?") == []


def test_a_one_letter_prefix_makes_another_word() -> None:
    ebooks = _one("You can place up to 5 holds on e-books.")
    assert content_stem("ebooks") in ebooks.content and content_stem("books") not in ebooks.content
    assert content_stem("ebooks") in ebooks.slots[0].near
    assert content_stem("ebooks") not in _one("Books are lent for 3 weeks.").content


def test_the_words_that_qualify_a_noun() -> None:
    from tether.health.contradiction_units import modifiers

    assert (
        content_stem("ebooks")
        in modifiers(_one("You can place up to 5 holds on e-books."))[content_stem("holds")]
    )
    assert (
        content_stem("computer")
        in modifiers(_one("Computer bookings are released."))[content_stem("bookings")]
    )
    assert content_stem("bookings") not in modifiers(_one("Bookings are released."))


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("The pool opens to members from 06:45 on weekdays.", 405),
        ("The pool opens to members from a quarter to seven in the morning.", 405),
        ("Lane swimming ends at 5.30pm on Fridays.", 1050),
        ("Lane swimming ends at half past five in the evening on Fridays.", 1050),
        ("Accept the pass on any journey starting at or after 9 o'clock in the morning.", 540),
        ("The car park closes at midnight every day.", 0),
        ("Late returns are accepted until noon on the next day.", 720),
        ("Doors open at 12am for the new year swim.", 0),
    ],
)
def test_a_time_of_day_reads_as_minutes_after_midnight(text: str, minutes: int) -> None:
    clocks = [s for s in _one(text).slots if s.unit == "clock"]
    assert [s.value for s in clocks] == [minutes]


def test_what_is_not_a_time_of_day() -> None:
    assert not [s for s in _one("A day pass costs £9.30 at the desk.").slots if s.unit == "clock"]
    stamp = _one("This page was last modified on 2022-08-10 18:45:48 UTC by the editors.")
    assert not [s for s in stamp.slots if s.unit == "clock"]
    # "at or after" is one bound: the words before it are still the number's
    near = _one("Accept the pass on any journey starting at or after 9 o'clock.").slots[0].near
    assert content_stem("journey") in near


def test_a_number_names_its_own_group_and_named_thing() -> None:
    both = _one("The full fare is £60 for an adult and £25 for a child aged 5 to 15.").slots
    assert [sorted(s.groups) for s in both[:2]] == [
        [content_stem("adult")],
        [content_stem("child")],
    ]
    units = _units("| Passenger | Full fare | Reduced fare |\n|---|---|---|\n| Adult | £50 | £25 |")
    (row,) = [u for u in units if u.slots]
    assert all(content_stem("adult") in s.groups for s in row.slots)
    gold = _one("A replacement Gold Card costs £5 at reception.").slots[0]
    silver = _one("A replacement Silver Pass costs £10 at reception.").slots[0]
    assert gold.names == {"gold", "card"} and silver.names == {"silver", "pass"}
    assert slots_differ(gold, silver) is True
    assert slots_differ(both[0], row.slots[0]) is False  # an adult's price on both sides
    plain = _one("A replacement card costs £10 at reception.").slots[0]
    assert slots_differ(gold, plain) is None  # the numbers alone do not say


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("Lost items are kept at reception for 30 days.", "hold"),
        ("Once we tell you it is ready, you have 7 days to collect it.", "hold"),
        ("Anything left unclaimed after 20 days is donated to charity.", "end"),
        ("Recordings older than sixty days are deleted every night.", "end"),
        ("A day pass is valid for 30 days from the date you buy it.", ""),
    ],
)
def test_a_retention_period_is_read_from_either_end(text: str, role: str) -> None:
    assert _one(text).slots[0].role == role


def test_a_contrast_a_prefix_an_anaphor_and_a_list_are_no_rules() -> None:
    contrast = _one("Passes start on the day you first use them, not the day you buy them.")
    assert not contrast.negative
    assert _one("Passes do not start on the day you buy them.").negative
    non = _one("Non-members cannot use the non-folding racks.")
    assert content_stem("folding") not in non.stems
    anaphor = _one("We can freeze a membership, but we cannot do this for a guest pass.")
    assert all(rule[0] >= 0 for rule in anaphor.rules)
    assert _one("Do not issue a refund to:").rules == ()
    listed = _one("Members are welcome at every centre, including the climbing wall at Hartley.")
    assert len(listed.rules) == 1  # "including ..." is the clause's own object


def test_a_numbered_heading_holds_no_value() -> None:
    assert not _one("2. Creating partial indexes for the reports").slots
    assert _one("Allow 2 hours for the induction.").slots


def test_template_lines_boilerplate_and_commands_are_not_compared() -> None:
    from tether.health.contradictions import _without_templates

    def doc(n: int, sentence: str) -> list[Unit]:
        text = f"# Page\n\n{sentence}"
        meta = DocMeta(doc_id=f"d{n}", version="1", title="Page")
        chunk = Chunk(chunk_id=f"c{n}", meta=meta, text=text, heading_path=("Page",), start=0,
                      end=len(text), ordinal=0)  # fmt: skip
        return read_units(chunk)

    footers = [
        u for n in range(5) for u in doc(n, f"Last modified on 2022-0{n + 1}-10 1{n}:45 UTC.")
    ]
    assert len(footers) == 5 and _without_templates(footers) == []
    # one fact in several documents with one value changed (a planted contradiction) stays
    fact = [u for n in range(5) for u in doc(n, f"A swim lesson costs £{7 if n else 9}.")]
    assert len(_without_templates(fact)) == 5
    shared = [u for n in range(6) for u in doc(n, "Everything below this line is included.")]
    assert _without_templates(shared) == []
    assert _without_templates(doc(9, "$ git diff HEAD <3>")) == []


def test_an_aside_a_name_and_no_x_allowed() -> None:
    units = _units("| Activity | Standard |\n|---|---|\n| Spin class (up to 45 minutes) | £6.50 |")
    (row,) = [u for u in units if u.slots]
    assert row.slots[0].label == {content_stem("spin"), content_stem("class")}
    assert not _one("The Junior Climbing Club meets on Saturdays at 10:00.").groups
    assert _one("Junior members may climb on Saturdays at 10:00.").groups
    assert _one("No dogs are allowed in the changing rooms.").rules[0][0] == -1


def test_a_bare_number_in_a_table_counts_the_noun_its_column_names() -> None:
    table = (
        "| Vehicle | Visits allowed per permit | Notes |\n|---|---|---|\n"
        "| Car-derived van | 12 | No height limit |"
    )
    cells = [s for u in _units(table) for s in u.slots]
    prose = _one("The permit allows up to 10 visits during that time.").slots[0]
    assert [c.unit for c in cells] == ["#" + content_stem("visits")] == [prose.unit]
    assert same_unit(cells[0], prose) and not same_value(cells[0], prose)


def test_a_number_whose_clause_names_nothing_is_bound_to_the_sentences_earlier_words() -> None:
    """In "We change the lock and charge you £65" the number's clause ("charge you") holds no
    content word; the sentence's earlier clause names what it is said of."""
    slot = _one("We change the lock and charge you £65, whatever time of day you call.").slots[0]
    assert {content_stem("change"), content_stem("lock")} <= slot.near
    plain = _one("The locksmith comes within the hour and charges £65 for the visit.").slots[0]
    assert content_stem("change") not in plain.near  # a clause with words keeps its own
