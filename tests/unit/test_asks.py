"""What a question asks for (`tether.asks`), in English and French, and whether a sentence
gives it."""

from __future__ import annotations

import pytest

from tether.asks import asks, gives


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long does standard delivery take?", "duration"),
        ("How much notice do I need to give?", "duration"),
        ("Quel est le délai de remboursement ?", "duration"),
        ("Combien de temps gardez-vous un colis ?", "duration"),
        ("What is the price of the frame?", "money"),
        ("How much does express delivery cost?", "money"),
        ("Combien coûte la livraison ?", "money"),
        ("What discount do members get?", "percent"),
        ("What is the maximum rider weight for the frame?", "measure"),
        ("Combien pèse la tente ?", "measure"),
        ("How much does the Ridgeline 2 weigh?", "measure"),
        ("How many items can I borrow?", "count"),
        ("When does the store open on Sunday?", "time"),
        ("À quelle heure ouvre la bibliothèque ?", "time"),
        ("Can I return a bike after 40 days?", "yes_no"),
        ("Puis-je payer par chèque ?", "yes_no"),
        ("Which payment methods do you accept?", "other"),
        ("Who approves a refund over $200?", "other"),
    ],
)
def test_asks_names_the_answer_type(question: str, kind: str) -> None:
    assert asks(question) == kind


@pytest.mark.parametrize(
    ("kind", "sentence", "expected"),
    [
        ("money", "A late cancellation costs $40.", True),
        ("money", "Le premier rendez-vous est gratuit.", True),
        ("money", "The frame weighs 2.1 kg.", False),
        ("duration", "Cancel at least 48 hours before.", True),
        ("duration", "Standard delivery takes 3 to 7 business days.", True),
        ("duration", "Vous avez quarante-cinq jours pour retourner un article.", True),
        ("duration", "Vous avez 45 jours pour retourner un article.", True),
        ("duration", "Refunds go back to the card you paid with.", False),
        ("percent", "Members get 10% off.", True),
        ("measure", "The maximum load is 120 kg.", True),
        ("time", "We open on Saturday.", True),
        ("time", "Ask at the front desk.", False),
        ("yes_no", "Anything at all.", True),
        ("other", "Anything at all.", True),
    ],
)
def test_gives_finds_the_asked_type_in_a_sentence(kind: str, sentence: str, expected: bool) -> None:
    assert gives(kind, sentence) is expected  # type: ignore[arg-type]
