"""What every remote provider shares: a deadline per try, retries with backoff, list prices
and cost estimates, and the small readers of SDK responses (first-token log-probabilities,
finish reasons).

Each try of a request has one deadline, the provider's timeout (TETHER_TIMEOUT): connecting,
sending, waiting and reading the whole reply together, not per socket read (the SDKs' httpx
timeouts are per operation, so a server that sends one byte a second would never trip them).
The try runs in a worker thread and is abandoned at its deadline. A request makes at most
1 + max_retries tries, with the backoff waits between them.

Work under a request's deadline (`tether.deadlines.current()`: a served question's) gives each
try at most the time the request has left, and the SDK that same time as its own timeout, so
a server that says nothing until its reply is whole has its connection closed at the
request's deadline. A try cut short by the request's deadline, or a try or a backoff wait that
would start past it, raises `DeadlineError` (504 on the server): never retried, and never the
answer's `provider_error` (the request has run out of time, the model has not failed).

Remote providers retry 429, 5xx, timeouts and connection errors with exponential backoff
(tenacity's retry loop; the SDKs' own retries are off: they run inside the SDK call, so a
deadline around the call would span every try instead of one, their timeouts are per
socket operation, and the openai SDK gives up at once on a Retry-After over two minutes
where tether waits at most its cap and tries again), and raise `ProviderError` with a one-line message after
their retries, or at once for 401/403 (key), 404 (model) and a reply that is not JSON (an
HTML page from a proxy or a login portal); 400/422 raise `Rejected`, which a provider may
answer by adapting its request.

What it cannot do: an abandoned try is not killed: its daemon thread ends when its
connection does (or with the process): at the try's deadline for a server that sends nothing
meanwhile, later for one that keeps sending bytes more often than that (a drip); prices in
`PRICES_PER_MTOK` are list prices copied by hand and will go stale, so `cost_estimate` is an
estimate (and 0 with "cost unknown" for an unlisted model); the retry loop knows the `openai`
and `anthropic` SDKs' exception shapes only.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tether import deadlines
from tether.deadlines import Deadline
from tether.errors import DeadlineError, ProviderError
from tether.types import Completion, ModelRequest

Sleep = Callable[[float], None]
Call = Callable[[float | None], Any]
"""One try of an SDK call, given the seconds it may take (None: no limit), which it passes to
the SDK as the request's timeout."""
T = TypeVar("T")


class Reply(BaseModel):
    """The fields tether reads from an SDK's reply, with their types: the SDKs build replies
    without checking them, so a server's `"content": 5` would otherwise fail far from here."""

    model_config = ConfigDict(extra="ignore")


Tokens = Annotated[int, Field(ge=0)] | None
R = TypeVar("R", bound=Reply)


def read_reply(shape: type[R], response: Any, provider: str, where: str) -> R:
    """`response` (an SDK reply) checked against `shape`; a reply of another shape is a
    `ProviderError` naming the first wrong field."""
    # the SDKs hand back a JSON body that is not an object (a list, a number) as it is
    raw = (
        response.model_dump(warnings=False, exclude_unset=True)
        if isinstance(response, BaseModel)
        else response
    )
    try:
        return shape.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "the reply"
        raise ProviderError(
            f"{provider} server at {where} sent a reply of an unexpected shape"
            f" ({field}: {first['msg']})"
        ) from None


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


def cost_estimate(model: str, input_tokens: int, output_tokens: int) -> tuple[float, str]:
    """(USD at list prices, note): (0.0, "cost unknown") for a model without a listed price."""
    price = price_for(model)
    if price is None:
        return 0.0, "cost unknown"
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000, ""


def join_notes(*notes: str) -> str:
    """The non-empty notes, joined with "; "."""
    return "; ".join(n for n in notes if n)


def with_selection(selection: str, described: str) -> str:
    """A provider's description, followed by why it was chosen when that was said."""
    return f"{described}: {selection}" if selection else described


class DeadlinePassed(Exception):
    """A try that did not finish within its deadline (`within`)."""


def within(call: Callable[[], T], seconds: float) -> T:
    """`call()`, run in a daemon worker thread, if it finishes within `seconds` (its result
    or its exception); else `DeadlinePassed`, and the worker is left to end on its own."""
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the waiting thread as it is
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="tether-provider-try", daemon=True).start()
    if not done.wait(min(seconds, threading.TIMEOUT_MAX)):
        raise DeadlinePassed(seconds)
    finished, value = outcome[0]
    if not finished:
        raise value
    return value


