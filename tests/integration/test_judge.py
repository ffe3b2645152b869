"""The claim judge: alignment details by error class (EN and FR), computed claims, statements,
the learned judge's model file, its second opinion and its training command.

Each error class has a wrong claim that must carry the flag naming its detail (remove that
check and the test fails) and, beside it, a true claim on the same passage that must pass.
Passages are written here; the judge is the model shipped in the repository.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.types import Answer, Chunk, Claim, ClaimCheck, Context, DocMeta, Passage
from tether.verify.align import align, is_statement
from tether.verify.check import check_answer
from tether.verify.learned import MODEL_PATH, AlignmentJudge, load_model

JUDGE = AlignmentJudge()


def chunk(text: str, language: str = "en", n: int = 0, heading: str = "Rules") -> Chunk:
    """A public passage of its own document."""
    meta = DocMeta(
        doc_id=f"doc{n}", version="1", title="Policy", access="public", language=language
    )
    return Chunk(
        chunk_id=f"c{n}",
        meta=meta,
        text=text,
        heading_path=(heading,),
        start=0,
        end=len(text),
        ordinal=0,
    )


def check(
    claim: str,
    *passages: str,
    language: str = "en",
    question: str = "",
    judge: object = JUDGE,
    cited: Sequence[int] | None = None,
    passage_language: str | None = None,
) -> ClaimCheck:
    """The one claim checked against `passages` (all cited unless `cited` says which)."""
    chunks = [chunk(t, passage_language or language, i) for i, t in enumerate(passages)]
    ids = tuple(chunks[i].chunk_id for i in (cited if cited is not None else range(len(chunks))))
    context = Context(tuple(Passage(c, "", 0, i + 1) for i, c in enumerate(chunks)))
    answer = Answer(True, claim, (Claim(claim, ids),))
    (result,) = check_answer(
        answer, None, context, question, audience="public", language=language, judge=judge
    )
    return result


def kinds(result: ClaimCheck) -> set[str]:
    return {f.kind for f in result.flags}


FARES = (
    "Fare type | Single ride | Day pass | Monthly pass\n\nAdult | $2.75 | $7.50 | $90\n\n"
    "Student | $2.00 | $5.50 | $60\n\nSenior | $1.50 | $4.00 | $45"
)
TARIFS = (
    "Type de tarif | Passage simple | Laissez-passer d'un jour\n\nAdulte | 2,75 $ | 7,50 $\n\n"
    "Étudiant | 2,00 $ | 5,50 $\n\nAîné | 1,50 $ | 4,00 $"
)
RENEW = "You can renew an item three times, unless another member has placed a hold on it."
RENOUVELER = "Vous pouvez renouveler un document trois fois, sauf si un autre membre l'a réservé."


# ------------------------------------------------------------------ error classes, EN and FR


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        ("Students pay $2.75 for a single ride.", FARES, "en"),
        ("Pour un étudiant, un passage simple coûte 2,75 $.", TARIFS, "fr"),
    ],
)
def test_a_number_from_another_row_is_named_with_the_row(claim, passage, language) -> None:
    result = check(claim, passage, language=language)
    assert "number_in_other_row" in kinds(result), result.flags
    detail = next(d for d in result.details if d.kind == "cell")
    assert "2" in detail.claim and ("Student" in detail.evidence or "Étudiant" in detail.evidence)


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        ("Students pay $2.00 for a single ride.", FARES, "en"),
        ("Pour un étudiant, un passage simple coûte 2,00 $.", TARIFS, "fr"),
    ],
)
def test_the_right_cell_passes(claim, passage, language) -> None:
    assert check(claim, passage, language=language).ok


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        ("A student single ride costs $5.50.", FARES, "en"),
        ("Un passage simple pour étudiant coûte 5,50 $.", TARIFS, "fr"),
    ],
)
def test_a_number_from_another_column_is_flagged(claim, passage, language) -> None:
    flags = kinds(check(claim, passage, language=language))
    assert flags & {"number_in_other_row", "number_in_other_column"}, flags


@pytest.mark.parametrize(
    ("wrong", "right", "passage", "language", "word"),
    [
        (
            "You can only renew DVDs.",
            "You can renew an item three times unless another member has placed a hold on it.",
            RENEW,
            "en",
            "only",
        ),
        (
            "You can always renew an item three times unless another member has placed a hold.",
            "You can renew an item three times unless another member has placed a hold.",
            RENEW,
            "en",
            "always",
        ),
        (
            "Vous pouvez toujours renouveler un document trois fois, sauf s'il est réservé.",
            "Vous pouvez renouveler un document trois fois, sauf si un autre membre l'a réservé.",
            RENOUVELER,
            "fr",
            "toujours",
        ),
        (
            "Un document peut être renouvelé au moins trois fois, sauf s'il est réservé.",
            "Un document peut être renouvelé trois fois, sauf si un autre membre l'a réservé.",
            RENOUVELER,
            "fr",
            "au moins",
        ),
    ],
)
def test_an_added_quantifier_is_named(wrong, right, passage, language, word) -> None:
    result = check(wrong, passage, language=language)
    assert f"quantifier_mismatch:{word}" in result.flags, result.flags
    assert check(right, passage, language=language).ok


@pytest.mark.parametrize(
    ("claim", "passage", "language", "cue"),
    [
        ("You can renew an item three times.", RENEW, "en", "unless"),
        ("Vous pouvez renouveler un document trois fois.", RENOUVELER, "fr", "sauf si"),
    ],
)
def test_a_dropped_condition_is_named_and_quoted(claim, passage, language, cue) -> None:
    result = check(claim, passage, language=language)
    assert "condition_dropped" in kinds(result), result.flags
    detail = next(d for d in result.details if d.kind == "condition")
    assert detail.evidence.lower().startswith(cue)


def test_a_condition_the_question_meets_is_not_dropped() -> None:
    passage = "If the item comes back dirty, we may deduct a restocking fee of up to 15%."
    question = "My tent came back dirty. What can you deduct?"
    assert check("A restocking fee of up to 15% can be deducted.", passage, question=question).ok


@pytest.mark.parametrize(
    ("wrong", "right", "passage", "language"),
    [
        (
            "Parking costs $4 per hour.",
            "Parking costs $4 per day.",
            "Parking in the north lot costs $4 per day.",
            "en",
        ),
        (
            "Le stationnement coûte 4 $ par heure.",
            "Le stationnement coûte 4 $ par jour.",
            "Le stationnement du lot nord coûte 4 $ par jour.",
            "fr",
        ),
    ],
)
def test_a_wrong_period_is_named(wrong, right, passage, language) -> None:
    assert "period_mismatch" in kinds(check(wrong, passage, language=language))
    assert check(right, passage, language=language).ok


@pytest.mark.parametrize(
    ("wrong", "right", "passage", "language"),
    [
        (
            "You can renew an item four times unless another member has placed a hold on it.",
            "You can renew an item three times unless another member has placed a hold on it.",
            RENEW,
            "en",
        ),
        (
            "Books can be borrowed for three weeks.",
            "Books can be borrowed for four weeks.",
            "Books and audiobooks can be borrowed for 28 days.",
            "en",
        ),
        (
            "Les livres peuvent être empruntés pendant trois semaines.",
            "Les livres peuvent être empruntés pendant quatre semaines.",
            "Les livres peuvent être empruntés pendant 28 jours.",
            "fr",
        ),
    ],
)
def test_numbers_written_as_words_are_checked(wrong, right, passage, language) -> None:
    assert "number_not_found" in kinds(check(wrong, passage, language=language))
    assert check(right, passage, language=language).ok


@pytest.mark.parametrize(
    ("wrong", "right", "passage", "language"),
    [
        (
            "The threshold is counted after tax.",
            "The threshold is counted before tax.",
            "The $100 free-shipping threshold is counted before tax.",
            "en",
        ),
        (
            "La navette part du terminal sud.",
            "La navette part du terminal nord.",
            "La navette part du terminal nord toutes les 20 minutes.",
            "fr",
        ),
    ],
)
def test_an_opposite_word_is_named(wrong, right, passage, language) -> None:
    assert "opposite_word" in kinds(check(wrong, passage, language=language))
    assert check(right, passage, language=language).ok


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        (
            "Overdue fines are charged on DVDs.",
            "The library no longer charges overdue fines on any item.",
            "en",
        ),
        ("Items can be renewed online.", "Items cannot be renewed online.", "en"),
        ("Le traversier ouvre le dimanche.", "Le traversier n'ouvre plus le dimanche.", "fr"),
        ("Les vélos sont acceptés à bord.", "Les vélos ne sont pas acceptés à bord.", "fr"),
    ],
)
def test_a_flipped_negation_is_flagged(claim, passage, language) -> None:
    assert "negation_mismatch" in kinds(check(claim, passage, language=language))


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        (
            "Bikes are allowed on every sailing.",
            "Bikes are allowed only on off-peak sailings.",
            "en",
        ),
        (
            "Les vélos sont acceptés sur tous les départs.",
            "Les vélos ne sont acceptés que sur les départs hors pointe.",
            "fr",
        ),
    ],
)
def test_ne_que_and_only_restrict(claim, passage, language) -> None:
    assert kinds(check(claim, passage, language=language)) & {
        "quantifier_mismatch",
        "condition_dropped",
        "word_not_found",
        "not_entailed",
    }


@pytest.mark.parametrize(
    ("claim", "passages", "language"),
    [
        (
            "The Cedar Room seats 80 people.",
            ("The Cedar Room seats 12 people. The Maple Hall seats 80 people.",),
            "en",
        ),
        (
            "Une page en couleur coûte 0,15 $.",
            ("Impression noir et blanc : 0,15 $ la page; couleur : 0,50 $ la page.",),
            "fr",
        ),
    ],
)
def test_a_number_bound_to_another_subject_is_named(claim, passages, language) -> None:
    """Conflation: the claim's number belongs to another subject of its evidence. The detail
    is named by the alignment (a feature of the judge, and a flag when the judge rejects)."""
    from tether.verify.passages import VerifierCache
    from tether.verify.reading import claim_info

    cache = VerifierCache()
    preps = [cache.prepare(chunk(t, language, i)) for i, t in enumerate(passages)]
    aligned = align(claim_info(claim, language), claim, preps)
    assert aligned.features["numbers_unbound"] >= 1
    assert any(d.kind == "number" for d in aligned.details)


@pytest.mark.parametrize(
    ("claim", "passage", "language"),
    [
        (
            "Bikes can be rented at the south terminal for $3 per hour with a helmet included.",
            "Bikes can be rented at the north terminal for $3 per hour.",
            "en",
        ),
        (
            "Les vélos se louent 3 $ l'heure avec un casque et un cadenas fournis gratuitement.",
            "Les vélos se louent 3 $ l'heure au terminal nord.",
            "fr",
        ),
    ],
)
def test_an_invented_detail_is_named_when_the_judge_rejects(claim, passage, language) -> None:
    result = check(claim, passage, language=language)
    assert not result.ok
    assert kinds(result) & {"word_not_found", "not_entailed", "opposite_word"}, result.flags


# ------------------------------------------------------------------------- computed claims


@pytest.mark.parametrize(
    ("right", "wrong", "passage", "language"),
    [
        (
            "Two adult single rides cost $5.50.",
            "Two adult single rides cost $6.00.",
            "Adult single ride: $2.75.",
            "en",
        ),
        (
            "Deux passages simples pour adulte coûtent 5,50 $.",
            "Deux passages simples pour adulte coûtent 6,00 $.",
            "Passage simple adulte : 2,75 $.",
            "fr",
        ),
        (
            "A single ride and a day pass cost $10.25 in total.",
            "A single ride and a day pass cost $10.75 in total.",
            "Single ride: $2.75. Day pass: $7.50.",
            "en",
        ),
        (
            "An item borrowed on 1 March 2026 is due on 29 March 2026.",
            "An item borrowed on 1 March 2026 is due on 30 March 2026.",
            "Books can be borrowed for 28 days.",
            "en",
        ),
    ],
)
def test_computed_claims_are_computed(right, wrong, passage, language) -> None:
    assert "number_not_found" not in kinds(check(right, passage, language=language))
    assert "number_not_found" in kinds(check(wrong, passage, language=language))


# ------------------------------------------------------------------------------ statements


@pytest.mark.parametrize(
    "text",
    [
        "How long do refunds take?",
        "Comment obtenir un remboursement ?",
        "Rules",
        "Policy",
        "What is the deposit",
    ],
)
def test_a_question_heading_or_title_is_not_a_statement(text) -> None:
    result = check(text, "Refunds take 14 days.")
    assert "not_a_statement" in result.flags and not result.ok
    assert not is_statement(text, ["Rules", "Policy"])


@pytest.mark.parametrize(
    "text", ["Refunds take 14 days.", "Cash, debit and credit cards.", "Yes.", "14 jours."]
)
def test_statements_and_short_answers_are_statements(text) -> None:
    assert is_statement(text, ["Rules"])


def test_a_heading_quoted_is_flagged_even_without_a_judge() -> None:
    assert (
        "not_a_statement"
        in check("How long does delivery take?", "Refunds take 14 days.", judge=None).flags
    )


# --------------------------------------------------------------------- the model and judge


def test_the_shipped_model_loads_offline_and_is_small() -> None:
    model = load_model()
    assert MODEL_PATH.stat().st_size < 50_000
    assert model.features and 0.0 < model.threshold < 1.0
    assert model.trained["pairs"] > 1000


def test_a_damaged_model_file_says_how_to_rebuild_it(tmp_path: Path) -> None:
    bad = tmp_path / "judge_model.json"
    bad.write_text(json.dumps({"features": ["a"], "mean": [], "scale": [], "weights": []}))
    with pytest.raises(TetherError, match="judge_training"):
        load_model(bad)


def test_true_claims_score_higher_than_wrong_ones() -> None:
    right = check("Books can be borrowed for 28 days.", "Books can be borrowed for 28 days.")
    wrong = check(
        "Books can be borrowed for 28 days by anyone with a premium card.",
        "Books can be borrowed for 28 days.",
    )
    assert right.ok and right.entailment is not None and wrong.entailment is not None
    assert right.entailment > wrong.entailment


class _Second:
    name = "second"

    def __init__(self, value: float) -> None:
        self.value, self.calls = value, 0

    def score(self, claim: str, passages: Sequence[str]) -> float:
        self.calls += 1
        return self.value


def test_the_second_opinion_is_asked_only_inside_its_band() -> None:
    second = _Second(0.0)
    judge = AlignmentJudge(second=second, band=(0.0, 1.01))  # asked: it fails the claim
    assert not check(
        "Books can be borrowed for 28 days.", "Books can be borrowed for 28 days.", judge=judge
    ).ok
    assert second.calls == 1
    never = _Second(0.0)
    judge = AlignmentJudge(second=never, band=(0.0, 0.0))
    assert check(
        "Books can be borrowed for 28 days.", "Books can be borrowed for 28 days.", judge=judge
    ).ok
    assert never.calls == 0
    flagged = _Second(1.0)  # a claim a rule flags is not worth a model call
    judge = AlignmentJudge(second=flagged, band=(0.0, 1.01))
    assert not check("You can only renew DVDs.", RENEW, judge=judge).ok
    assert flagged.calls == 0


def test_the_judge_protocol_score_reads_plain_passages() -> None:
    high = JUDGE.score("Books can be borrowed for 28 days.", ["Books can be borrowed for 28 days."])
    low = JUDGE.score(
        "Parking is free at the south lot for staff only.", ["Books can be borrowed for 28 days."]
    )
    assert high > low


def test_a_claim_in_another_language_than_its_passages_is_left_to_the_cross_language_test() -> None:
    result = check(
        "Les livres peuvent être empruntés pendant 28 jours.",
        "Books can be borrowed for 28 days.",
        language="fr",
        passage_language="en",
    )
    assert result.entailment is None  # the learned judge reads words: it does not cross languages


@pytest.mark.slow
def test_training_rebuilds_a_model_in_one_command(tmp_path: Path) -> None:
    from tether.evaluation.judge_training import main
    from tether.evaluation.questions import demo_collection

    out = tmp_path / "model.json"
    assert (
        main(
            [
                "--out",
                str(out),
                "--collection",
                str(demo_collection()),
                "--max-pairs-per-collection",
                "400",
            ]
        )
        == 0
    )
    model = load_model(out)
    assert model.trained["pairs"] == 400 and model.features == load_model().features
