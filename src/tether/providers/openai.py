"""`OpenAICompatibleProvider`: chat completions through the `openai` SDK, for OpenAI, Azure
(base_url), Ollama, vLLM, a llama.cpp server or LM Studio.

JSON schema goes through `response_format`; a server that rejects `json_schema` gets
`json_object` instead, a model that refuses `max_tokens` or a temperature gets
`max_completion_tokens` or its default (each adaptation is remembered for later requests and
said in the completion's note).

Under a request's deadline (`tether.deadlines`: a served question's) each try gets at most
the time the request has left, as the SDK's timeout too, so the HTTP request is closed at the
deadline rather than left to run (`tether.providers.base`).

What it cannot do: after the `json_object` fallback the output is not constrained to the
schema; log-probabilities only when the server returns them; cost is an estimate from list
prices (`tether.providers.base`).
"""

from __future__ import annotations

import time
from typing import Any

from tether.config import http_url
from tether.errors import ProviderError
from tether.providers.base import (
    Rejected,
    RemoteProvider,
    Reply,
    Sleep,
    Tokens,
    chat_messages,
    first_token_logprobs,
    map_finish,
    read_reply,
    timeout_of,
    tool_action,
    with_selection,
)
from tether.types import Capabilities, Completion, ModelRequest


class _TopLogprob(Reply):
    token: str
    logprob: float


class _TokenLogprobs(Reply):
    top_logprobs: list[_TopLogprob] | None = None


class _Logprobs(Reply):
    content: list[_TokenLogprobs] | None = None


class _Function(Reply):
    name: str
    arguments: str = "{}"


class _ToolCall(Reply):
    function: _Function


class _Message(Reply):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(Reply):
    message: _Message
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Usage(Reply):
    prompt_tokens: Tokens = None
    completion_tokens: Tokens = None


class ChatReply(Reply):
    """What tether reads of a chat completion."""

    model: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None


class OpenAICompatibleProvider(RemoteProvider):
    """Chat completions through the `openai` SDK, for any OpenAI-compatible server."""

    # a remote model: it writes cited answers (json); a second opinion would be a paid call
    capabilities = Capabilities(answer_mode="json", judge="align", model=True, tool_use=True)

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        *,
        sleep: Sleep = time.sleep,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        import openai

        base_url = http_url(base_url, "base_url")
        super().__init__(
            openai, "openai", model, timeout, max_retries, sleep, (backoff_base, backoff_max)
        )
        self._adapted: set[str] = set()  # json_object, max_completion_tokens, no_temperature
        if not api_key:
            if base_url is None:
                raise ProviderError(
                    "no API key for openai: set TETHER_API_KEY or OPENAI_API_KEY "
                    "(or TETHER_BASE_URL for a local server)"
                )
            api_key = "not-needed"  # local servers (Ollama, vLLM, llama.cpp) ignore it
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.base_url = str(self._client.base_url).rstrip("/")

    def describe(self) -> str:
        return with_selection(self.selection, f"openai-compatible {self.model} at {self.base_url}")

    def _create(self, kwargs: dict[str, Any]) -> Any:
        """The SDK's chat completion, each try with the seconds it may take as the SDK's
        timeout (the request's connection is closed when they run out)."""
        create = self._client.chat.completions.create
        return self._retrying(lambda seconds: create(**kwargs, **timeout_of(seconds)))

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": chat_messages(request)}
        tokens = (
            "max_completion_tokens" if "max_completion_tokens" in self._adapted else "max_tokens"
        )
        kwargs[tokens] = request.max_tokens
        if "no_temperature" not in self._adapted:
            kwargs["temperature"] = request.temperature
        if request.logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = 10
        if request.tools:  # the agent's actions, as function tools: one call required
            kwargs["tools"] = [
                {"type": "function", "function": {"name": n, "description": d, "parameters": p}}
                for n, d, p in request.tools
            ]
            kwargs["tool_choice"] = "required"
        elif request.json_schema is not None:
            if "json_object" in self._adapted:
                kwargs["response_format"] = {"type": "json_object"}
            else:
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": request.schema_name,
                        "schema": request.json_schema,
                        "strict": True,
                    },
                }
        return kwargs

    @staticmethod
    def _adaptation(detail: str, kwargs: dict[str, Any]) -> str | None:
        """What to change after a 400 that names a parameter this server or model refuses."""
        text = detail.lower()
        response_format = kwargs.get("response_format") or {}
        if response_format.get("type") == "json_schema" and (
            "response_format" in text or "json_schema" in text
        ):
            return "json_object"
        if "max_tokens" in kwargs and "max_completion_tokens" in text:
            return "max_completion_tokens"
        if "temperature" in kwargs and "temperature" in text:
            return "no_temperature"
        return None

    def complete(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        while True:
            kwargs = self._kwargs(request)
            try:
                response = self._create(kwargs)
                break
            except Rejected as exc:
                change = self._adaptation(exc.detail, kwargs)
                if change is None or change in self._adapted:
                    raise
                self._adapted.add(change)  # remembered: later requests skip the refusal
        latency = time.perf_counter() - started
        reply = read_reply(ChatReply, response, self.name, self.base_url)
        notes = []
        if request.json_schema is not None and "json_object" in self._adapted:
            notes.append(
                "the server rejected a json_schema response_format; fell back to json_object "
                "(output not constrained to the schema)"
            )
        if "no_temperature" in self._adapted:
            notes.append("the model refused a temperature setting; it used its default")
        return self._completion(reply, request, latency, notes)

    def _completion(
        self, response: ChatReply, request: ModelRequest, latency: float, notes: list[str]
    ) -> Completion:
        if not response.choices:
            raise ProviderError(f"openai server at {self.base_url} returned no choices")
        choice = response.choices[0]
        message = choice.message
        refusal = message.refusal or None
        finish = "refusal" if refusal else map_finish(choice.finish_reason)
        top = first_token_logprobs(choice.logprobs) if request.logprobs else {}
        if request.logprobs and not top:
            notes.append("the server returned no log-probabilities")
        text = message.content or ""
        if request.tools and message.tool_calls:  # the first call, as the action's JSON
            call = message.tool_calls[0].function
            text = tool_action(call.name, call.arguments)
            finish = "stop" if finish == "tool_calls" else finish
        return self._priced(
            response,
            text,
            latency,
            notes,
            ("prompt_tokens", "completion_tokens"),
            finish_reason=finish,
            refusal=refusal,
            top_logprobs=top,
        )
