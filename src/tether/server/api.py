"""The HTTP API of `tether serve`: `create_app` builds a FastAPI app over one index.

Endpoints (OpenAPI at /openapi.json; Swagger UI at /docs only with `ServeConfig.docs`):
POST /v1/ask (an AskResult, or server-sent events with `stream`), POST /v1/search, GET
/v1/documents, GET /v1/documents/{doc_id}, GET /v1/chunks/{chunk_id}, POST /v1/check, POST
/v1/feedback (helpful or wrong on an answer, by its `audit_id`), GET /v1/whoami, GET /v1/flags
(each flag in plain words), GET /v1/health (the health report, staff keys; `format=html`
for a page), GET /healthz (up), GET /readyz (the models loaded and the index usable: 503
while the server warms up or while its index cannot be used; the audit's failures), GET
/metrics (staff keys), and the web page at /.

The audience comes from the key (`Authorization: Bearer KEY`, see `tether.server.keys`), never
from the body: `view` may only narrow it. Every response computed for an audience carries it
in the `Tether-Audience` header (an AskResult also in its `audience` field). A document or
chunk the audience may not see is answered exactly as one that does not exist. Every response
carries the security headers of `tether.server.http.SECURITY_HEADERS` (CSP, nosniff, no
framing, no referrer).

What it cannot do: it holds no state but the index and what it shares with the other servers
on it (`tether.server.shared`: on a PostgreSQL collection, rate limits, revocations and
metrics are the store's, so several processes serve one store as one); the web page and the
API share one origin, CORS is off unless origins are given.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    StreamingResponse,
)
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from tether import schemas
from tether._version import __version__
from tether.app import Models, SearchOptions, Workspace, as_of_value, shared_models
from tether.config import Settings, load_settings
from tether.deadlines import Deadline
from tether.errors import NotFoundError
from tether.server.http import (
    Guard,
    Metrics,
    Refused,
    docs_page,
    install_problems,
    problem,
    problem_of,
    problem_responses,
    report_page,
)
from tether.server.keys import ANONYMOUS, ApiKey, KeyRing, digest
from tether.server.limits import AuditQuota
from tether.server.requests import (
    AskRequest,
    Caller,
    CheckRequest,
    FeedbackRequest,
    Health,
    Readiness,
    SearchRequest,
    View,
)
from tether.server.shared import PUBLISH_EVERY_S, Shared
from tether.server.slots import Gauges, ModelSlots, slotted
from tether.server.watch import Watch
from tether.server.workers import Lane, Warmup, wait
from tether.types import Audience, Claim
from tether.verify.options import CheckOptions

_log = logging.getLogger("tether.server")
T = TypeVar("T")
STATIC = files("tether.server") / "static"


@dataclass(frozen=True)
class ServeConfig:
    """How a server runs: `readers` searches at a time; `model_slots` model calls at a time
    (`tether.server.slots`), with `model_slots + model_waiting` answers under way at once,
    each on a thread of its own (503 beyond): their retrieval, gate and checks run at once
    and only their model calls wait for a slot, so a question refused before the model is
    never in line behind a model call; `check_slots` checks at a time with `check_waiting`
    more in line (503 beyond); each in a lane of its own (a search never waits for a thread
    held by an answer or a check: `tether.server.workers`); `deadline_s` per request (504
    beyond; a remote model call is given up and its connection closed there); `max_body`
    bytes per request (413 beyond) arriving within `body_timeout_s` of the headers (408
    beyond); `rate`/`burst` requests a second per key
    (429 beyond; 0: no limit); `failed_auth_per_minute` failed authentications per client
    address (429 beyond, `tether.server.limits.FailedAuth`; 0: no limit);
    `anonymous_audit_per_day` anonymous answers recorded per client address and UTC day
    (beyond: answered, counted as dropped; `tether.server.limits.AuditQuota`; 0: no cap);
    `cors_origins` allowed (none: CORS off); `docs`: serve Swagger UI at /docs (off by
    default: the page loads Swagger UI from a CDN); `warm`: load the models when the server
    starts (`GET /readyz` says when they are), not on the first question;
    `metrics_every_s`: how often a server on a PostgreSQL collection adds its counts to the
    store's totals (`tether.server.shared`). On a PostgreSQL collection the rate limit and the
    failed authentications are counted in the store, for every server on it."""

    readers: int = 4
    model_slots: int = 1
    model_waiting: int = 4
    check_slots: int = 2
    check_waiting: int = 4
    deadline_s: float = 60.0
    max_body: int = 64 * 1024
    body_timeout_s: float = 30.0
    rate: float = 10.0
    burst: int = 20
    failed_auth_per_minute: float = 10.0
    anonymous_audit_per_day: int = 200
    cors_origins: tuple[str, ...] = ()
    docs: bool = False
    warm: bool = True
    metrics_every_s: float = PUBLISH_EVERY_S


class Server:
    """What one app holds: the reader, answer and checker lanes, the model's slots, the keys,
    the limits, the metrics, and what it shares with the other servers on its store
    (`shared`)."""

    def __init__(
        self,
        make: Callable[[], Workspace],
        keys: KeyRing,
        config: ServeConfig,
        models: Models | None = None,
    ) -> None:
        self.config = config
        self.make = make
        self.keys = keys
        self.watch = Watch()  # the index's and the audit's state (/readyz, /metrics)
        self.readers = Lane("reader", make, config.readers, watch=self.watch)
        # an answer takes a thread of its own at once; its model calls take turns for a slot
        self.slots = ModelSlots(config.model_slots)
        answering = config.model_slots + config.model_waiting
        self.answers = Lane("answer", self._answerer, answering, 0, watch=self.watch)
        self.checker = Lane(
            "check", make, config.check_slots, config.check_waiting,
            busy="the checker is busy: too many checks are waiting", watch=self.watch,
        )  # fmt: skip
        self.audit_quota = AuditQuota(config.anonymous_audit_per_day)
        self.metrics = Metrics()
        self.metrics.watch(self.watch)
        if models is not None:
            self.metrics.watch_queries(models.query_counts)
        self.metrics.registry.register(Gauges(self.slots))
        with make() as ws:
            state = ws.open_shared_state()
        self.shared = Shared(
            state, self.metrics, rate=config.rate, burst=config.burst,
            failed_auth_per_minute=config.failed_auth_per_minute,
            publish_every_s=config.metrics_every_s,
        )  # fmt: skip
        self.limiter = self.shared.limiter
        self.failures = self.shared.failures
        self.warmup = Warmup()

    def start(self) -> None:
        """Begin warming up (when the config says so) and sharing the metrics as the server
        starts."""
        self.shared.start()
        self.warmup.start(self.answers, self.config.warm)

    def _answerer(self) -> Workspace:
        """A Workspace of the answer lane: its provider's model calls take the slots."""
        ws = self.make()
        ws.use_provider(slotted(ws.provider, self.slots))
        return ws

    def identify(self, authorization: str | None, key: str | None, address: str) -> ApiKey:
        """The caller's ApiKey from the request's Authorization header (`key`: its bearer
        token), after the limit on failed authentications from `address`: 429 while that is
        used up, 401 for a key that is unknown or revoked (alike), a header that is not
        `Bearer KEY`, or no key where one is needed."""
        challenge = {"WWW-Authenticate": "Bearer"}
        if authorization:
            blocked = self.failures.blocked(address)
            if blocked:
                self.metrics.turned_away.labels("auth").inc()
                message = "too many failed authentications from this address"
                raise Refused(429, message, headers={"Retry-After": str(blocked)})
        if key is not None:
            found = self.keys.lookup(key)
            if found is None or self.shared.revoked(digest(key)):
                self.failures.failed(address)
                raise Refused(401, "the key is not known", headers=challenge)
            return found
        if authorization:
            self.failures.failed(address)
            raise Refused(401, "use `Authorization: Bearer KEY`", headers=challenge)
        if self.keys.allow_anonymous:
            return ANONYMOUS
        raise Refused(401, "a key is needed: `Authorization: Bearer KEY`", headers=challenge)

    def authorize(
        self, authorization: str | None, key: str | None, address: str
    ) -> tuple[ApiKey, Refused | None]:
        """`identify` the caller, then `admit` it: its ApiKey and the rate limit's refusal
        (None: admitted), in one call (one trip off the event loop when they ask the
        store)."""
        found = self.identify(authorization, key, address)
        try:
            self.admit(found, address)
        except Refused as refused:
            return found, refused
        return found, None

    def admit(self, key: ApiKey, address: str) -> None:
        """Take one of the rate limit's tokens for `key` (an anonymous caller's: its
        address's), or 429 with Retry-After."""
        wait = self.limiter.take(key.name if key is not ANONYMOUS else f"anonymous@{address}")
        if wait:
            self.metrics.turned_away.labels("rate").inc()
            raise Refused(429, "too many requests", headers={"Retry-After": str(math.ceil(wait))})

    async def read(self, fn: Callable[[Workspace], T], token: Deadline | None = None) -> T:
        """`fn(workspace)` on a reader thread, under the deadline (`token`, the work's own,
        cancelled when the wait gives up)."""
        return await self.readers.run(fn, self.config.deadline_s, token)

    def answer(self, fn: Callable[[Workspace], T]) -> Future[T]:
        """Start `fn(workspace)` on the answer lane (its model calls take the model's slots),
        or 503 when as many answers as it has threads are under way."""
        return self._heavy(self.answers, fn, "queue")

    async def check(self, fn: Callable[[Workspace], T]) -> T:
        """`fn(workspace)` on the checker's lane under the deadline, or 503 when its line is
        full."""
        return await wait(self._heavy(self.checker, fn, "check"), self.config.deadline_s)

    def _heavy(self, lane: Lane, fn: Callable[[Workspace], T], reason: str) -> Future[T]:
        try:
            lane.admit()
        except Refused:
            self.metrics.turned_away.labels(reason).inc()
            raise
        return lane.submit(fn, admitted=True)

    def observe(self, result: schemas.WireAskResult) -> None:
        """Count a refusal, flagged claims, a provider error."""
        if result.refused_by is not None:
            self.metrics.refusals.labels(result.refused_by).inc()
        self.metrics.flagged.inc(sum(not c.ok for c in result.checks))
        if result.problem is not None and result.problem.kind == "provider_error":
            self.metrics.provider_errors.inc()

    def audits(self, key: ApiKey, address: str) -> bool:
        """Whether an answer about to run is recorded in the audit: always for a key, for an
        anonymous caller while its address is under the daily cap (counted here, so a request
        turned away before it runs takes nothing)."""
        return key is not ANONYMOUS or self.audit_quota.admit(address)

    def dropped(self, ws: Workspace) -> None:
        """Count one anonymous answer not recorded; write the count when it is due."""
        ws.record_dropped(self.audit_quota.dropped())

    def close(self) -> None:
        """Stop the lanes; write the dropped answers not yet written and the last counts."""
        self.readers.close()
        self.answers.close()
        self.checker.close()
        left = self.audit_quota.pending()
        if left:
            with self.make() as ws:
                ws.record_dropped(left)
        self.shared.close()


