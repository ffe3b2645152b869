"""Feedback on recorded answers as a question set (`tether questions --from-feedback`): one
question per audit entry that has feedback, in the format `load_questions` reads, so that
`tether eval --questions` measures it on the same index.

Each question is the entry's question, asked as it was (its `as_of` date and audience; the
language detected from its text), with the id FB<entry id> (FBP1, FBP2, ... for a reader that
sees no entry ids), kind "feedback", and:

- a `wrong` verdict with a right passage: that passage is `relevant`, tag "feedback:wrong";
- a `wrong` verdict without one: tag "feedback:wrong", nothing relevant (eval lists it as not
  scored; it stays in the set as a reminder);
- a `helpful` verdict on an answer: the passages its shown claims cite are `relevant`, the
  answer's text is the `reference_answer`, tag "feedback:helpful" (a passage given with it
  is relevant too);
- a `helpful` verdict on a refusal: `abstain` (the documents the asker may see do not answer
  it), tag "feedback:helpful";
- several askers on one entry: a `wrong` verdict wins over `helpful` ones (an answer someone
  calls wrong is never made a reference), and every right passage given is relevant.

A relevant passage names the chunk exactly: its doc_id and version, its anchor (else the
innermost heading above it as `section`), and as `evidence` the first words of its own text
(after a heading it starts with), so only that chunk of that version matches (`tether.evaluation.questions.matches`). The notes
kept under the key "notes" travel with the question (load_questions keeps unknown keys).

What it cannot do: a right passage is stored by chunk ID, so one that a re-ingest changed (a
new ID) can no longer be found: the question is written without it and a note says so; it
makes no `keys` (regular expressions) from an answer: write them by hand for `eval
--answers`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

from tether.text import detect_language
from tether.types import AuditEntry, Chunk, Feedback, Question, Relevant

EVIDENCE_WORDS = 12  # the words of a passage's own text kept as its `evidence`


def feedback_questions(
    items: Sequence[Feedback], read: Callable[[str], Chunk | None], *, ids: bool = True
) -> tuple[list[Question], list[str]]:
    """(one question per entry of `items`, oldest entry first; notes on what could not be
    used). `read(chunk_id)` is the chunk as the reader may see it (None: gone or unseen);
    without `ids` the questions are numbered FBP1, FBP2, ... instead of FB<entry id>."""
    by_entry: dict[int, list[Feedback]] = {}
    for f in items:
        if f.entry is not None:
            by_entry.setdefault(f.entry_id, []).append(f)
    questions: list[Question] = []
    notes: list[str] = []
    for n, (entry_id, given) in enumerate(sorted(by_entry.items()), 1):
        qid = f"FB{entry_id}" if ids else f"FBP{n}"
        entry = given[0].entry
        assert entry is not None
        question, gone = _question(qid, entry, given, read)
        questions.append(question)
        notes += [
            f"{qid}: the passage {chunk_id} is no longer in the index (or not one this reader"
            " may see); the question is written without it"
            for chunk_id in gone
        ]
    return questions, notes


def _question(
    qid: str, entry: AuditEntry, given: list[Feedback], read: Callable[[str], Chunk | None]
) -> tuple[Question, list[str]]:
    """The question of one entry, and the chunk IDs that could not be read."""
    wrong = any(f.verdict == "wrong" for f in given)
    rights = [f.chunk_id for f in given if f.chunk_id and (f.verdict == "wrong" or not wrong)]
    abstain = not wrong and entry.status == "refused" and not rights
    reference = ""
    wanted = list(rights)
    if not wrong and entry.status in ("answered", "flagged"):
        cited = [
            c
            for claim in entry.claims
            if not claim.get("removed")
            for c in claim.get("chunk_ids") or ()
        ]
        wanted = [*cited, *rights]
        reference = entry.answer
    relevant: list[Relevant] = []
    gone: list[str] = []
    for chunk_id in dict.fromkeys(wanted):
        chunk = read(chunk_id)
        if chunk is None:
            gone.append(chunk_id)
        else:
            relevant.append(relevant_of(chunk))
    extra: dict = {}
    notes = [f.note for f in given if f.note]
    if notes:
        extra["notes"] = notes
    question = Question(
        id=qid,
        question=entry.question,
        language=detect_language(entry.question),
        as_of=date.fromisoformat(entry.as_of) if entry.as_of else None,
        audience=entry.audience,
        abstain=abstain,
        kind="feedback",
        reference_answer=reference,
        relevant=tuple(dict.fromkeys(relevant)),
        tags=("feedback:wrong",) if wrong else ("feedback:helpful",),
        extra=extra,
    )
    return question, gone


def relevant_of(chunk: Chunk) -> Relevant:
    """The location that matches `chunk` and no other chunk: document, version, its anchor
    (else its innermost heading), and the first words of its own text as evidence."""
    body = chunk.text[len(chunk.lead) + 1 :] if chunk.lead else chunk.text
    heading = chunk.heading_path[-1] if chunk.heading_path else ""
    if heading and body.startswith(heading) and body[len(heading) :].strip():
        body = body[len(heading) :]  # the passage's own words, not its heading's
    evidence = " ".join(body.split()[:EVIDENCE_WORDS]) or None
    section = chunk.heading_path[-1] if chunk.heading_path and not chunk.anchor else None
    return Relevant(
        doc_id=chunk.doc_id,
        version=chunk.version,
        section=section,
        anchor=chunk.anchor,
        evidence=evidence,
    )
