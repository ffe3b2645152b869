"""`AnthropicProvider`: messages through the `anthropic` SDK; JSON schema through one forced
tool whose input is the reply. Under a request's deadline each try gets at most the time the
request has left, as the SDK's timeout too (`tether.providers.base`).

What it cannot do: Anthropic gives no log-probabilities (a request for them gets a note, not
an error); a model that answers in text instead of calling the tool returns that text (noted);
cost is an estimate from list prices (`tether.providers.base`).
"""

from __future__ import annotations

import inspect
import json
import re
import time
from typing import Any

from tether.config import http_url
from tether.errors import ProviderError
from tether.providers.base import (
    RemoteProvider,
    Reply,
    Sleep,
    Tokens,
    read_reply,
    timeout_of,
    tool_action,
    with_selection,
)
from tether.types import Capabilities, Completion, ModelRequest


class _Block(Reply):
    type: str | None = None
    text: str | None = None
    name: str | None = None
    input: Any = None


class _Usage(Reply):
    input_tokens: Tokens = None
    output_tokens: Tokens = None


class MessageReply(Reply):
    """What tether reads of a message."""

    model: str | None = None
    content: list[_Block] | None = None
    stop_reason: str | None = None
    usage: _Usage | None = None


class AnthropicProvider(RemoteProvider):
    """Messages through the `anthropic` SDK; JSON schema through one forced tool."""

    # a remote model: it writes cited answers (json); a second opinion would be a paid call
    capabilities = Capabilities(answer_mode="json", judge="align", model=True, tool_use=True)

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        *,
        base_url: str | None = None,
        sleep: Sleep = time.sleep,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        import anthropic

        base_url = http_url(base_url, "base_url")
        if not api_key:
            raise ProviderError("no API key for anthropic: set TETHER_API_KEY or ANTHROPIC_API_KEY")
        super().__init__(
            anthropic, "anthropic", model, timeout, max_retries, sleep, (backoff_base, backoff_max)
        )
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.base_url = str(self._client.base_url).rstrip("/")
        # anthropic 2.x dropped `temperature` from messages.create; older SDKs take it
        create = self._client.messages.create
        self._sends_temperature = "temperature" in inspect.signature(create).parameters

    def describe(self) -> str:
        return with_selection(self.selection, f"anthropic {self.model}")

    def complete(self, request: ModelRequest) -> Completion:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages = [
            {"role": m.role, "content": m.content} for m in request.messages if m.role != "system"
        ]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if self._sends_temperature:
            kwargs["temperature"] = request.temperature
        if system:
            kwargs["system"] = system
        tool_name = re.sub(r"[^a-zA-Z0-9_-]", "_", request.schema_name)[:64] or "answer"
        if request.tools:  # the agent's actions, as tools: the model must call one
            kwargs["tools"] = [
                {"name": n, "description": d, "input_schema": p} for n, d, p in request.tools
            ]
            kwargs["tool_choice"] = {"type": "any"}
        elif request.json_schema is not None:
            kwargs["tools"] = [
                {
                    "name": tool_name,
                    "description": "Give the reply as this tool's input.",
                    "input_schema": request.json_schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": tool_name}
        started = time.perf_counter()
        create = self._client.messages.create
        response = self._retrying(lambda seconds: create(**kwargs, **timeout_of(seconds)))
        latency = time.perf_counter() - started
        reply = read_reply(MessageReply, response, self.name, self.base_url)
        notes: list[str] = []
        text_parts: list[str] = []
        tool_input: Any = None
        for block in reply.content or []:
            if block.type == "tool_use" and tool_input is None:
                tool_input = block.input
                if request.tools:
                    tool_input = json.loads(tool_action(block.name or "", block.input))
            elif block.type == "text":
                text_parts.append(block.text or "")
        if request.json_schema is not None and tool_input is not None:
            text = json.dumps(tool_input, ensure_ascii=False)
        else:
            text = "".join(text_parts)
            if request.json_schema is not None:
                notes.append("the model did not call the schema tool; returned its text")
        stop = reply.stop_reason
        refusal = None
        if stop == "max_tokens":
            finish = "length"
        elif stop == "refusal":
            finish = "refusal"
            refusal = "".join(text_parts) or "the model refused"
        else:
            finish = "stop"
        if request.logprobs:
            notes.append("anthropic gives no log-probabilities")
        usage = ("input_tokens", "output_tokens")
        return self._priced(
            reply, text, latency, notes, usage, finish_reason=finish, refusal=refusal
        )
