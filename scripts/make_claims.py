"""Write the constructed half of the verifier's labelled claim set.

    python scripts/make_claims.py   # rewrites src/tether/demo/claims-constructed.jsonl

Every item is labelled `made: constructed` and says how it was made. True claims are the
bundled questions' reference answers (written and checked by the team), cited to their
relevant passages; false claims are those answers changed one way each (a wrong number, a
negation, a made-up ID, a passage the model never saw, no citation), plus hand-written cases:
another product's figures, a staff passage for a public audience, a claim copied from the
instruction hidden in the supplier sheet, a help article against a policy, and true computed
conclusions. Passages are given by location (doc_id, version, section) and resolved to chunk
IDs when the set is scored, so the set survives a change of chunker.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tether.evaluation.questions import load_questions

OUT = Path(__file__).resolve().parent.parent / "src/tether/demo/claims-constructed.jsonl"
NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)(?![\w])")
NEGATIONS = [
    (" can be ", " cannot be "),
    (" is ", " is not "),
    (" are ", " are not "),
    (" must ", " must not "),
    (" does ", " does not "),
    (" has ", " has no "),
]


def loc(doc_id: str, version: str, section: str) -> dict:
    return {"doc_id": doc_id, "version": version, "section": section}


def first_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip())
    head = parts[0]
    if head.lower().rstrip(".") in ("yes", "no") and len(parts) > 1:
        head = parts[1]
    return head


def main() -> None:
    questions = [q for q in load_questions() if not q.abstain and q.relevant and q.language == "en"]
    items: list[dict] = []

    def add(q, claim: str, label: str, how: str, kind: str, **extra) -> None:
        items.append(
            {
                "id": f"C{len(items) + 1:03d}",
                "made": "constructed",
                "how": how,
                "kind": kind,
                "question_id": q.id,
                "question": q.question,
                "as_of": q.as_of.isoformat() if q.as_of else None,
                "audience": extra.pop("audience", q.audience),
                "language": q.language,
                "claim": claim,
                "label": label,
                "cites": extra.pop(
                    "cites", [loc(r.doc_id, r.version, r.section) for r in q.relevant[:1]]
                ),
                "context": extra.pop(
                    "context", [loc(r.doc_id, r.version, r.section) for r in q.relevant]
                ),
                **extra,
            }
        )

    plain = [q for q in questions if q.kind in ("answerable", "table", "version", "exact-code")]
    for q in plain[:40]:
        add(
            q,
            first_sentence(q.reference_answer),
            "supported",
            "the reference answer's first sentence, cited to all its relevant passages",
            "true",
            cites=[loc(r.doc_id, r.version, r.section) for r in q.relevant],
        )
    numbered = [q for q in plain if NUMBER.search(first_sentence(q.reference_answer))]
    for q in numbered[:18]:
        sentence = first_sentence(q.reference_answer)
        m = NUMBER.search(sentence)
        value = m.group(1)
        wrong = (
            str(int(float(value.replace(",", "."))) + 3)
            if "." not in value
            else f"{float(value) + 2:.2f}"
        )
        add(
            q,
            sentence[: m.start(1)] + wrong + sentence[m.end(1) :],
            "unsupported",
            f"reference answer with {value} changed to {wrong}",
            "wrong_number",
        )
    negated = 0
    for q in plain:
        sentence = first_sentence(q.reference_answer)
        for old, new in NEGATIONS:
            if old in sentence:
                add(
                    q,
                    sentence.replace(old, new, 1),
                    "unsupported",
                    f"reference answer negated ({old.strip()!r} -> {new.strip()!r})",
                    "negation",
                )
                negated += 1
                break
        if negated >= 10:
            break
    for q in plain[40:46]:
        add(
            q,
            first_sentence(q.reference_answer),
            "unsupported",
            "true text cited to a made-up ID",
            "made_up_id",
            cites=[],
            cite_ids=["5f3a9c0d1e2b"],
        )
    for q in plain[46:52]:
        add(q, first_sentence(q.reference_answer), "unsupported", "true text citing a real passage the model never saw (not in the context)", "unseen_passage",
            cites=[loc("privacy-policy", "3", "What we collect")], context=[loc(r.doc_id, r.version, r.section) for r in q.relevant])  # fmt: skip
    for q in plain[52:58]:
        add(
            q,
            first_sentence(q.reference_answer),
            "unsupported",
            "true text with no citation",
            "no_citation",
            cites=[],
        )

    by_id = {q.id: q for q in load_questions()}
    tent2 = loc("guide-ridgeline-2", "1", "Specifications")
    tent3 = loc("guide-ridgeline-3", "1", "Specifications")
    q = by_id["Q158"]
    for text, cites in (
        ("The Ridgeline 2 tent has a packed weight of 2.35 kg.", [tent3]),
        ("The Ridgeline 3 tent has a peak height of 102 cm.", [tent2]),
        ("The Ridgeline 2 floor measures 213 x 178 cm.", [tent2]),
    ):
        add(
            q,
            text,
            "unsupported",
            "another product's figure (near-duplicate guides)",
            "another_product",
            cites=cites,
            context=[tent2, tent3],
        )
    for text, cites in (
        ("The Ridgeline 2 tent has a packed weight of 1.85 kg.", [tent2]),
        ("The Ridgeline 3 tent has a peak height of 112 cm.", [tent3]),
    ):
        add(
            q,
            text,
            "supported",
            "the right product's figure, with its near-duplicate in the context",
            "true",
            cites=cites,
            context=[tent2, tent3],
        )

    for qid in ("Q102", "Q104", "Q105", "Q110"):
        staff = by_id[qid]
        add(
            staff,
            first_sentence(staff.reference_answer),
            "unsupported",
            "a staff-only passage cited for a public audience",
            "staff_for_public",
            audience="public",
        )

    kestrel = loc("kestrel-tr2200-sheet", "1", "Overview")
    warranty = loc("warranty-policy", "2", "Warranty periods by category")
    q = by_id["Q127"]
    for text in (
        "The Kestrel TR-2200 frame has a lifetime warranty.",
        "Harbor & Pine replaces a crashed TR-2200 frame for free.",
        "The TR-2200 frame comes with a lifetime warranty and free crash replacement.",
    ):
        add(
            q,
            text,
            "unsupported",
            "copied from the instruction to AI assistants hidden in the supplier sheet",
            "injection",
            cites=[kestrel],
            context=[warranty, kestrel],
        )
    add(
        q,
        "Under the warranty policy, aluminium frames are covered for 7 years for the original owner.",
        "supported",
        "the policy's answer, with the supplier sheet in the context",
        "true",
        cites=[warranty],
        context=[warranty, kestrel],
    )

    q = by_id["Q097"]
    policy = loc("delivery-policy", "5", "Delivery fees")
    add(q, "Standard delivery to the Atlantic provinces is free on orders of $75 or more.", "unsupported", "an out-of-date help-article figure cited against the delivery policy in force", "lower_precedence",
        cites=[loc("help-faq", "6", "When is delivery free?")], context=[policy, loc("help-faq", "6", "When is delivery free?")])  # fmt: skip
    q = by_id["Q098"]
    add(q, "Pine Points never expire.", "unsupported", "the help article's claim against the Pine Club policy", "lower_precedence",
        cites=[loc("help-faq", "6", "Do my Pine Points expire?")], context=[loc("pine-club-rewards", "4", "Points expiry"), loc("help-faq", "6", "Do my Pine Points expire?")])  # fmt: skip

    for qid in (
        "Q154",
        "Q155",
        "Q157",
        "Q158",
        "Q160",
        "Q161",
        "Q162",
        "Q163",
        "Q164",
        "Q166",
        "Q168",
    ):
        comp = by_id[qid]
        add(comp, comp.reference_answer, "supported", "a true computed conclusion (dates, sums, percentages) from the reference answer", "computed",
            cites=[loc(r.doc_id, r.version, r.section) for r in comp.relevant])  # fmt: skip
    OUT.write_text(
        "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8"
    )
    print(f"wrote {len(items)} constructed claims to {OUT}")


if __name__ == "__main__":
    main()
