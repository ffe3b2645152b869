"""Context assembly, request building and reading answers back (every AnswerProblem kind)."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from importlib import resources

from tether.answering.answer import (
    ANSWER_SCHEMA,
    build_request,
    load_prompt,
    parse_completion,
    parse_inline,
)
from tether.answering.context import assemble, header, overlap
from tether.types import Answer, AnswerProblem, Chunk, Completion, DocMeta, Hit

V4 = DocMeta(
    "returns-policy",
    "4",
    "Returns policy",
    doc_type="policy",
    access="public",
    effective_from=date(2026, 3, 1),
)
FAQ = DocMeta("help-faq", "1", "Help FAQ", doc_type="help", access="public")


def chunk(cid: str, text: str, meta: DocMeta = V4, path=("Returns policy", "Return window")):
    return Chunk(cid, meta, text, tuple(path), 0, len(text), 0)


def hits(*chunks: Chunk) -> list[Hit]:
    return [Hit(c, 1.0 / (i + 1), i + 1, "hybrid") for i, c in enumerate(chunks)]


A = chunk("aaaaaaaaaaaa", "You can return most items within 45 days of delivery for a full refund.")
B = chunk(
    "bbbbbbbbbbbb",
    "Bikes can be returned within 30 days if ridden less than 50 km.",
    FAQ,
    ("FAQ", "Bikes"),
)
A_COPY = chunk(
    "cccccccccccc", "You can return most items within 45 days of delivery for a full refund!", FAQ
)


def test_header_names_version_and_dates():
    assert header(A) == (
        "[aaaaaaaaaaaa] Returns policy | policy, version 4, in force from 2026-03-01"
        " (no end date) | section: Return window"
    )
    ended = chunk("dddddddddddd", "x", DocMeta("n", "1", "Notice", "notice", "public",
                  effective_from=date(2025, 12, 1), effective_to=date(2026, 1, 31)))  # fmt: skip
    assert "in force from 2025-12-01 to 2026-01-31" in header(ended)


def test_near_duplicates_dropped_with_reason_and_budget_respected():
    ctx = assemble(hits(A, B, A_COPY), budget=1000, count=lambda s: len(s.split()))
    assert ctx.chunk_ids == ("aaaaaaaaaaaa", "bbbbbbbbbbbb")
    assert ctx.dropped[0].chunk.chunk_id == "cccccccccccc"
    assert ctx.dropped[0].reason.startswith("near-duplicate of aaaaaaaaaaaa")
    assert overlap(A.text, B.text) < 0.2
    small = assemble(hits(A, B), budget=40, count=lambda s: len(s.split()))
    assert small.chunk_ids == ("aaaaaaaaaaaa",)
    assert "over the token budget" in small.dropped[0].reason
    assert small.tokens <= 40
    assert [p.marker for p in ctx.passages] == [1, 2]


def test_prompts_are_byte_exact_and_hashed():
    text, pid = load_prompt("answer")
    data = (resources.files("tether") / "prompts" / "answer.txt").read_bytes()
    assert text.encode() == data
    assert pid == f"answer@{hashlib.sha256(data).hexdigest()[:12]}"


def test_request_carries_passages_schema_and_rules():
    ctx = assemble(hits(A, B), count=lambda s: 1)
    req = build_request("How long to return?", ctx, as_of=date(2026, 11, 30), language="fr")
    prompt = req.messages[0].content
    assert "[aaaaaaaaaaaa] Returns policy | policy, version 4" in prompt
    assert "Les passages ne répondent pas à cette question." in prompt
    assert "French" in prompt and "2026-11-30" in prompt
    assert req.json_schema == ANSWER_SCHEMA and req.chunk_ids == ctx.chunk_ids
    # chunk ids are not constrained by a pattern: a wrong id must stay visibly wrong
    assert "pattern" not in json.dumps(ANSWER_SCHEMA)
    inline = build_request("How long?", ctx, as_of=None, mode="inline")
    assert inline.json_schema is None and "[1] Returns policy" in inline.messages[0].content
    closed = build_request("How long?", ctx, as_of=None, closed_book=True)
    assert "aaaaaaaaaaaa" not in closed.messages[0].content and closed.purpose == "closed_book"


def complete(text: str, **kw) -> Completion:
    return Completion(text=text, **kw)


CTX = assemble(hits(A, B), count=lambda s: 1)


def test_parse_good_answer():
    raw = {
        "answerable": True,
        "answer": "45 days.",
        "claims": [
            {"text": "Items can be returned within 45 days.", "chunk_ids": ["aaaaaaaaaaaa", "zz"]}
        ],
    }
    got = parse_completion(complete("```json\n" + json.dumps(raw) + "\n```"), CTX)
    assert isinstance(got, Answer) and got.answerable
    assert got.claims[0].chunk_ids == ("aaaaaaaaaaaa", "zz")  # the wrong id is kept for the checker


def test_every_problem_kind():
    cut = parse_completion(
        complete('{"answerable": true, "answer": "45', finish_reason="length"), CTX
    )
    assert isinstance(cut, AnswerProblem) and cut.kind == "cut"
    refused = parse_completion(complete("", refusal="I can't help with that"), CTX)
    assert isinstance(refused, AnswerProblem) and refused.kind == "refused"
    not_json = parse_completion(complete("Sure! Returns take 45 days."), CTX)
    assert isinstance(not_json, AnswerProblem) and not_json.kind == "not_json"
    missing = parse_completion(complete('{"answerable": true, "answer": "45 days"}'), CTX)
    assert isinstance(missing, AnswerProblem) and missing.kind == "not_schema"
    assert "claims" in missing.detail
    wrong_type = parse_completion(
        complete('{"answerable": "maybe", "answer": "", "claims": []}'), CTX
    )
    assert isinstance(wrong_type, AnswerProblem) and wrong_type.kind == "not_schema"


def test_unanswerable_answer_drops_claims():
    raw = {"answerable": False, "answer": "The passages do not answer this question.", "claims": [
        {"text": "x", "chunk_ids": ["aaaaaaaaaaaa"]}]}  # fmt: skip
    got = parse_completion(complete(json.dumps(raw)), CTX)
    assert isinstance(got, Answer) and not got.answerable and got.claims == ()


def test_inline_markers_map_back_and_invalid_markers_stay_visible():
    got = parse_inline(
        "Most items can be returned within 45 days.[1] Bikes need under 50 km [2][7]. No marker here.",
        CTX,
    )
    assert [c.chunk_ids for c in got.claims] == [
        ("aaaaaaaaaaaa",),
        ("bbbbbbbbbbbb", "marker:[7]"),
        (),
    ]
    assert got.claims[0].text == "Most items can be returned within 45 days."
    refusal = parse_inline("The passages do not answer this question.", CTX)
    assert not refusal.answerable and refusal.claims == ()
    fr = parse_inline("Les passages ne répondent pas à cette question.", CTX, "fr")
    assert not fr.answerable


def test_a_reply_nested_too_deeply_is_a_problem_not_a_traceback() -> None:
    """A hostile or broken model's JSON nested 100,000 levels deep: read as not_json."""
    from tether.answering.agent import parse_action
    from tether.answering.answer import parse_completion
    from tether.types import Completion, Context

    deep = "[" * 10_000 + "]" * 10_000  # under the reply cap, far over the parser's depth
    found = parse_completion(Completion(text=deep, finish_reason="stop"), Context(()))
    assert getattr(found, "kind", "") == "not_json" and "nested too deeply" in found.detail
    deeper = "[" * 100_000 + "]" * 100_000  # over the cap: refused unread
    found = parse_completion(Completion(text=deeper, finish_reason="stop"), Context(()))
    assert getattr(found, "kind", "") == "too_long"
    assert "nested too deeply" in str(parse_action('{"action": ' + deeper + "}"))


