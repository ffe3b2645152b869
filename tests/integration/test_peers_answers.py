"""The answers part of the peers benchmark (bench/peers/answers.py), without a model: an
answer's sentences and [n] markers become claims citing chunk IDs, LlamaIndex's refusals are
read, the questions are chosen deterministically, and the loopback endpoint shapes requests
and responses (a fake handler stands where xllamacpp's `handle_chat_completions` goes)."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers.answers import (
    citation_claims,
    is_refusal_text,
    pick_questions,
    shape_request,
    shape_response,
    start_server,
)
from tether.evaluation.questions import demo_questions, load_questions
from tether.types import Claim

SOURCES = ["c1", "c2", "c3"]


def test_one_claim_per_sentence_with_its_markers():
    text = (
        "Water is wet when the sky is red [2], which occurs in the evening [1]. It is blue [1, 3]."
    )
    assert citation_claims(text, SOURCES) == [
        Claim("Water is wet when the sky is red, which occurs in the evening.", ("c2", "c1")),
        Claim("It is blue.", ("c1", "c3")),
    ]


def test_a_marker_after_the_full_stop_belongs_to_the_sentence_before():
    claims = citation_claims("Delivery takes 3 to 7 days. [1] Express is faster.", SOURCES)
    assert claims == [Claim("Delivery takes 3 to 7 days.", ("c1",)), Claim("Express is faster.")]


def test_a_list_of_markers_after_the_last_sentence():
    claims = citation_claims("One fact. Another fact. [1], [2], [3]", SOURCES)
    assert claims == [Claim("One fact."), Claim("Another fact.", ("c1", "c2", "c3"))]


def test_uncited_and_out_of_range_markers_stay_visible_to_the_verifier():
    claims = citation_claims("Yes. It costs $5 [Source 2][7].", SOURCES)
    assert claims == [Claim("Yes."), Claim("It costs $5.", ("c2", "marker:[7]"))]


def test_carry_lets_a_closing_marker_cover_the_uncited_sentences_before_it():
    text = "Yes. Delivery is free [1]. Returns take 5 days. Cheques are refused [2].\n\nAsk us."
    assert citation_claims(text, SOURCES, carry=True) == [
        Claim("Yes.", ("c1",)),
        Claim("Delivery is free.", ("c1",)),
        Claim("Returns take 5 days.", ("c2",)),
        Claim("Cheques are refused.", ("c2",)),
        Claim("Ask us."),  # after the last marker, in a paragraph of its own
    ]
    para = "A fact.\n\nAnother fact [1]."
    assert citation_claims(para, SOURCES, carry=True)[0] == Claim("A fact.")
    assert citation_claims(text, SOURCES)[0] == Claim("Yes.")


def test_repeated_markers_and_empty_sentences():
    assert citation_claims("A fact [1][1]. [2]", SOURCES) == [Claim("A fact.", ("c1", "c2"))]
    assert citation_claims("", SOURCES) == []


def test_refusals_are_read_only_without_citations():
    assert is_refusal_text("The provided sources do not mention ski boots.")
    assert is_refusal_text("The passages do not answer this question.")
    assert is_refusal_text("  ")
    assert is_refusal_text("The provided sources do not mention ski boots [2]. We rent skis [1].")
    assert is_refusal_text("None of the sources are helpful.")
    assert not is_refusal_text("We do not provide gift wrapping [2].")
    assert not is_refusal_text("Returns are free [1]. The sources do not mention fees [2].")
    assert not is_refusal_text("Standard delivery takes 3 to 7 business days.")


def test_questions_are_chosen_by_kind_and_id():
    qs = load_questions(demo_questions())
    picked = pick_questions(qs, 12)
    assert len(picked) == 12
    answerable, refuse = picked[:9], picked[9:]
    assert all(q.kind == "answerable" and not q.abstain for q in answerable)
    assert all(q.kind == "unanswerable" and q.abstain for q in refuse)
    assert all(q.language == "en" and q.audience == "public" for q in picked)
    assert [q.id for q in answerable] == sorted(q.id for q in answerable)
    assert pick_questions(qs, 12) == picked
    assert [q.abstain for q in pick_questions(qs, 2)] == [False, True]


def test_requests_are_greedy_and_schema_becomes_llamacpp_form():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.7,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "a", "schema": {"type": "object"}}}}  # fmt: skip
    shaped = shape_request(body)
    assert shaped["temperature"] == 0.0 and shaped["top_k"] == 1 and shaped["cache_prompt"]
    assert shaped["response_format"] == {"type": "json_object", "schema": {"type": "object"}}
    assert shaped["messages"] == body["messages"]
    with pytest.raises(ValueError):
        shape_request({"messages": [], "stream": True})


def test_responses_get_openai_fields_and_errors_their_status():
    status, out = shape_response({"choices": [], "model": "/path/model.gguf"}, "qwen")
    assert status == 200 and out["model"] == "qwen" and out["object"] == "chat.completion"
    assert out["id"] and out["created"]
    status, out = shape_response({"error": {"code": 400, "message": "bad schema"}}, "qwen")
    assert status == 400 and out["error"]["message"] == "bad schema"
    assert shape_response({"error": "boom"}, "qwen")[0] == 400
    assert shape_response(None, "qwen")[0] == 502


def _post(port: int, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_loopback_server_forwards_to_the_handler_and_logs_usage():
    seen: list[dict[str, Any]] = []

    def fake(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        if body["messages"][0]["content"] == "fail":
            return {"error": {"code": 400, "message": "refused"}}
        return {"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok [1]"}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 2},
                "timings": {"prompt_ms": 5.0, "predicted_ms": 3.0}}  # fmt: skip

    server, thread = start_server(fake, "qwen")
    port = server.server_address[1]
    try:
        status, out = _post(port, "/v1/chat/completions",
                            {"model": "x", "temperature": 1, "messages": [
                                {"role": "user", "content": "hi"}]})  # fmt: skip
        assert status == 200 and out["choices"][0]["message"]["content"] == "ok [1]"
        assert out["model"] == "qwen" and seen[0]["temperature"] == 0.0
        assert _post(port, "/v1/chat/completions",
                     {"messages": [{"role": "user", "content": "fail"}]})[0] == 400  # fmt: skip
        assert _post(port, "/v1/chat/completions", {"messages": [], "stream": True})[0] == 400
        assert len(seen) == 2  # the streamed request never reached the handler
        assert _post(port, "/v1/other", {})[0] == 404
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as r:
            assert json.load(r)["data"][0]["id"] == "qwen"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as r:
            log = json.load(r)["requests"]
        assert [e["status"] for e in log] == [200, 400]
        assert log[0]["prompt_tokens"] == 7 and log[0]["completion_tokens"] == 2
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_openai_sdk_reads_the_endpoint():
    openai = pytest.importorskip("openai")

    def fake(body: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Paris [1]."}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}  # fmt: skip

    server, thread = start_server(fake, "qwen")
    try:
        client = openai.OpenAI(
            api_key="x", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1"
        )
        reply = client.chat.completions.create(
            model="qwen", messages=[{"role": "user", "content": "capital?"}], temperature=0
        )
        assert reply.choices[0].message.content == "Paris [1]."
        assert reply.usage is not None and reply.usage.prompt_tokens == 3
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
