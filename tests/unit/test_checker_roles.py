"""The citation checker against in-memory fakes of the store's roles (`tests/fakes.py`): the
exact checks (cited, known, shown, allowed, numbers) need no index and no model, so they are
tested here in milliseconds; tests/integration/test_verify.py holds the same rules on a real
index."""

from __future__ import annotations

from fakes import FakeSearchable, chunk

from tether.protocols import SearchableStore
from tether.types import Answer, Chunk, Claim, ClaimCheck, Context, Passage
from tether.verify.check import check_answer

WINDOW = chunk("w1", "You can return most items within 45 days of delivery.", "returns-policy")
FAQ = chunk("f1", "Returns are free for members.", "help-faq")
MEMO = chunk("m1", "Staff may extend the window to 60 days for damaged items.", "memo",
             access="staff")  # fmt: skip
STORE = FakeSearchable([WINDOW, FAQ, MEMO])


def check(text: str, cited: list[str], shown: list[Chunk], audience: str = "public") -> ClaimCheck:
    context = Context(tuple(Passage(c, f"[{c.chunk_id}]", 0, i) for i, c in enumerate(shown, 1)))
    answer = Answer(True, text, (Claim(text, tuple(cited)),))
    (result,) = check_answer(answer, STORE, context, "", audience=audience, language="en")
    return result


def test_the_fake_plays_the_role_the_checker_asks_for():
    assert isinstance(STORE, SearchableStore)


def test_a_claim_copied_from_its_passage_passes():
    result = check("You can return most items within 45 days.", ["w1"], [WINDOW])
    assert result.ok, result.flags


def test_a_claim_that_cites_nothing_or_an_unknown_id_is_flagged():
    assert check("You can return most items within 45 days.", [], [WINDOW]).flags == (
        "no_citation",
    )
    result = check("You can return most items within 45 days.", ["w1", "nope"], [WINDOW])
    assert result.flags == ("missing_id:nope",)


def test_a_passage_the_model_was_not_shown_is_flagged():
    result = check("You can return most items within 45 days.", ["w1"], [FAQ])
    assert result.flags == ("not_in_context:w1",)


def test_a_staff_passage_is_not_allowed_for_a_public_reader():
    text = "Staff may extend the window to 60 days for damaged items."
    assert "not_allowed" in [f.split(":")[0] for f in check(text, ["m1"], [MEMO]).flags]
    assert check(text, ["m1"], [MEMO], audience="staff").ok


def test_a_number_the_passage_does_not_hold_is_flagged():
    result = check("You can return most items within 30 days.", ["w1"], [WINDOW])
    assert any(f.startswith("number_not_found") for f in result.flags), result.flags