def client_address(request: Request) -> str:
    """The client's address as uvicorn gives it (see `tether.server.running`)."""
    return request.client.host if request.client else "?"


def server_of(request: Request) -> Server:
    server: Server = request.app.state.tether
    return server


BEARER = HTTPBearer(auto_error=False, description="A key from the server's keys file.")


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
) -> ApiKey:
    """The key of the request (or the anonymous public caller), after the limits on failed
    authentications (per client address) and on requests (per key): `Server.authorize`
    (off the event loop when it asks the store)."""
    s = server_of(request)
    host = client_address(request)
    token = credentials.credentials if credentials is not None else None
    authorization = request.headers.get("authorization")
    key, refused = await s.shared.call(s.authorize, authorization, token, host)
    request.state.audience = key.audience  # a 429 for the rate says whose it was
    if refused is not None:
        raise refused
    return key


Key = Annotated[ApiKey, Depends(caller)]


def audience_for(request: Request, key: ApiKey, view: View) -> Audience:
    """The audience to compute for: the key's, or the public view a staff key asks for."""
    if view == "staff" and key.audience != "staff":
        raise Refused(403, "a public key cannot ask for the staff view")
    audience: Audience = view or key.audience
    request.state.audience = audience
    return audience


# ---- endpoints ----------------------------------------------------------------------------


