"""The agent loop (`ask --agent`): steps, caps, citations checked against what it read, the
audience rule inside the loop, and the tool-call shapes of the OpenAI and Anthropic SDKs
(through a fake HTTP server, the real SDKs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_providers import server as server  # the fake HTTP server fixture

from tether.answering.agent import (
    ACTION_SCHEMA,
    ANSWER_ACTION_SCHEMA,
    AgentCaps,
    agent_request,
    parse_action,
    run_agent,
)
from tether.answering.pipeline import AskOptions
from tether.app import Models, Workspace
from tether.config import settings_from_mapping
from tether.errors import TetherError
from tether.providers.extractive import ExtractiveProvider
from tether.schemas import WireAskResult
from tether.types import AskResult, Chunk, Completion, Hit, Message, ModelRequest

STAFF_TEXT = "Staff may waive the restocking fee of 15 percent with a manager code ZX-99."
FILES = {
    "returns.md": "---\ndoc_id: returns\naccess: public\ntitle: Returns policy\n---\n"
    "# Returns\n\nItems go back within 30 days of delivery with the receipt.\n",
    "fees.md": "---\ndoc_id: fees\naccess: public\ntitle: Restocking fees\n---\n"
    "# Restocking fees\n\nA restocking fee of 15 percent applies to opened returns.\n",
    "staff.md": "---\ndoc_id: staff-returns\naccess: staff\ntitle: Staff returns handbook\n---\n"
    f"# Staff returns\n\n{STAFF_TEXT}\n",
}


class Scripted:
    """A provider that replies with the next scripted action (a dict, or raw text), and
    keeps every request it was sent."""

    name = "scripted"

    def __init__(self, *replies: dict | str, tokens: int = 10) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []
        self.tokens = tokens

    def complete(self, request: ModelRequest) -> Completion:
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies else {"action": "search", "query": "more"}
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return Completion(text, model="scripted-1", provider=self.name, input_tokens=self.tokens)


class NoTools:
    def search(self, query: str) -> list[Hit]:
        return []

    def read(self, chunk_id: str) -> Chunk | None:
        return None


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    w = Workspace.open(tmp_path / "i.sqlite", settings=settings_from_mapping({}), models=Models())
    w.ingest(docs, embed=False)
    return w


def _id(ws: Workspace, doc_id: str) -> str:
    (chunk,) = ws.store.chunks(doc_id)
    return chunk.chunk_id


def _answer(text: str, *ids: str) -> dict:
    claims = [{"text": text, "chunk_ids": list(ids)}]
    return {"action": "answer", "answerable": True, "answer": text, "claims": claims}


def _run(ws: Workspace, provider: Scripted, caps: AgentCaps | None = None, audience="public"):
    ws.use_provider(provider)
    return ws.ask_agent("How long do I have to return items?", AskOptions(audience=audience), caps)


def test_search_read_answer_checked_against_what_it_read(ws: Workspace) -> None:
    returns = _id(ws, "returns")
    provider = Scripted(
        {"action": "search", "query": "restocking fee"},
        {"action": "read", "chunk_id": f"[{returns}]"},
        _answer("Items go back within 30 days of delivery.", returns),
    )
    result = _run(ws, provider)
    trace = result.agent
    assert trace is not None
    assert [s.action for s in trace.steps] == ["search", "search", "read", "answer"]
    assert trace.read == (returns,) and trace.caps_reached == ()
    assert trace.tokens == 30
    assert result.status == "answered", [c.flags for c in result.checks]
    assert result.context is not None and result.context.chunk_ids == (returns,)
    # the model saw the listing of its first search (the question itself), then the passage
    assert "Returns policy" in provider.requests[0].messages[0].content
    assert "30 days of delivery with the receipt" in provider.requests[2].messages[-1].content
    wire = WireAskResult.from_ask_result(result).model_dump(mode="json")
    assert wire["agent"]["read"] == [returns] and wire["agent"]["caps"]["steps"] == 6


def test_a_cited_passage_it_never_read_is_not_in_context(ws: Workspace) -> None:
    returns, fees = _id(ws, "returns"), _id(ws, "fees")
    provider = Scripted(
        {"action": "search", "query": "restocking fee"},  # fees is listed, never read
        {"action": "read", "chunk_id": returns},
        _answer("A restocking fee of 15 percent applies to opened returns.", fees),
    )
    result = _run(ws, provider)
    # a public reader is not shown a claim citing outside what was read: nothing checked is
    # left, so the answer is refused by the verifier (staff would see it flagged)
    assert result.status == "refused" and result.refused_by == "verifier"
    assert [str(f) for f in result.checks[0].flags] == [f"not_in_context:{fees}"]
    assert result.checks[0].withheld


def test_a_public_run_never_sees_staff_text_and_a_staff_id_reads_as_unknown(ws: Workspace) -> None:
    staff = _id(ws, "staff-returns")
    provider = Scripted(
        {"action": "search", "query": "waive restocking fee manager code"},
        {"action": "read", "chunk_id": staff},
        {"action": "read", "chunk_id": "000000000000"},
        _answer("Staff may waive the restocking fee.", staff),
    )
    result = _run(ws, provider)
    sent = "\n".join(m.content for r in provider.requests for m in r.messages)
    assert "ZX-99" not in sent and "Staff returns" not in sent, sent
    assert "manager code ZX-99" not in sent and "Staff returns handbook" not in sent
    trace = result.agent
    assert trace is not None
    unknown = [s for s in trace.steps if s.action == "read"]
    assert [s.note for s in unknown] == ["no such passage", "no such passage"]
    last_two = provider.requests[3].messages
    assert last_two[-3].content.replace(staff, "X") == last_two[-1].content.replace(
        "000000000000", "X"
    )
    assert [str(f) for f in result.checks[0].flags] == [f"missing_id:{staff}"]
    # the same run for staff reads it
    staff_run = _run(ws, Scripted({"action": "read", "chunk_id": staff}, _answer("x", staff)), audience="staff")  # fmt: skip
    assert staff_run.agent is not None and staff_run.agent.read == (staff,)


def test_the_steps_cap_forces_an_answer_and_is_reported(ws: Workspace) -> None:
    returns = _id(ws, "returns")
    provider = Scripted(
        {"action": "read", "chunk_id": returns},
        {"action": "search", "query": "again"},
        _answer("Items go back within 30 days of delivery.", returns),
    )
    result = _run(ws, provider, AgentCaps(steps=3))
    trace = result.agent
    assert trace is not None and trace.caps_reached == ("steps",)
    assert [s.action for s in trace.steps] == ["search", "read", "search", "answer"]
    final = provider.requests[-1]
    assert final.json_schema == ANSWER_ACTION_SCHEMA and [t[0] for t in final.tools] == ["answer"]
    assert "steps cap is reached" in final.messages[-1].content
    assert result.status == "answered"


def test_the_tokens_and_wall_time_caps(ws: Workspace) -> None:
    result = _run(ws, Scripted(tokens=600), AgentCaps(tokens=1000))
    assert result.agent is not None and result.agent.caps_reached == ("tokens",)
    assert [s.action for s in result.agent.steps] == ["search"] * 3 + ["answer"]
    assert result.agent.tokens == 3 * 600  # the last call is the one past the cap
    ticks = iter(range(0, 10_000, 50))  # each look at the clock: 50 s later
    timed = run_agent(
        AskResult("q?", None, "public", "en", "bm25"), Scripted(), NoTools(),
        AgentCaps(wall_s=120), clock=lambda: float(next(ticks)),
    )  # fmt: skip
    assert timed.agent is not None and timed.agent.caps_reached == ("wall_s",)
    assert timed.timings["agent_s"] > 120


def test_two_bad_replies_end_the_run_without_an_answer(ws: Workspace) -> None:
    result = _run(ws, Scripted("not json at all", '{"action": "dance"}'))
    assert result.status == "no_answer" and result.problem is not None
    assert result.problem.kind == "not_schema"
    assert result.agent is not None
    assert [s.action for s in result.agent.steps] == ["search", "invalid", "invalid"]


def test_parse_action() -> None:
    assert parse_action('```json\n{"action": "read", "chunk_id": "a"}\n```') == {
        "action": "read", "chunk_id": "a",
    }  # fmt: skip
    assert parse_action('{"action": "search", "query": " "}') == "a search needs a query"
    assert "not JSON" in str(parse_action("{"))
    assert [b["properties"]["action"]["enum"] for b in ACTION_SCHEMA["anyOf"]] == [
        ["search"], ["read"], ["answer"],
    ]  # fmt: skip


def test_the_extractive_answerer_cannot_run_the_agent(ws: Workspace) -> None:
    ws.use_provider(ExtractiveProvider())
    with pytest.raises(TetherError, match="--agent needs a model"):
        ws.ask_agent("How long do I have to return items?")


# ---- the SDKs' tool-call shapes (real SDKs, fake HTTP server) ------------------------------


def _step_request() -> ModelRequest:
    return agent_request([Message("user", "Question: how long?")], "how long?", [], final=False)


def test_openai_offers_the_actions_as_function_tools(server) -> None:
    from test_providers import chat_body, openai_provider

    body = chat_body(None, finish="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [{
        "id": "call_1", "type": "function",
        "function": {"name": "read", "arguments": '{"chunk_id": "abc123"}'},
    }]  # fmt: skip
    server.add(200, body)
    provider, _ = openai_provider(server)
    completion = provider.complete(_step_request())
    assert json.loads(completion.text) == {"action": "read", "chunk_id": "abc123"}
    assert completion.finish_reason == "stop"
    sent = server.requests[0][1]
    assert [t["function"]["name"] for t in sent["tools"]] == ["search", "read", "answer"]
    assert sent["tool_choice"] == "required" and "response_format" not in sent


def test_anthropic_offers_the_actions_as_tools(server) -> None:
    from test_providers import anthropic_provider, message_body

    server.add(200, message_body(
        [{"type": "tool_use", "id": "t1", "name": "search", "input": {"query": "fees"}}],
        stop="tool_use",
    ))  # fmt: skip
    provider, _ = anthropic_provider(server)
    completion = provider.complete(_step_request())
    assert json.loads(completion.text) == {"action": "search", "query": "fees"}
    sent = server.requests[0][1]
    assert [t["name"] for t in sent["tools"]] == ["search", "read", "answer"]
    assert sent["tool_choice"] == {"type": "any"}


def test_a_recorded_local_model_run_replays_step_by_step(demo_store) -> None:
    """A RECORDED run of the local model (tests/data/agent_local_recorded.jsonl, labelled),
    replayed on the demo index: each step's request must be exactly the recorded one (the
    conversation, the listings, the action schema), so a change to the loop shows here."""
    from tether.evaluation.questions import load_questions
    from tether.providers.replay import ReplayProvider

    (q,) = [q for q in load_questions() if q.id == "Q021"]
    data = Path(__file__).parents[1] / "data" / "agent_local_recorded.jsonl"
    ws = Workspace.open(demo_store.path, settings=settings_from_mapping({}))
    ws.use_provider(ReplayProvider(data, mode="replay"))
    opts = AskOptions(as_of=q.as_of, audience=q.audience, language=q.language)
    result = ws.ask_agent(q.question, opts)
    assert result.problem is None, result.problem
    assert result.agent is not None
    assert [s.action for s in result.agent.steps] == ["search", "read", "answer"]
    assert result.completion is not None and "replayed recording" in result.completion.note
    assert result.answer is not None and all(
        re.search(k, result.answer.answer, re.I) for k in q.keys
    )
    assert result.status == "answered", [c.flags for c in result.checks]


def test_an_agent_step_replays_only_by_its_exact_conversation() -> None:
    from tether.providers.replay import request_loose_key

    assert request_loose_key(_step_request()) is None


def test_ask_agent_on_the_command_line(demo_store, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app

    data = Path(__file__).parents[1] / "data" / "agent_local_recorded.jsonl"
    monkeypatch.setenv("TETHER_RECORDINGS", str(data))
    question = "How should I store my e-bike battery over the winter?"
    args = ["ask", question, "--index", str(demo_store.path), "--as-of", "2026-11-30", "--agent"]
    runner = CliRunner()
    shown = runner.invoke(app, [*args, "--provider", "replay"])
    assert shown.exit_code == 0, shown.output
    assert "step 2: read bfeea65bfc28" in shown.output and "40 to 60%" in shown.output
    as_json = runner.invoke(app, [*args, "--provider", "replay", "--json"])
    assert json.loads(as_json.output)["agent"]["read"] == ["bfeea65bfc28"]
    refused = runner.invoke(app, [*args, "--provider", "extractive"])
    assert refused.exit_code == 1 and "error: --agent needs a model" in refused.output