def test_a_runaway_reply_is_refused_unread() -> None:
    """Checking grows with the text: a reply, a claim or a claim list past its cap is a
    too_long problem (exit 3, no answer), never checked."""
    import json as _json

    from tether.answering.answer import MAX_CLAIM_CHARS, MAX_CLAIMS, parse_completion
    from tether.types import Completion, Context

    def reply(claims: list[dict]) -> Completion:
        body = {"answerable": True, "answer": "x", "claims": claims}
        return Completion(text=_json.dumps(body), finish_reason="stop")

    long_claim = [{"text": "a" * (MAX_CLAIM_CHARS + 1), "chunk_ids": ["abc"]}]
    many = [{"text": "Refunds take 14 days.", "chunk_ids": ["abc"]}] * (MAX_CLAIMS + 1)
    for completion in (reply(long_claim), reply(many),
                       Completion(text="x" * 40_000, finish_reason="stop")):  # fmt: skip
        found = parse_completion(completion, Context(()))
        assert getattr(found, "kind", "") == "too_long", found
    ok = parse_completion(reply(many[:3]), Context(()))
    assert getattr(ok, "claims", None) and len(ok.claims) == 3
    inline = parse_completion(
        Completion(text="Refunds take 14 days. " * 1000, finish_reason="stop"),
        Context(()), mode="inline",
    )  # fmt: skip
    assert getattr(inline, "kind", "") == "too_long"