async def ask(body: AskRequest, request: Request, key: Key) -> Any:
    """Answer a question with checked claims (an AskResult; with `stream`, server-sent events:
    `retrieval`, `gate`, `answerability`, `text` (staff readers: each piece of the unchecked
    draft as the model writes it, `{"text": ...}`), `answer`, `check` per claim, then `result`
    or `error`)."""
    from tether.answering.pipeline import AskOptions

    s = server_of(request)
    audience = audience_for(request, key, body.view)
    if not body.verify and audience != "staff":  # an unchecked answer is for staff only
        raise Refused(403, "the checks cannot be turned off for a public reader (verify: false)")
    options = AskOptions(
        as_of=as_of_value(body.as_of), audience=audience,
        language=body.language, method=body.method, k=body.k, mode=body.mode,
        strict=body.strict, verify=body.verify, answerability=body.answerability,
        # the work itself stops at its next stage once the deadline has passed
        deadline=time.monotonic() + s.config.deadline_s,
    )  # fmt: skip
    host = client_address(request)
    if not body.stream:
        result = await wait(
            s.answer(lambda ws: _ask(ws, s, body.question, options, key, host)),
            s.config.deadline_s,
        )
        s.observe(result)
        return result
    loop = asyncio.get_running_loop()
    line: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def events(stage: str, partial: Any) -> None:
        for item in _stage(stage, partial):
            loop.call_soon_threadsafe(line.put_nowait, item)

    def text(piece: str) -> None:
        loop.call_soon_threadsafe(line.put_nowait, ("text", {"text": piece}))

    future = s.answer(lambda ws: _ask(ws, s, body.question, options, key, host, events, text))
    return StreamingResponse(_stream(s, future, line), media_type="text/event-stream")


