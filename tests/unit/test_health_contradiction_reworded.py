"""The reworded check of the contradiction finder (`tether.health.contradiction_reworded`)
without a model: sentences of two documents are read as the finder reads them and given a
cosine by hand (the index's sentence vectors give it in use). A number of one unit with
another value, or the opposite polarity on one subject, is a contradiction; the same value
said otherwise, different groups of people, a document that states both values, another
table row, and a pair whose subjects differ are not."""

from __future__ import annotations

from tether.health.contradiction_reworded import (
    Corpus,
    check_reworded,
    number_features,
    rule_features,
)
from tether.health.contradiction_units import Unit, read_units
from tether.types import Chunk, Contradiction, DocMeta

FILLER = [
    "Our stores open at nine in the morning on weekdays.",
    "Printed receipts are available at the customer desk.",
    "Parking is free for the first hour at every store.",
    "Gift cards are sold in amounts from ten dollars.",
]


def _check(a: Unit, b: Unit, cosine: float, corpus: Corpus) -> Contradiction | None:
    """The check with the chunks as close as the sentences."""
    found = check_reworded(a, b, cosine, cosine, corpus)
    return None if found is None else found[0]


def _doc(doc_id: str, text: str, title: str = "Policy", heading: str = "Rules") -> list[Unit]:
    body = f"# {heading}\n\n{text}"
    meta = DocMeta(doc_id=doc_id, version="1", title=title)
    chunk = Chunk(chunk_id=f"{doc_id}#1", meta=meta, text=body, heading_path=(heading,),
                  start=0, end=len(body), ordinal=0)  # fmt: skip
    return read_units(chunk)


def _pair(
    a: str, b: str, *, a_title: str = "Policy", b_title: str = "Guide", a_more: str = ""
) -> tuple[Unit, Unit, Corpus]:
    ua = _doc("a", f"{a} {a_more}".strip(), a_title)
    ub = _doc("b", b, b_title)
    filler = [u for n, t in enumerate(FILLER) for u in _doc(f"f{n}", t)]
    corpus = Corpus.build([*ua, *ub, *filler])
    return ua[0], ub[0], corpus


def test_a_reworded_number_conflict_is_found_with_both_quotes() -> None:
    a, b, corpus = _pair(
        "If you cancel before the minimum term is over, an early-termination fee of $150 applies.",
        "Leaving during the minimum term costs a flat $200 early-termination charge.",
    )
    found = _check(a, b, 0.9, corpus)
    assert found is not None and found.kind == "number"
    assert found.detail == "$150 against $200"
    assert found.a.doc_id == "a" and "$150" in found.a.text and "$200" in found.b.text


def test_the_same_value_in_other_words_is_not_a_contradiction() -> None:
    a, b, corpus = _pair(
        "You can cancel at no cost within 14 days of activation.",
        "You have two weeks from activation to cancel at no cost.",
    )
    assert number_features(a, b, 0.95, 0.95, corpus) is None
    assert _check(a, b, 0.95, corpus) is None


def test_different_groups_of_people_are_not_one_subject() -> None:
    a, b, corpus = _pair(
        "Undergraduate students receive £15 of printing credit each term.",
        "Postgraduate research students receive £40 of printing credit each term.",
    )
    # the numbers name their groups ("undergraduate", "postgraduate"): never one slot
    assert number_features(a, b, 0.95, 0.95, corpus) is None
    assert _check(a, b, 0.95, corpus) is None
    a, b, corpus = _pair(
        "You get 1 TB of CalderDrive storage for your coursework.",
        "Every account gets 5 TB of CalderDrive storage for coursework.",
        a_title="New student IT guide",
        b_title="New staff IT guide",
    )
    assert _check(a, b, 0.95, corpus) is None


def test_a_document_that_states_both_values_tells_cases_apart() -> None:
    a, b, corpus = _pair(
        "Offer a 4-hour arrival window for every visit.",
        "Customers get a 2-hour arrival window for visits.",
        a_more="Customers on the accessibility register get a 2-hour arrival window.",
    )
    assert number_features(a, b, 0.95, 0.95, corpus) is None


def test_another_table_row_is_not_the_same_slot() -> None:
    ua = _doc("a", "| Job | Price per side |\n|---|---|\n| A3 colour | 40p |")
    ub = _doc("b", "A single-sided colour A4 page costs 30p.")
    corpus = Corpus.build([*ua, *ub])
    row = next(u for u in ua if u.slots)
    assert number_features(row, ub[0], 0.95, 0.95, corpus) is None


def test_a_rule_said_otherwise_is_a_rule_conflict() -> None:
    a, b, corpus = _pair(
        "A loan laptop can be renewed once for a further week.",
        "Loan laptops cannot be renewed, so bring the laptop back.",
    )
    f = rule_features(a, b, 0.95, 0.95, corpus)
    assert f is not None and f.bound >= 1
    found = _check(a, b, 0.95, corpus)
    assert found is not None and found.kind == "rule" and " against " in found.detail


def test_a_distant_pair_is_not_a_contradiction() -> None:
    a, b, corpus = _pair(
        "Messages larger than 35 MB are rejected by the mail servers.",
        "Files larger than 100 MB cannot be sent to the print queue.",
    )
    assert _check(a, b, 0.84, corpus) is None


