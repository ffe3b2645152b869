"""The agentic search/read loop (`tether ask --agent`): the model searches and reads the
index in steps, then answers with claims; every claim is checked against the passages it
actually read.

One loop serves every provider. Each step sends the conversation so far as a `ModelRequest`
carrying both the action schema (`ACTION_SCHEMA`: {"action": "search"|"read"|"answer", ...},
the constrained JSON a local model is held to through llama.cpp's response_format) and the
same actions as tools (`AGENT_TOOLS`): the OpenAI and Anthropic providers offer those as
their SDKs' tool calls and hand the call back as the same action JSON. The replay provider
records and replays each step like any request, so a recorded run is deterministic.

The loop starts with a search for the question itself (step 1), then lets the model act.
Caps (`AgentCaps`): steps (model actions and that first search), tokens (input + output
over every call) and wall time; the first one reached ends the exploration and is reported
in `AgentTrace.caps_reached`, and one last call asks for the answer from what was read
(this call is the only one past a cap; it is bounded by its `max_tokens`). Two replies in
a row that are not a valid action end the run with the problem `not_json`/`not_schema`.

The passages the model read (`read`, never the search listing, which shows only the first
words of each) are the answer's context: a claim citing a passage it never read is
`not_in_context`, and one citing a passage the audience may not see reads as an unknown ID.
The tools the loop calls are given (`AgentTools`) with the audience and date already fixed,
so a public run never sees a staff passage, not even in a search listing.

What it cannot do: it does not pass the support gate (the model decides when to refuse);
the search listing is the retriever's top `k`, so a passage ranked lower is found only by
another query; history is sent in full at every step (no summarising), so long runs cost
tokens quadratically (the token cap bounds it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from string import Template
from typing import Any, Protocol

from tether.answering.answer import ANSWER_SCHEMA, parse_completion
from tether.answering.context import estimate_tokens, header
from tether.errors import ProviderError
from tether.prompts import load_prompt
from tether.text import refusal_sentence
from tether.types import (
    AgentStep,
    AgentTrace,
    Answer,
    AnswerProblem,
    AskResult,
    Chunk,
    Completion,
    Context,
    Hit,
    Message,
    ModelRequest,
    Passage,
)

SNIPPET_CHARS = 160  # what a search listing shows of each passage
MAX_BAD_REPLIES = 2  # replies in a row that are not an action before the run gives up

_ANSWER_FIELDS: dict[str, Any] = ANSWER_SCHEMA["properties"]
_SEARCH_ARGS = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}
_READ_ARGS = {
    "type": "object",
    "properties": {"chunk_id": {"type": "string"}},
    "required": ["chunk_id"],
    "additionalProperties": False,
}
_ANSWER_ARGS = {
    "type": "object",
    "properties": dict(_ANSWER_FIELDS),
    "required": ["answerable", "answer", "claims"],
    "additionalProperties": False,
}
AGENT_TOOLS: tuple[tuple[str, str, dict], ...] = (
    ("search", "Search the collection; lists passage IDs, titles and first words.", _SEARCH_ARGS),
    ("read", "Read one passage's full text by its ID.", _READ_ARGS),
    ("answer", "Give the final answer with claims citing passages you read.", _ANSWER_ARGS),
)


def _with_action(name: str, args: dict) -> dict:
    return {
        **args,
        "properties": {"action": {"type": "string", "enum": [name]}, **args["properties"]},
        "required": ["action", *args["required"]],
    }


ACTION_SCHEMA: dict = {"anyOf": [_with_action(name, args) for name, _, args in AGENT_TOOLS]}
"""One action: search, read or answer (the local model's constrained JSON)."""
ANSWER_ACTION_SCHEMA: dict = _with_action("answer", _ANSWER_ARGS)
"""The last call's schema once a cap is reached: the answer only."""


class AgentTools(Protocol):
    """What the loop may call, with the audience and the date already fixed: `search`
    returns the hits the audience may see, `read` a chunk it may see (None for one it may
    not see, exactly as for an unknown ID)."""

    def search(self, query: str) -> list[Hit]: ...

    def read(self, chunk_id: str) -> Chunk | None: ...


@dataclass(frozen=True)
class ToolCalls:
    """`AgentTools` made of two functions (the Workspace binds its search and read to the
    audience, date, method and k of one question)."""

    search_fn: Callable[[str], list[Hit]]
    read_fn: Callable[[str], Chunk | None]

    def search(self, query: str) -> list[Hit]:
        return self.search_fn(query)

    def read(self, chunk_id: str) -> Chunk | None:
        return self.read_fn(chunk_id)


@dataclass(frozen=True)
class AgentCaps:
    """How far the loop may go: `steps` actions (the first search counts), `tokens` of
    model input and output over every call, `wall_s` seconds."""

    steps: int = 6
    tokens: int = 16_000
    wall_s: float = 300.0

    def as_dict(self) -> dict[str, float]:
        return {"steps": self.steps, "tokens": self.tokens, "wall_s": self.wall_s}


@dataclass
class _Run:
    """The loop's state while it runs."""

    question: str
    tools: AgentTools
    started: float
    messages: list[Message]
    steps: list[AgentStep]
    hits: dict[str, Hit]
    read: dict[str, Chunk]
    tokens: int = 0
    bad: int = 0
    last: Completion | None = None


def agent_request(
    messages: Sequence[Message], question: str, read: Sequence[str], *, final: bool
) -> ModelRequest:
    """One step's request: the conversation, the action schema (the answer alone when
    `final`) and the same actions as tools."""
    _, prompt_id = load_prompt("agent")
    return ModelRequest(
        messages=tuple(messages),
        json_schema=ANSWER_ACTION_SCHEMA if final else ACTION_SCHEMA,
        schema_name="agent_answer" if final else "agent_action",
        max_tokens=400,
        purpose="agent",
        prompt_id=prompt_id,
        chunk_ids=tuple(read),
        question=question,
        tools=AGENT_TOOLS[2:] if final else AGENT_TOOLS,
    )


def parse_action(text: str) -> dict | str:
    """The action in a reply (a dict with a known `action` and its argument), or why not."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})"
    except RecursionError:
        return "not JSON (nested too deeply to read)"
    if not isinstance(raw, dict) or raw.get("action") not in ("search", "read", "answer"):
        return 'no "action" of search, read or answer'
    if raw["action"] == "search" and not str(raw.get("query") or "").strip():
        return "a search needs a query"
    if raw["action"] == "read" and not str(raw.get("chunk_id") or "").strip():
        return "a read needs a chunk_id"
    return raw


def _say(run: _Run, text: str) -> None:
    """Tell the model `text`: a user turn, joined to the last one when that is the user's
    (roles alternate, as the Anthropic API wants)."""
    if run.messages and run.messages[-1].role == "user":
        run.messages[-1] = Message("user", f"{run.messages[-1].content}\n\n{text}")
    else:
        run.messages.append(Message("user", text))


def _listing(query: str, hits: Sequence[Hit]) -> str:
    if not hits:
        return f"Search {query!r}: nothing found. Try other words."
    lines = [f"Search {query!r}:"]
    for h in hits:
        snippet = " ".join(h.chunk.text.split())[:SNIPPET_CHARS]
        lines.append(f"{header(h.chunk)}\n  {snippet}…")
    lines.append("Read a passage by its ID to use it.")
    return "\n".join(lines)


def _search(run: _Run, query: str, tokens: int = 0, seconds: float = 0.0) -> None:
    hits = run.tools.search(query)
    for h in hits:
        run.hits.setdefault(h.chunk.chunk_id, h)
    ids = tuple(h.chunk.chunk_id for h in hits)
    run.steps.append(AgentStep("search", query, ids, tokens, seconds))
    _say(run, _listing(query, hits))


def _read(run: _Run, chunk_id: str, tokens: int, seconds: float) -> None:
    wanted = chunk_id.strip().strip("[]")
    chunk = run.read.get(wanted) or run.tools.read(wanted)
    if chunk is None:
        run.steps.append(AgentStep("read", wanted, (), tokens, seconds, "no such passage"))
        _say(run, f"No passage has the ID {wanted!r}.")
        return
    run.read.setdefault(chunk.chunk_id, chunk)
    run.steps.append(AgentStep("read", wanted, (chunk.chunk_id,), tokens, seconds))
    _say(run, f"{header(chunk)}\n{chunk.text}")


def _cap_reached(run: _Run, caps: AgentCaps, clock: Callable[[], float]) -> str | None:
    if len(run.steps) >= caps.steps:
        return "steps"
    if run.tokens >= caps.tokens:
        return "tokens"
    if clock() - run.started >= caps.wall_s:
        return "wall_s"
    return None


def _call(
    run: _Run, provider: Any, clock: Callable[[], float], *, final: bool
) -> tuple[dict | str, Completion, float]:
    """One model call: the parsed action (or why it is not one), the completion, seconds."""
    request = agent_request(run.messages, run.question, list(run.read), final=final)
    t = clock()
    completion = provider.complete(request)
    seconds = clock() - t
    run.tokens += completion.input_tokens + completion.output_tokens
    run.last = completion
    run.messages.append(Message("assistant", completion.text))
    return parse_action(completion.text), completion, seconds


def _explore(
    run: _Run, provider: Any, caps: AgentCaps, clock: Callable[[], float]
) -> tuple[Completion | None, AnswerProblem | None, str | None]:
    """Steps until an answer, a cap or too many bad replies: (the answer's completion, a
    problem, the cap reached)."""
    while (cap := _cap_reached(run, caps, clock)) is None:
        action, completion, seconds = _call(run, provider, clock, final=False)
        tokens = completion.input_tokens + completion.output_tokens
        if isinstance(action, str):
            run.bad += 1
            run.steps.append(AgentStep("invalid", "", (), tokens, seconds, action))
            if run.bad >= MAX_BAD_REPLIES:
                why = f"the model's actions were not valid: {action}"
                bad = AnswerProblem(
                    "not_json" if action.startswith("not JSON") else "not_schema", why
                )
                return None, bad, None
            _say(run, f"That is not a valid action: {action}. Reply with one JSON action.")
            continue
        run.bad = 0
        if action["action"] == "answer":
            run.steps.append(AgentStep("answer", "", (), tokens, seconds))
            return completion, None, None
        if action["action"] == "search":
            _search(run, str(action["query"]), tokens, seconds)
        else:
            _read(run, str(action["chunk_id"]), tokens, seconds)
    return None, None, cap


def _context(read: Sequence[Chunk]) -> Context:
    passages = tuple(
        Passage(c, header(c), estimate_tokens(c.text), i, 0.0) for i, c in enumerate(read, 1)
    )
    tokens = sum(p.tokens for p in passages)
    return Context(passages, budget=tokens, tokens=tokens, tokenizer="estimate")


def run_agent(
    base: AskResult,
    provider: Any,
    tools: AgentTools,
    caps: AgentCaps | None = None,
    *,
    as_of_text: str = "unknown",
    clock: Callable[[], float] = time.monotonic,
) -> AskResult:
    """The loop for `base.question` (see the module docstring): an AskResult with the hits
    it saw, the passages it read as the context, the final completion, the answer (not yet
    checked: `tether.answering.pipeline.checked` does that) and the `AgentTrace`."""
    c = caps or AgentCaps()
    template, _ = load_prompt("agent")
    prompt = Template(template).safe_substitute(
        as_of=as_of_text,
        language={"fr": "French"}.get(base.language, "English"),
        refusal=refusal_sentence(base.language),
        question=base.question,
        steps=c.steps,
    )
    run = _Run(base.question, tools, clock(), [Message("user", prompt)], [], {}, {})
    problem: AnswerProblem | None = None
    reached: list[str] = []
    try:
        _search(run, base.question)
        completion, problem, cap = _explore(run, provider, c, clock)
        if cap is not None:
            reached.append(cap)
            _say(run, f"The {cap} cap is reached: answer now, from the passages you have read.")
            action, completion, seconds = _call(run, provider, clock, final=True)
            note = action if isinstance(action, str) else ""
            run.steps.append(
                AgentStep(
                    "answer",
                    "",
                    (),
                    completion.input_tokens + completion.output_tokens,
                    seconds,
                    note,
                )
            )
    except ProviderError as exc:
        completion, problem = None, AnswerProblem("provider_error", str(exc))
    context = _context(list(run.read.values()))
    answer: Answer | None = None
    if completion is not None and problem is None:
        parsed = parse_completion(completion, context, mode="json", language=base.language)
        answer = parsed if isinstance(parsed, Answer) else None
        problem = parsed if isinstance(parsed, AnswerProblem) else None
    trace = AgentTrace(tuple(run.steps), c.as_dict(), tuple(reached), tuple(run.read), run.tokens)
    last = run.last
    return replace(
        base,
        hits=tuple(run.hits.values()),
        context=context,
        completion=last,
        answer=answer,
        problem=problem,
        provider=(last.provider if last else "") or provider.name,
        provider_note=last.note if last else "",
        agent=trace,
        timings={**base.timings, "agent_s": clock() - run.started},
    )