def _ask(
    ws: Workspace, s: Server, question: str, options: Any, key: ApiKey, address: str,
    events: Any = None, on_text: Callable[[str], None] | None = None,
) -> schemas.WireAskResult:  # fmt: skip
    """Answer on a worker, recorded in the audit as asked by the key's name ("anonymous"), or,
    for an anonymous caller over its daily cap, counted as dropped."""
    audit = s.audits(key, address)
    found = ws.ask(question, options, events=events, who=key.name, audit=audit, on_text=on_text)
    if found.problem is not None and found.problem.kind == "provider_error":  # the caller's is
        _log.warning("the model's provider failed: %s", found.problem.detail)  # a generic line
    if not audit:
        s.dropped(ws)
    if key is ANONYMOUS:  # see `feedback`: no id for a caller nobody can tell apart
        found = replace(found, audit_id=None)
    return schemas.WireAskResult.from_ask_result(found)


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _stage(stage: str, partial: Any) -> list[tuple[str, Any]]:
    """The events one stage of `ask` sends (wire shapes, as JSON data)."""
    wire = schemas.WireAskResult.from_ask_result(partial).model_dump(mode="json")
    if stage == "retrieval":
        return [("retrieval", {"method": wire["method"], "hits": wire["hits"]})]
    if stage == "gate":
        return [("gate", wire["gate"])]
    if stage == "answerability":
        return [("answerability", wire["answerability"])]
    if stage == "answer":
        keys = ("answer", "completion", "problem", "context")
        return [("answer", {k: wire[k] for k in keys})]
    return [("check", {"index": n, **c}) for n, c in enumerate(wire["checks"])]


