"""The HTTP plumbing of `tether serve`: problem bodies (RFC 9457 style) for every error, the
request size limit, the response's audience and security headers, and the Prometheus metrics.

- `ProblemDetails`: the JSON body of every 4xx/5xx (`application/problem+json`): type, title,
  status, detail. `problem_of` makes it for any exception: a TetherError by its class's
  `http_status`, `problem_type()` and `title` (`tether.errors`: 400, a NotFoundError 404, a
  ConflictError 409, a LimitError 413, a DeadlineError 504, an UpstreamError 502, an
  UnavailableError 503), its detail the message, or the class's `public` sentence where the
  message names the server's own files (the index's path: then the message goes to the log,
  each distinct one at most once a minute); the server's own refusals (`Refused`: keys, rate,
  lanes, body size) `about:blank` with the HTTP reason; an unexpected exception a 500 with a
  fixed sentence, never a traceback.
- `Guard`: one ASGI middleware that refuses a body over the size limit (413, whether or not
  the client sent a Content-Length) or one that has not all arrived `body_timeout_s` seconds
  after the request's headers (408, and the connection is closed), adds `Tether-Audience` to every response computed for an
  audience and `SECURITY_HEADERS` to every response (a response that sets its own
  Content-Security-Policy keeps it: the opt-in /docs page), and counts requests and their
  latency per route.
- `Metrics`: the counters and histograms of one app, in a registry of its own;
  `watch_queries` adds the query embedder's counts (the query-vector cache's hits and
  misses, the batches), read from the engine when /metrics is asked; `watch` adds what a
  `tether.server.watch.Watch` says of the index and the audit (failures, the last one's time).
- `report_page`: a generated page (the health report) allowed its inline styles by hash only.
- `docs_page`: FastAPI's Swagger UI page with a Content-Security-Policy of its own (the
  page's CDN and its one inline script, by hash), served only when `--docs` asks for it.

What it cannot do: it never decides an audience (the key does, in `tether.server.api`); the
metrics count this process's requests (`tether.server.shared` adds them up across
servers). Responses uvicorn writes itself (a malformed request line) carry none of these
headers.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.server.watch import Watch

AUDIENCE_HEADER = "Tether-Audience"
PROBLEM_TYPE = "application/problem+json"

# The page (static/index.html) loads one script and one stylesheet from /static and sets no
# inline script or style, so it needs nothing beyond its own origin.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = tuple(
    (name.encode(), value.encode())
    for name, value in (
        ("Content-Security-Policy", CSP),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    )
)
SWAGGER_CDN = "https://cdn.jsdelivr.net"


class ProblemDetails(BaseModel):
    """An error, RFC 9457 style: `title` names the kind (the HTTP reason), `detail` says
    what went wrong in one line."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str


TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


UNEXPECTED = "the server met an unexpected error (see its log)"
LOG_EVERY_S = 60.0  # a hidden error's message is logged at most this often (each message)
log = logging.getLogger("uvicorn.error")


class _Hidden:
    """The messages of the errors answered with their `public` sentence, each logged when
    first seen and then at most once every LOG_EVERY_S seconds (a damaged index fails every
    request the same way: its log says so once a minute, not once a request)."""

    def __init__(self) -> None:
        self._said: dict[str, float] = {}
        self._lock = threading.Lock()

    def note(self, exc: TetherError) -> None:
        message = str(exc)
        now = time.monotonic()
        with self._lock:
            if now - self._said.get(message, -LOG_EVERY_S) < LOG_EVERY_S:
                return
            if len(self._said) > 1000:
                self._said.clear()
            self._said[message] = now
        log.error("tether: answered %d (%s): %s", exc.http_status, type(exc).__name__, message)


_hidden = _Hidden()


def problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A problem response (`about:blank`) with this status and detail."""
    body = ProblemDetails(title=TITLES.get(status, "Error"), status=status, detail=detail)
    return problem_response(body, headers)


def problem_response(body: ProblemDetails, headers: dict[str, str] | None = None) -> JSONResponse:
    """`body` as an `application/problem+json` response of its status."""
    return JSONResponse(
        body.model_dump(), status_code=body.status, headers=headers, media_type=PROBLEM_TYPE
    )


def problem_of(exc: BaseException) -> tuple[ProblemDetails, dict[str, str]]:
    """The problem body (and headers) that answer `exc`: an HTTP error (`Refused`) as it says,
    a TetherError by its class (`tether.errors`; with the class's `public` sentence for a
    message about the server's own files, which is logged instead), anything else a 500 that
    says nothing of it."""
    if isinstance(exc, StarletteHTTPException):
        status = exc.status_code
        title = TITLES.get(status, "Error")
        body = ProblemDetails(title=title, status=status, detail=str(exc.detail))
        return body, dict(exc.headers or {})
    if isinstance(exc, TetherError):
        if exc.public is not None:
            _hidden.note(exc)
        detail = exc.public if exc.public is not None else str(exc)
        return ProblemDetails(
            type=exc.problem_type(), title=exc.title, status=exc.http_status, detail=detail
        ), {}
    return ProblemDetails(title=TITLES[500], status=500, detail=UNEXPECTED), {}


class Refused(HTTPException):
    """An error the server answers with a problem body (and headers such as Retry-After)."""


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` entry for these problem statuses."""
    return {
        s: {"model": ProblemDetails, "content": {PROBLEM_TYPE: {}}, "description": TITLES[s]}
        for s in statuses
    }


def _validation_detail(exc: RequestValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}" if where else "the request is not valid"


def install_problems(app: FastAPI) -> None:
    """Every error the app can meet answered as a problem body."""

    async def answer(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(*problem_of(exc))

    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return problem(422, _validation_detail(exc))

    app.add_exception_handler(StarletteHTTPException, answer)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(TetherError, answer)
    app.add_exception_handler(Exception, answer)


class Metrics:
    """What `/metrics` shows: requests and latency per route and status, refusals by who
    refused, flagged claims, provider errors, requests turned away (rate limit, failed
    authentications, a full model or checker line); whether the counts are shared by the
    servers on the store and how many servers they add up (`tether.server.shared`)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "tether_requests", "HTTP requests", ["route", "method", "status"], registry=r
        )
        self.latency = Histogram(
            "tether_request_seconds",
            "Request latency",
            ["route"],
            registry=r,
            buckets=(0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.refusals = Counter("tether_refusals", "Refused questions", ["by"], registry=r)
        self.flagged = Counter("tether_flagged_claims", "Claims with a flag", registry=r)
        self.provider_errors = Counter(
            "tether_provider_errors", "Questions the provider failed", registry=r
        )
        self.turned_away = Counter(
            "tether_turned_away", "Requests refused for load", ["reason"], registry=r
        )
        self.shared = Gauge(
            "tether_metrics_shared",
            "1: the counts are the totals of every server on the store; 0: this process's own",
            registry=r,
        )
        self.workers = Gauge(
            "tether_serve_workers",
            "Servers whose counts are shown (live ones on a shared store; 1: this process)",
            registry=r,
        )

    def watch_queries(self, counts: Callable[[], dict[str, int]]) -> None:
        """Show the query embedder's `counts()` (`tether.app.Models.query_counts`) too."""
        self.registry.register(_QueryCounts(counts))

    def watch(self, watch: Watch) -> None:
        """Show what `watch` says of the index and the audit too (`_Watched`)."""
        self.registry.register(_Watched(watch))


class _Watched:
    """The index's and the audit's state as Prometheus families, read at each collection:
    requests that found the index unusable, whether it is now; audit records not written,
    whether the last write failed, when the last failure was."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch

    def collect(self) -> Iterator[Metric]:
        index = self.watch.index.state()
        audit = self.watch.audit.state()
        yield CounterMetricFamily(
            "tether_index_errors",
            "Times requests (and checks) found the index unusable",
            value=index.errors,
        )
        yield GaugeMetricFamily(
            "tether_index_unavailable",
            "1: a request found the index unusable and no check has passed since",
            value=int(index.failing),
        )
        yield CounterMetricFamily(
            "tether_audit_failures",
            "Audit records (answers, dropped-answer notes) not written",
            value=audit.failures,
        )
        yield GaugeMetricFamily(
            "tether_audit_failing", "1: the last audit write failed", value=int(audit.failing)
        )
        yield GaugeMetricFamily(
            "tether_audit_last_failure_timestamp_seconds",
            "When the last audit write failed (Unix time; 0: none has)",
            value=audit.last_failure or 0.0,
        )


class _QueryCounts:
    """The query embedder's counts as Prometheus families, read at each collection."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        c = self.counts()
        cache = CounterMetricFamily(
            "tether_query_vector_cache",
            "Query vectors looked up in the process's cache",
            labels=["result"],
        )
        cache.add_metric(["hit"], c["hits"])
        cache.add_metric(["miss"], c["misses"])
        yield cache
        yield GaugeMetricFamily(
            "tether_query_vector_cache_entries", "Query vectors kept", value=c["entries"]
        )
        yield CounterMetricFamily(
            "tether_query_batches", "Calls of the query embedder (batches)", value=c["batches"]
        )
        yield CounterMetricFamily(
            "tether_query_batched", "Queries embedded in batches", value=c["batched_texts"]
        )
        yield CounterMetricFamily(
            "tether_query_expired",
            "Queries not embedded: past their deadline",
            value=c["expired"],
        )


class Guard:
    """ASGI middleware: the body size limit and deadline, the audience and security headers,
    request metrics."""

    def __init__(
        self, app: Any, *, max_body: int, metrics: Metrics, body_timeout_s: float = 30.0
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.metrics = metrics
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await problem(413, f"the request body is over {self.max_body} bytes")(
                scope, receive, send
            )
            self._count(scope, 413, started)
            return
        seen = 0
        body_ends = asyncio.get_running_loop().time() + self.body_timeout_s
        body_done = False

        async def limited() -> Any:
            nonlocal seen, body_done
            if body_done:  # the app waits for a disconnect (a stream): no deadline
                return await receive()
            left = body_ends - asyncio.get_running_loop().time()
            try:
                message = await asyncio.wait_for(receive(), max(left, 0.0))
            except TimeoutError:
                detail = f"the request body did not arrive within {self.body_timeout_s:g} s"
                raise Refused(408, detail, headers={"Connection": "close"}) from None
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise Refused(413, f"the request body is over {self.max_body} bytes")
            body_done = message["type"] != "http.request" or not message.get("more_body")
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = list(message.get("headers", []))
                audience = (scope.get("state") or {}).get("audience")
                if audience:
                    headers.append((AUDIENCE_HEADER.lower().encode(), audience.encode()))
                message = {**message, "headers": with_security_headers(headers)}
            await send(message)

        try:
            await self.app(scope, limited, sending)
        finally:
            self._count(scope, status[0], started)

    def _count(self, scope: Any, status: int, started: float) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        self.metrics.requests.labels(route, scope.get("method", ""), str(status)).inc()
        self.metrics.latency.labels(route).observe(time.perf_counter() - started)


def with_security_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` plus each of `SECURITY_HEADERS` the response does not set itself."""
    present = {name.lower() for name, _ in headers}
    return headers + [
        (name, value) for name, value in SECURITY_HEADERS if name.lower() not in present
    ]


def inline_hashes(html: str, tag: str) -> str:
    """The CSP sources ('sha256-...') of each inline `<tag>` of `html`, to allow just those."""
    return " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)
    )


def report_page(html: str) -> HTMLResponse:
    """A generated page (the health report) with a policy of its own: its inline styles, by
    hash, and nothing else (no script, no other source)."""
    policy = f"default-src 'none'; style-src {inline_hashes(html, 'style')}; frame-ancestors 'none'"
    return HTMLResponse(html, headers={"Content-Security-Policy": policy})


def docs_page(openapi_url: str, title: str) -> HTMLResponse:
    """FastAPI's Swagger UI for `openapi_url`, with a Content-Security-Policy that lets it load
    Swagger UI from its CDN (the browser that opens the page fetches it from there) and run its
    one inline script (allowed by its SHA-256, nothing else inline)."""
    page = get_swagger_ui_html(openapi_url=openapi_url, title=title)
    html = bytes(page.body).decode()
    hashes = inline_hashes(html, "script")
    policy = (
        f"default-src 'self'; script-src 'self' {SWAGGER_CDN} {hashes};"
        f" style-src 'self' {SWAGGER_CDN} 'unsafe-inline'; img-src 'self' data: https:;"
        " connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    )
    return HTMLResponse(html, headers={"Content-Security-Policy": policy})