class Rejected(ProviderError):
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


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line (whitespace collapsed), cut to `limit` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def token_usage(usage: Any, input_field: str, output_field: str) -> tuple[int, int]:
    """(input, output) tokens from an SDK's usage object (0 for a missing field)."""
    return (
        int(getattr(usage, input_field, 0) or 0),
        int(getattr(usage, output_field, 0) or 0),
    )


class RemoteProvider:
    """What the remote providers share: name, model, the SDK module whose exceptions the
    retry loop reads, retries with backoff, and `selection` (why it was chosen).

    A subclass creates its SDK client and sets `base_url` before its first request."""

    base_url: str = ""

    def __init__(
        self,
        sdk: Any,
        name: str,
        model: str,
        timeout: float,
        max_retries: int,
        sleep: Sleep,
        backoff: tuple[float, float],
    ) -> None:
        self._sdk = sdk
        self.name = name
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.selection = ""
        self._sleep = sleep
        self._backoff = backoff

    def _priced(
        self,
        response: Any,
        text: str,
        latency: float,
        notes: list[str],
        usage_fields: tuple[str, str],
        **fields: Any,
    ) -> Completion:
        """A Completion of `response` (an SDK reply): its model (else this provider's), token
        usage read from its `usage` by `usage_fields` (input, output), the estimated cost and
        the cost note after `notes`; `fields` are the other Completion fields."""
        used = token_usage(getattr(response, "usage", None), *usage_fields)
        cost, cost_note = cost_estimate(self.model, *used)
        return Completion(
            text=text,
            model=getattr(response, "model", None) or self.model,
            provider=self.name,
            input_tokens=used[0],
            output_tokens=used[1],
            latency_s=latency,
            cost_usd=cost,
            cost_known=price_for(self.model) is not None,
            note=join_notes(*notes, cost_note),
            **fields,
        )

    def _retrying(self, call: Call) -> Any:
        """`call_with_retries` with this provider's SDK, name, model, URL, retries and backoff,
        under the deadline of the request this thread works for (`tether.deadlines.current`)."""
        return call_with_retries(
            call,
            sdk=self._sdk,
            provider=self.name,
            model=self.model,
            where=self.base_url,
            deadline=self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
            backoff_base=self._backoff[0],
            backoff_max=self._backoff[1],
            until=deadlines.current(),
        )