async def _stream(
    s: Server, future: Future[schemas.WireAskResult], line: asyncio.Queue[tuple[str, Any]]
) -> AsyncIterator[str]:
    """The stage events as they come, then `result` (or `error`, a problem body)."""
    done = asyncio.ensure_future(wait(future, s.config.deadline_s))
    while True:
        getting = asyncio.ensure_future(line.get())
        await asyncio.wait({getting, done}, return_when=asyncio.FIRST_COMPLETED)
        if getting.done():
            yield _event(*getting.result())
            continue
        getting.cancel()
        break
    while not line.empty():
        yield _event(*line.get_nowait())
    try:
        result = done.result()
    except Exception as exc:
        body, _ = problem_of(exc)
        yield _event("error", body.model_dump())
        return
    s.observe(result)
    yield _event("result", result.model_dump(mode="json"))


async def search(body: SearchRequest, request: Request, key: Key) -> list[schemas.WireHit]:
    """The top passages for a query that the audience may see, in force on `as_of`."""
    s = server_of(request)
    deadline = Deadline.after(s.config.deadline_s)  # the search stops at its next stage past it
    options = SearchOptions(
        body.k, as_of_value(body.as_of), audience_for(request, key, body.view), body.method,
        deadline,
    )  # fmt: skip
    hits = await s.read(lambda ws: ws.search(body.query, options), deadline)
    return [schemas.WireHit.from_hit(h) for h in hits]


ViewQuery = Annotated[View, Query(description="At most the key's own audience.")]
NOT_FOUND = "no {what} with {name} {value!r}"


async def documents(
    request: Request, key: Key, view: ViewQuery = None
) -> list[schemas.WireDocument]:
    """The document versions the audience may see."""
    audience = audience_for(request, key, view)
    docs = await server_of(request).read(lambda ws: ws.documents(audience))
    return [schemas.WireDocument.from_info(d) for d in docs]


async def document(
    doc_id: str, request: Request, key: Key, view: ViewQuery = None
) -> list[schemas.WireDocument]:
    """The versions of one document (404 when the audience may see none: exactly as for a
    doc_id that does not exist)."""
    audience = audience_for(request, key, view)
    docs = await server_of(request).read(lambda ws: ws.documents(audience))
    found = [schemas.WireDocument.from_info(d) for d in docs if d.meta.doc_id == doc_id]
    if not found:
        raise NotFoundError(NOT_FOUND.format(what="document", name="doc_id", value=doc_id))
    return found


async def chunk(
    chunk_id: str, request: Request, key: Key, view: ViewQuery = None
) -> schemas.WireChunk:
    """One passage by its chunk ID (404 when the audience may not see it: exactly as for an
    ID that does not exist)."""
    audience = audience_for(request, key, view)
    found = await server_of(request).read(lambda ws: ws.read(chunk_id, audience))
    if found is None:
        raise NotFoundError(NOT_FOUND.format(what="chunk", name="chunk_id", value=chunk_id))
    return schemas.WireChunk.from_chunk(found)


async def check(body: CheckRequest, request: Request, key: Key) -> list[schemas.Check]:
    """Check claims against the given passages, as `ask` checks a model's answer (a passage
    the audience may not see counts as an unknown ID)."""
    options = CheckOptions(
        audience=audience_for(request, key, body.view), as_of=as_of_value(body.as_of),
        language=body.language, question=body.question, judge=body.judge,
    )  # fmt: skip
    claims = [Claim(c.text, tuple(c.chunk_ids)) for c in body.claims]
    found = await server_of(request).check(lambda ws: ws.check(claims, body.passage_ids, options))
    return [schemas.Check.from_check(c) for c in found]