def test_a_sentence_with_two_rules_is_read_clause_by_clause() -> None:
    # each side says one thing with a modal and the other with a negated one: the clauses
    # about booking ahead are opposed, though both sentences hold a negative modal
    a, b, corpus = _pair(
        "Lockers must be booked in advance; they cannot be used on a drop-in basis.",
        "Lockers need not be booked in advance; if one is free, a visitor can use it on a"
        " drop-in basis.",
    )
    found = _check(a, b, 0.95, corpus)
    assert found is not None and found.kind == "rule"


def test_two_rules_said_alike_on_both_sides_are_no_conflict() -> None:
    a, b, corpus = _pair(
        "Lockers must be booked in advance; they cannot be used on a drop-in basis.",
        "Lockers must always be booked in advance at the desk; they cannot be used on a"
        " drop-in basis.",
    )
    assert rule_features(a, b, 0.95, 0.95, corpus) is None
    assert _check(a, b, 0.95, corpus) is None


def test_an_instruction_not_to_do_what_the_other_states_plainly_is_a_rule_conflict() -> None:
    a, b, corpus = _pair(
        "If you find a lost item and bring it back within a month, we refund the replacement cost.",
        "Do not refund a replacement cost when a lost item is found later; the payment stands.",
    )
    found = _check(a, b, 0.95, corpus)
    assert found is not None and found.kind == "rule"


def test_an_instruction_about_another_thing_than_the_plain_statement_is_not() -> None:
    a, b, corpus = _pair(
        "We refund the replacement cost of a lost item that is found.",
        "Do not refund the processing fee for a damaged cover.",
    )
    assert _check(a, b, 0.95, corpus) is None


def test_a_price_for_readers_in_a_state_the_other_does_not_name_is_not_a_conflict() -> None:
    a, b, corpus = _pair(
        "If you have a concession on your card, a black and white page costs 10p.",
        "A black and white page costs 15p.",
    )
    assert _check(a, b, 0.95, corpus) is None
    # what the reader does is a case of one rule: the two prices still conflict
    a, b, corpus = _pair(
        "If you print at the desk, a black and white page costs 10p.",
        "A black and white page costs 15p.",
    )
    found = _check(a, b, 0.95, corpus)
    assert found is not None and found.detail == "10p against 15p"


def test_a_kind_that_one_document_is_about_and_the_other_never_names_is_another_thing() -> None:
    # "Computer bookings" in a computer policy against "Bookings" in a room booking policy
    a, b, corpus = _pair(
        "Computer bookings that are not claimed within 10 minutes of the start are released.",
        "Bookings that are not claimed within 15 minutes of the start are released.",
        a_title="Using the public computers",
        b_title="Booking study rooms",
    )
    f = number_features(a, b, 0.95, 0.95, corpus)
    assert f is not None and f.kind == "comput"
    assert _check(a, b, 0.95, corpus) is None


def test_a_qualifier_the_document_is_not_about_still_conflicts() -> None:
    # "single-sided" is no subject of the printing guide; "new" names no kind of its own
    a, b, corpus = _pair(
        "A single-sided colour page costs 30p.",
        "A colour page costs 20p.",
        a_title="How to print",
        b_title="Printing policy",
    )
    found = _check(a, b, 0.95, corpus)
    assert found is not None and found.detail == "30p against 20p"
    a, b, corpus = _pair(
        "Your new password needs twelve or more characters.",
        "Passwords must be at least 14 characters long.",
        a_title="IT guide for new students",
        b_title="Password policy",
    )
    found = _check(a, b, 0.95, corpus)
    assert found is not None and found.kind == "number"


def test_two_instructions_for_two_options_are_no_rule_conflict() -> None:
    # a manual's options: each tells the reader to do its own thing
    a, b, corpus = _pair(
        "Do not show any source or destination prefix in the output.",
        "Show the given source prefix in the output instead of the default one.",
    )
    assert rule_features(a, b, 0.95, 0.95, corpus) is None
    assert _check(a, b, 0.95, corpus) is None


def test_a_table_cell_and_prose_for_the_same_group_conflict() -> None:
    ua = _doc("a", "| Passenger | Full fare | Reduced fare |\n|---|---|---|\n| Adult | £50 | £25 |")
    ub = _doc("b", "The full fare is £60 for an adult and £25 for a child aged 5 to 15.")
    corpus = Corpus.build([*ua, *ub])
    row = next(u for u in ua if u.slots)
    f = number_features(row, ub[0], 0.93, 0.93, corpus)
    assert f is not None and not f.groups and f.detail == "£50 against £60"


def test_numbers_said_of_two_named_things_are_not_one_slot() -> None:
    a, b, corpus = _pair(
        "A replacement Gold Card costs £5 at any reception desk.",
        "A replacement Silver Pass costs £10 at any reception desk.",
    )
    assert number_features(a, b, 0.95, 0.95, corpus) is None


def test_a_retention_said_from_both_ends_conflicts_when_the_passages_are_close() -> None:
    a, b, corpus = _pair(
        "Lost property is kept at the front desk for four weeks.",
        "Anything still unclaimed after 20 days is donated to the charity shop.",
    )
    f = number_features(a, b, 0.86, 0.90, corpus)
    assert f is not None and {f.x.role, f.y.role} == {"hold", "end"}  # type: ignore[union-attr]
    assert check_reworded(a, b, 0.86, 0.90, corpus) is not None
    assert check_reworded(a, b, 0.86, 0.84, corpus) is None  # passages about other things
    # two holding periods of other things are no retention pair
    a, b, corpus = _pair(
        "Lost property is kept at the front desk for four weeks.",
        "Camera footage is kept for 20 days unless the police ask for it.",
    )
    assert check_reworded(a, b, 0.86, 0.90, corpus) is None
