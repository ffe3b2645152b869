"""The close check of the contradiction finder (`tether.health.contradiction_checks`)
without a model: two sentences of different documents that share most words, one negating
what the other states, are a rule conflict; a negation said of a narrower case (the rest of
its clause names what the other sentence does not) is not."""

from __future__ import annotations

from tether.health.contradiction_checks import check_close
from tether.health.contradiction_units import Unit, read_units
from tether.types import Chunk, DocMeta
from tether.verify.passages import VerifierCache


def _unit(doc_id: str, text: str) -> Unit:
    body = f"# Rules\n\n{text}"
    meta = DocMeta(doc_id=doc_id, version="1", title="Charges")
    chunk = Chunk(chunk_id=f"{doc_id}#1", meta=meta, text=body, heading_path=("Rules",),
                  start=0, end=len(body), ordinal=0)  # fmt: skip
    return read_units(chunk)[0]


def test_a_negation_of_what_the_other_states_is_a_rule_conflict() -> None:
    a = _unit("a", "Late fees are charged on items borrowed with a library card.")
    b = _unit("b", "No late fees are charged on items borrowed with a library card.")
    found = check_close(a, b, 0.95, VerifierCache())
    assert found is not None and found[0].kind == "rule"


def test_a_negation_said_of_a_narrower_case_is_not_a_rule_conflict() -> None:
    a = _unit("a", "The system works out late fees automatically when an item is checked in.")
    b = _unit("b", "There are no late fees on items borrowed with an Access card.")
    assert check_close(a, b, 0.95, VerifierCache()) is None


def test_an_instruction_after_the_denied_clause_does_not_hide_the_conflict() -> None:
    a = _unit("a", "Old paint tins are accepted at Hollow Road, in the bay beside the oil bank.")
    b = _unit("b", "Old paint tins are not accepted at Hollow Road; please take them to Eastgate.")
    found = check_close(a, b, 0.93, VerifierCache())
    assert found is not None and found[0].kind == "rule"
    # the same sentence with its foreign words in the denied clause itself says another thing
    c = _unit("c", "Old paint tins from Eastgate traders are not accepted at Hollow Road.")
    assert check_close(a, c, 0.93, VerifierCache()) is None


def test_a_price_for_households_on_a_named_benefit_is_another_group() -> None:
    a = _unit("a", "A bulky waste collection of up to three items costs £40.")
    b = _unit("b", "If someone in your household gets Pension Credit, a bulky waste collection of "
                   "up to three items costs £20.")  # fmt: skip
    assert b.groups and check_close(a, b, 0.95, VerifierCache()) is None
    c = _unit("c", "A bulky waste collection of up to three items costs £45.")
    found = check_close(a, c, 0.95, VerifierCache())
    assert found is not None and found[0].kind == "number"