async def feedback(body: FeedbackRequest, request: Request, key: Key) -> schemas.WireFeedback:
    """Say whether an answer was helpful or wrong (201: the stored record): its `audit_id`
    (from the AskResult), an optional note and, for a wrong one, the chunk ID of the passage
    that answers. A key may give feedback on the answers asked under its own name, a staff
    key on any; any other entry is a 404 worded exactly as an unknown id, and a passage the
    key may not see one worded as an unknown chunk. A second verdict from the same key
    replaces the first. Feedback needs a key (403 for an anonymous caller, whose answers
    carry no `audit_id`): anonymous callers share one name, so each could overwrite the
    others' verdicts, and ids that grow with every answer would tell anyone how many answers
    were given between two of theirs."""
    if key is ANONYMOUS:
        raise Refused(403, "feedback needs a key: an anonymous answer has no audit_id")
    audience = key.audience
    request.state.audience = audience
    found = await server_of(request).read(
        lambda ws: ws.feedback(
            body.audit_id, body.verdict, body.note, body.chunk_id, who=key.name,
            audience=audience,
        )
    )  # fmt: skip
    return schemas.WireFeedback.from_feedback(found)


async def whoami(request: Request, key: Key) -> Caller:
    """The key's name and audience."""
    return Caller(name=key.name, audience=key.audience)


async def flag_words() -> dict[str, str]:
    """Each flag kind in plain words, `{arg}` standing for the flag's argument (no key
    needed: the same text for everyone)."""
    from tether.verify.flags import CLUE_FLAGS, EXACT_FLAGS, SOURCE_FLAGS, describe

    kinds = sorted(EXACT_FLAGS | CLUE_FLAGS | SOURCE_FLAGS)
    return {kind: describe(f"{kind}:{{arg}}") for kind in kinds}


async def healthz() -> Health:
    """Whether the server is up (no key needed)."""
    return Health(status="ok", version=__version__)


async def readyz(request: Request) -> JSONResponse:
    """Whether the models are loaded and the index can be used (200) or not yet, or not (503;
    no key needed: the detail names no file); how the audit's writes are going."""
    s = server_of(request)
    status, detail, seconds = s.warmup.readiness()
    status, detail = s.watch.readiness(status, detail, s.readers)  # tether.server.watch
    body = Readiness(ready=status == "ready", status=status, detail=detail, seconds=seconds,
                     **s.watch.audit_fields())  # fmt: skip
    return JSONResponse(body.model_dump(), status_code=200 if body.ready else 503)


HEALTH_DEADLINE_S = 300.0  # the report looks at every passage: longer than a question


async def health(
    request: Request,
    key: Key,
    as_of: Annotated[str, Query(description="YYYY-MM-DD or today.")] = "today",
    since: Annotated[str | None, Query(description="Questions asked from this date on.")] = None,
    format: Annotated[Literal["json", "html"], Query(description="json or html.")] = "json",
) -> Any:
    """The collection's health report (staff keys only: a public key gets 404, as for a page
    that does not exist): content gaps, contradictions, staleness, hygiene. `format=html`:
    the report as one page."""
    from tether.health.report import render_html

    if key.audience != "staff":
        raise Refused(404, "Not Found")
    request.state.audience = "staff"
    when = as_of_value(as_of)
    start = as_of_value(since) if since else None
    s = server_of(request)
    deadline = max(s.config.deadline_s, HEALTH_DEADLINE_S)
    found = await s.readers.run(
        lambda ws: ws.health(when or "today", since=start.isoformat() if start else None),
        deadline,
    )
    if format == "html":
        return report_page(render_html(found))
    return schemas.WireHealthReport.from_report(found)


async def metrics(request: Request, key: Key) -> PlainTextResponse:
    """Prometheus metrics (staff keys only): on a PostgreSQL collection the totals of every
    server on it, else this process's counts (`tether_metrics_shared` says which)."""
    from prometheus_client import CONTENT_TYPE_LATEST

    if key.audience != "staff":
        raise Refused(403, "metrics are for staff keys")
    s = server_of(request)
    body = await s.shared.call(s.shared.render)
    return PlainTextResponse(body, media_type=CONTENT_TYPE_LATEST)


async def page() -> FileResponse:
    """The web page."""
    return FileResponse(str(STATIC / "index.html"), media_type="text/html")


# ---- the app ------------------------------------------------------------------------------