class _Retryable(Exception):
    """A try that failed in a way worth another try: why, and the server's Retry-After."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def timeout_of(seconds: float | None) -> dict[str, Any]:
    """The keyword argument that gives an SDK call `seconds` as its timeout (none for None)."""
    return {} if seconds is None else {"timeout": seconds}


def _try_seconds(deadline: float | None, until: Deadline | None) -> tuple[float | None, bool]:
    """(The seconds a try may take, whether the request's deadline `until` is what limits it):
    the per-try `deadline`, or less when the request has less left."""
    left = until.remaining() if until is not None else None
    if left is not None and (deadline is None or left < deadline):
        return left, True
    return deadline, False


def _past_deadline(provider: str, where: str) -> DeadlineError:
    return DeadlineError(
        f"the request ran past its deadline while {provider} at {where} answered;"
        " the model call was given up and its connection closed"
    )


def _one_try(
    call: Call,
    sdk: Any,
    provider: str,
    model: str,
    where: str,
    deadline: float | None,
    until: Deadline | None = None,
) -> Any:
    """One try: the reply, `_Retryable` for 429/5xx/timeouts/connection errors, `DeadlineError`
    when the request's deadline `until` has passed or cuts the try short, else the one-line
    `ProviderError` (or `Rejected`) for the failure."""
    if until is not None:
        until.check(f"the call to {provider}")
    seconds, cut = _try_seconds(deadline, until)
    try:
        reply = call(None) if seconds is None else within(lambda: call(seconds), seconds)
        return _json_reply(reply, provider, where)
    except DeadlinePassed:
        if cut:
            raise _past_deadline(provider, where) from None
        raise _Retryable(f"timed out (no complete reply within {deadline:g} s)") from None
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"{provider} server at {where} sent a reply that is not JSON"
            f" ({exc.msg} at character {exc.pos}): check TETHER_BASE_URL"
        ) from None
    except RecursionError:
        raise ProviderError(
            f"{provider} server at {where} sent JSON nested too deeply to read:"
            " check TETHER_BASE_URL"
        ) from None
    except sdk.APIStatusError as exc:
        status = int(getattr(exc, "status_code", 0) or 0)
        detail = one_line(_status_detail(exc))
        if status in (401, 403):
            raise ProviderError(
                f"authentication failed for {where}: check TETHER_API_KEY"
            ) from None
        if status == 404:
            raise ProviderError(f"model '{model}' not found at {where}") from None
        if status in (400, 422):
            raise Rejected(
                f"{provider} rejected the request ({status}): {detail}", status, detail
            ) from None
        if not (status in (408, 409, 429) or status >= 500):
            raise ProviderError(f"{provider} error {status} from {where}: {detail}") from None
        raise _Retryable(f"{status}: {detail}", _retry_after(exc)) from None
    except sdk.APITimeoutError:
        if cut:  # the SDK's own timeout, the time the request had left, came first
            raise _past_deadline(provider, where) from None
        raise _Retryable("timed out") from None
    except sdk.APIConnectionError as exc:
        raise _Retryable(
            f"connection failed ({one_line(str(exc.__cause__ or exc), 120)})"
        ) from None


def call_with_retries(
    call: Call,
    *,
    sdk: Any,
    provider: str,
    model: str,
    where: str,
    max_retries: int,
    sleep: Sleep,
    backoff_base: float,
    backoff_max: float,
    deadline: float | None = None,
    until: Deadline | None = None,
) -> Any:
    """Run `call` (given each try's seconds), retrying 429/5xx/timeouts/connection errors; map
    the rest to ProviderError.

    `sdk` is the `openai` or `anthropic` module (both have the same exception shapes);
    `deadline` is the seconds each try may take in all (None: no deadline of its own); `until`,
    the deadline of the request the call is made for (None: none): no try runs past it, no
    wait sleeps past it, and past it the call raises `DeadlineError`. The loop is tenacity's:
    at most 1 + `max_retries` tries, waits of `backoff_base` * 2^n capped at `backoff_max`,
    raised to the server's Retry-After (within the cap), slept by `sleep`.
    """
    import tenacity

    def pause(seconds: float) -> None:  # never past `until`: the next try then raises
        left = until.remaining() if until is not None else None
        sleep(seconds if left is None else min(seconds, left))

    def wait(state: tenacity.RetryCallState) -> float:
        delay = min(backoff_max, backoff_base * (2 ** (state.attempt_number - 1)))
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Retryable) and failure.retry_after is not None:
            delay = min(backoff_max, max(delay, failure.retry_after))
        return delay

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(_Retryable),
        stop=tenacity.stop_after_attempt(1 + max(0, max_retries)),
        wait=wait,
        sleep=pause,
        reraise=True,
    )
    try:
        return retrying(_one_try, call, sdk, provider, model, where, deadline, until)
    except _Retryable as exc:
        tries = retrying.statistics.get("attempt_number", 1)
        raise ProviderError(
            f"{provider} request to {where} failed after {tries} "
            f"{'try' if tries == 1 else 'tries'}: {exc.reason}"
        ) from None


def _json_reply(reply: Any, provider: str, where: str) -> Any:
    """The SDK's reply, unless it is the raw text the SDKs return for a body that is not
    declared as JSON (an HTML page from a proxy, a login portal, a wrong URL)."""
    if isinstance(reply, str | bytes):
        text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
        raise ProviderError(
            f"{provider} server at {where} sent a reply that is not JSON"
            f" ({one_line(text, 60)!r}): check TETHER_BASE_URL"
        )
    return reply


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


def first_token_logprobs(logprobs: Any) -> dict[str, float]:
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


def map_finish(reason: str | None) -> str:
    """An OpenAI-shaped finish reason as a Completion's: length, refusal or stop."""
    if reason == "length":
        return "length"
    if reason in ("content_filter", "refusal"):
        return "refusal"
    return "stop"


def chat_messages(request: ModelRequest) -> list[dict[str, str]]:
    """The request's messages as chat-completions dicts (role, content)."""
    return [{"role": m.role, "content": m.content} for m in request.messages]


def tool_action(name: str, arguments: Any) -> str:
    """A tool call as the action JSON the agent loop reads: {"action": name, ...arguments}
    (`arguments` a dict or its JSON text; text that is not a JSON object is kept, under
    "arguments", for the loop to report)."""
    args = arguments
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments or "{}")
        except (json.JSONDecodeError, RecursionError):
            args = None
    if not isinstance(args, dict):
        args = {"arguments": arguments}
    return json.dumps({"action": name, **args}, ensure_ascii=False)
