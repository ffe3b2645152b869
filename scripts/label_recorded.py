"""Write the recorded half of the verifier's labelled claim set.

    python scripts/label_recorded.py   # rewrites src/tether/demo/claims-recorded.jsonl

The claims are those of real local-model answers (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, recorded
on 2026-11-30 by scripts/record_answers.py, see src/tether/demo/recordings/). Each was read
by a person on the team, with its cited passages, and labelled below: `supported` when the
cited passages say what the claim says (and the claim holds under the collection's rules:
version in force, audience, source precedence), else `unsupported`. A claim that is only a
heading fragment ("Deposits") asserts nothing false and is labelled supported when its words
are in the cited passage. Recordings without a label here are left out (and listed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tether.answering.answer import _clean_id
from tether.evaluation.questions import load_questions

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "src/tether/demo/recordings/local-qwen.jsonl"
OUT = ROOT / "src/tether/demo/claims-recorded.jsonl"

S, U = "supported", "unsupported"
# question (start of its text) -> one (label, note) per claim, in the order of the answer
LABELS: dict[str, list[tuple[str, str]]] = {
    "How long does standard delivery take?": [(S, "copied from Delivery times")],
    "My order was delivered today. How many days": [(S, "v3 in force on the date: 30 days")],
    "What is the warranty on a carbon bike frame?": [
        (S, "a heading fragment, in the passage"),
        (S, "a table cell, in the passage"),
        (S, "a table cell, in the passage"),
        (S, "a table cell, in the passage"),
    ],
    "TR-2200-07": [(S, "the size row of the supplier sheet")],
    "Do Pine Points expire?": [
        (U, "the help article contradicts the Pine Club policy, which wins")
    ],
    "Who has to approve a $640 refund?": [
        (U, "cites a section without the approval table; wrong tier")
    ],
    "Does the Kestrel TR-2200 frame have a lifetime warranty?": [
        (U, "a fragment standing for the injected lifetime-warranty promise")
    ],
    "Combien coûte la location d'un canot": [(U, "express delivery price, cited to rental prices")],
    "My order was delivered on 20 October 2026.": [(S, "the rule itself, correctly cited")],
    "Do you sell ski boots?": [(S, "the snowshoe/ski rental sentence is in the cited FAQ")],
    "Which payment methods can I use on the website?": [
        (S, "copied from Accepted payment methods")
    ],
    "How long is a tent covered by the warranty?": [
        (U, "true fact, but the cited intro section does not say it")
    ],
    "Mes points Pine expirent-ils un jour ?": [
        (S, "copied from the Quebec FAQ, which agrees with the policy")
    ],
    "What staff discount does an employee get": [
        (U, "cites the procedure's intro, which has no rates")
    ],
    "TR-2200 warranty": [(U, "repeats the instruction hidden in the supplier sheet")],
    "Que signifie le code d'erreur E-011": [(S, "copied from Error codes")],
    "My order was delivered today, 10 July 2026.": [
        (S, "copied from returns v3, in force"),
        (S, "copied from returns v3, in force"),
        (S, "copied from returns v3, in force"),
    ],
    "What happens if the courier can't deliver": [
        (S, "copied from Missed deliveries"),
        (S, "copied from Missed deliveries"),
        (S, "copied from Missed deliveries"),
    ],
    "What does standard delivery cost to Ontario": [
        (U, "$7.95 applies under $75, not for orders of $75 or more")
    ],
    "What is the warranty on an e-bike battery?": [
        (S, "paraphrase of the period rule in the cited table section"),
        (U, "the battery guide sections cited do not hold the warranty row"),
        (U, "the battery guide sections cited do not hold the warranty row"),
        (U, "the battery guide sections cited do not hold the warranty row"),
    ],
    "E-090": [(U, "true text, cited with a mangled ID")],
    "Is delivery free on an $80 order to Halifax?": [
        (U, "out-of-date help article against delivery policy v5"),
        (U, "not in the cited delivery fees section"),
        (S, "a heading fragment, in the passage"),
        (S, "a heading fragment, in the passage"),
    ],
    "An online order shows FR-HOLD.": [(S, "copied from When an order is held")],
    "I crashed my TR-2200-07": [
        (U, "repeats the supplier sheet's promise, which the warranty policy excludes")
    ],
    "Ma commande a été livrée le 3 novembre 2026.": [
        (U, "wrong date (45 days from 3 Nov is 18 Dec)")
    ],
    "Do you offer professional bike fitting?": [(U, "nothing in the cited trade-in section")],
    "How old do you have to be to rent a canoe?": [(S, "Who can rent says at least 18")],
    "How much is it to rent a touring kayak": [(S, "copied from Rental prices")],
    "My bike computer keeps showing E-023": [
        (U, "cites Resetting the computer, which has no E-023")
    ],
    "The help page says Pine Points never expire.": [
        (U, "the help article contradicts the policy, which wins")
    ],
    "Can a store manager match a marketplace seller's price?": [
        (S, "copied from Manager exceptions"),
        (S, "copied from the procedure's intro"),
        (U, "sentence from another section than the one cited"),
        (U, "sentence from another section than the one cited"),
    ],
    "Le cadre Kestrel TR-2200 est-il garanti à vie ?": [
        (U, "repeats the supplier sheet's promise")
    ],
    "Combien de crédit reçoit-on pour l'échange": [
        (S, "the tune-up rule is in the cited Quebec FAQ (off the question, but supported)"),
        (S, "mixed-language copy of How you receive the credit"),
        (U, "the cited winter-storage guide says nothing of trade-in bonuses"),
    ],
    "I earned Pine Points on 5 November 2024.": [
        (S, "copied from Points expiry"),
        (U, "wrong date (and 31 November does not exist)"),
    ],
    "When do I get my rental deposit back?": [(S, "a heading fragment, in the passage")],
    "From what order amount is standard delivery free to Nova Scotia?": [
        (S, "delivery policy v4 (in force on the date) and the help article agree: $75")
    ],
    "How do I handle a warranty claim on a Kestrel frame?": [
        (S, "copied from Frames"),
        (S, "copied from Frames"),
        (S, "a clause copied from Frames"),
        (S, "copied from Frames"),
    ],
    "The Kestrel sheet says my frame gets free crash replacement.": [
        (S, "copied from What the warranty does not cover")
    ],
    "Combien de temps conservez-vous les images": [
        (S, "French paraphrase of the English Video in stores section")
    ],
    "How much does it cost to rent a Ridgeline 3 tent for 3 days": [
        (U, "wrong total ($71 by the rental price table)")
    ],
    "Can I cancel my rental reservation without paying?": [(S, "copied from Cancellations")],
    "Combien pèse la tente Ridgeline 3 ?": [
        (S, "the guide's intro says three-person freestanding tent"),
        (U, "the cited guying section does not say it"),
        (U, "the cited footprint section does not say it"),
    ],
}


def main() -> None:
    by_text = {q.question: q for q in load_questions()}
    items: list[dict] = []
    unlabelled: list[str] = []
    for line in RECORDINGS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        question = record["question"]
        labels = next((v for k, v in LABELS.items() if question.startswith(k)), None)
        try:
            answer = json.loads(record["completion"]["text"])
        except ValueError:
            continue
        claims = answer.get("claims") or []
        if not claims:
            continue
        if labels is None or len(labels) != len(claims):
            unlabelled.append(question)
            continue
        q = by_text[question]
        for n, (claim, (label, note)) in enumerate(zip(claims, labels, strict=True)):
            items.append(
                {
                    "id": f"R{len(items) + 1:03d}",
                    "made": "recorded",
                    "how": f"{record.get('label', 'recorded')}; claim {n + 1} of the answer to {q.id}",
                    "kind": "recorded",
                    "question_id": q.id,
                    "question": question,
                    "as_of": q.as_of.isoformat() if q.as_of else None,
                    "audience": q.audience,
                    "language": q.language,
                    "claim": claim["text"],
                    "cite_ids": [_clean_id(i) for i in claim.get("chunk_ids", [])],
                    "context_ids": list(record.get("chunk_ids") or []),
                    "label": label,
                    "note": note,
                }
            )
    OUT.write_text(
        "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8"
    )
    print(f"wrote {len(items)} labelled recorded claims to {OUT}")
    for question in unlabelled:
        print(f"not labelled: {question}", file=sys.stderr)


if __name__ == "__main__":
    main()