def create_app(
    index: Path | str | Settings | None = None,
    keys: KeyRing | None = None,
    *,
    config: ServeConfig | None = None,
    models: Models | None = None,
    settings: Settings | None = None,
    store: str | None = None,
) -> FastAPI:
    """The app over `index` (a path, or Settings naming it; default: Settings' index) or the
    server `store` (a postgresql:// URL; default: Settings' store, TETHER_STORE), accepting
    `keys` (default: none, anonymous callers allowed as the public audience). Workspaces
    share `models` (the process's own by default) and are built per worker."""
    if isinstance(index, Settings):
        settings, index = index, None
    chosen = settings if settings is not None else load_settings()
    conf = config or ServeConfig()
    ring = keys if keys is not None else KeyRing(allow_anonymous=True)
    shared = models if models is not None else shared_models()  # what a Workspace would use

    def make() -> Workspace:
        return Workspace.open(index, settings=chosen, models=shared, store=store)

    app = FastAPI(
        title="tether", version=__version__,
        description="Answers from a document collection with claims an agent can check.",
        responses=problem_responses(400, 401, 408, 409, 413, 422, 429, 500, 502, 503),
        docs_url=None, redoc_url=None,
    )  # fmt: skip
    app.state.tether = Server(make, ring, conf, shared)
    install_problems(app)
    _routes(app)
    if conf.docs:
        swagger = lambda: docs_page(app.openapi_url or "", "tether API")  # noqa: E731
        app.add_api_route("/docs", swagger, methods=["GET"], include_in_schema=False)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    if conf.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware, allow_origins=list(conf.cors_origins),
            allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type"],
            expose_headers=["Tether-Audience", "Retry-After"],
        )  # fmt: skip
    app.add_middleware(Guard, max_body=conf.max_body, metrics=app.state.tether.metrics,
                       body_timeout_s=conf.body_timeout_s)  # fmt: skip
    app.router.add_event_handler("startup", app.state.tether.start)
    app.router.add_event_handler("shutdown", app.state.tether.close)
    return app


def _routes(app: FastAPI) -> None:
    busy = problem_responses(403, 503, 504)
    gone = problem_responses(403, 404, 504)
    stream: dict[int | str, dict[str, Any]] = {
        200: {"content": {"text/event-stream": {}}, "description": "AskResult or events"}
    }
    add = app.add_api_route
    add("/v1/ask", ask, methods=["POST"], response_model=schemas.WireAskResult,
        responses={**busy, **stream})  # fmt: skip
    add(
        "/v1/search", search, methods=["POST"], response_model=list[schemas.WireHit], responses=busy
    )
    add("/v1/documents", documents, methods=["GET"], response_model=list[schemas.WireDocument],
        responses=busy)  # fmt: skip
    add("/v1/documents/{doc_id}", document, methods=["GET"],
        response_model=list[schemas.WireDocument], responses=gone)  # fmt: skip
    add("/v1/chunks/{chunk_id}", chunk, methods=["GET"], response_model=schemas.WireChunk,
        responses=gone)  # fmt: skip
    add("/v1/check", check, methods=["POST"], response_model=list[schemas.Check], responses=busy)
    add("/v1/feedback", feedback, methods=["POST"], response_model=schemas.WireFeedback,
        status_code=201, responses=problem_responses(404, 504))  # fmt: skip
    add("/v1/whoami", whoami, methods=["GET"], response_model=Caller)
    add("/v1/flags", flag_words, methods=["GET"], response_model=dict[str, str])
    add("/healthz", healthz, methods=["GET"], response_model=Health)
    ready: dict[int | str, dict[str, Any]] = {
        503: {"model": Readiness, "description": "Still warming up, or the warm-up failed"}
    }
    add("/readyz", readyz, methods=["GET"], response_model=Readiness, responses=ready)
    add("/v1/health", health, methods=["GET"], response_model=schemas.WireHealthReport,
        responses={**problem_responses(404, 504),
                   200: {"content": {"text/html": {}}, "description": "HealthReport or page"}})  # fmt: skip
    add("/metrics", metrics, methods=["GET"], response_class=PlainTextResponse,
        responses=problem_responses(403))  # fmt: skip
    add("/", page, methods=["GET"], include_in_schema=False)


__all__ = ["ServeConfig", "create_app", "problem"]
