"""The error tree (`tether.errors`): each branch's exit status, HTTP status and problem type,
said once by its class and read from there by every face: the CLI's exit status, the
server's problem bodies (the handlers and the stream's `error` event), the MCP server's
resource errors. A representative of each branch, raised for real where one can be, through
each face."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.answering.gate import MAX_QUESTION_CHARS
from tether.app import Models, Workspace
from tether.cli.app import EXIT_USER_ERROR
from tether.cli.main import app
from tether.config import Settings, settings_from_mapping
from tether.errors import (
    PROBLEM_TYPES,
    ConflictError,
    DeadlineError,
    IndexLockedError,
    LimitError,
    NotFoundError,
    OlderIndexError,
    ParseError,
    ProviderError,
    TetherError,
    UnavailableError,
    UnwritableError,
    UpstreamError,
)

runner = CliRunner()
FILES = {
    "returns.md": "---\ndoc_id: returns\naccess: public\n---\n# Returns\n\n"
    "Items go back within 30 days of purchase.\n",
}
# class: (exit status, HTTP status, problem type, title)
TREE: dict[type[TetherError], tuple[int, int, str, str]] = {
    TetherError: (1, 400, "invalid-request", "Invalid request"),
    ParseError: (1, 400, "invalid-request", "Invalid request"),
    NotFoundError: (1, 404, "not-found", "Not found"),
    ConflictError: (1, 409, "conflict", "Conflict"),
    OlderIndexError: (1, 409, "conflict", "Conflict"),
    IndexLockedError: (1, 409, "conflict", "Conflict"),
    LimitError: (1, 413, "over-limit", "Over a limit"),
    DeadlineError: (1, 504, "deadline-exceeded", "Deadline exceeded"),
    UpstreamError: (1, 502, "upstream-failed", "Upstream failure"),
    ProviderError: (1, 502, "provider-failed", "Provider failure"),
    UnavailableError: (1, 503, "index-unavailable", "Index unavailable"),
    UnwritableError: (1, 503, "index-unavailable", "Index unavailable"),
}


@pytest.fixture
def index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    path = tmp_path / "i.sqlite"
    ws = Workspace.open(path, settings=settings_from_mapping({}), models=Models())
    ws.ingest(docs, embed=False)
    ws.close()
    return path


@contextmanager
def lock_held(path: Path) -> Iterator[None]:
    """Another process's connection holds the index's lock (as an ingest mid-commit does)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


# ---- the tree ---------------------------------------------------------------------------------


def test_each_class_says_its_exit_status_http_status_and_problem_type() -> None:
    for cls, (code, status, problem, title) in TREE.items():
        assert (cls.exit_code, cls.http_status, cls.problem, cls.title) == (
            code, status, problem, title
        ), cls  # fmt: skip
        assert cls.problem_type() == PROBLEM_TYPES + problem
        assert issubclass(cls, TetherError) and cls.__doc__, cls


def test_the_branches_keep_the_old_names_and_every_one_is_a_tether_error() -> None:
    assert issubclass(OlderIndexError, ConflictError)
    assert issubclass(DeadlineError, LimitError)
    assert issubclass(ProviderError, UpstreamError)
    for cls in TREE:
        with pytest.raises(TetherError, match="one line"):
            raise cls("one line")
    # every branch exits as a user error: 3 is `ask`'s own no_answer, not an escaped error
    assert {cls.exit_code for cls in TREE} == {EXIT_USER_ERROR}


# ---- the server -------------------------------------------------------------------------------


def _client(index: Path, **settings: object):
    from fastapi.testclient import TestClient

    from tether.server.api import ServeConfig, create_app
    from tether.server.keys import KeyRing

    ring = KeyRing.of({}, allow_anonymous=True)
    conf = ServeConfig(rate=0.0, warm=False)
    chosen = Settings(provider="extractive", **settings)  # type: ignore[arg-type]
    return TestClient(create_app(index, ring, config=conf, settings=chosen),
                      raise_server_exceptions=False)  # fmt: skip


def _problem(response, cls: type[TetherError]) -> dict:
    assert response.status_code == cls.http_status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["type"] == cls.problem_type() and body["title"] == cls.title
    assert body["status"] == cls.http_status and body["detail"] and "\n" not in body["detail"]
    return body


def test_the_server_answers_each_branch_with_its_status_and_problem_type(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastapi")
    search = {"query": "returns"}
    with _client(index, lock_timeout=0.2) as c:
        # not found: an unknown chunk and document, and an unknown audit entry (the store's)
        body = _problem(c.get("/v1/chunks/nope"), NotFoundError)
        assert body["detail"] == "no chunk with chunk_id 'nope'"
        _problem(c.get("/v1/documents/nope"), NotFoundError)
        # a user error: a date that is not one
        _problem(c.post("/v1/search", json={**search, "as_of": "soon"}), TetherError)
        # a conflict: another process holds the index's lock past the wait
        with lock_held(index):
            body = _problem(c.get("/v1/documents"), ConflictError)
        assert "another ingest is writing this index" in body["detail"]
        assert c.get("/v1/documents").status_code == 200  # free again
        # a limit, an upstream failure, a provider's: raised where the search runs
        for cls in (LimitError, UpstreamError, ProviderError, DeadlineError):

            def failing(self, *args, cls=cls, **kwargs):
                raise cls(f"a {cls.__name__} in one line")

            monkeypatch.setattr(Workspace, "search", failing)
            body = _problem(c.post("/v1/search", json=search), cls)
            assert body["detail"] == f"a {cls.__name__} in one line"


def test_the_server_reads_the_status_from_the_class(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One mapping: a new branch needs no handler of its own."""
    pytest.importorskip("fastapi")

    class Teapot(TetherError):
        """A test's own branch."""

        http_status = 418
        problem = "teapot"
        title = "Teapot"

    def failing(self, *args, **kwargs):
        raise Teapot("short and stout")

    monkeypatch.setattr(Workspace, "search", failing)
    with _client(index) as c:
        body = _problem(c.post("/v1/search", json={"query": "returns"}), Teapot)
    assert body["type"] == PROBLEM_TYPES + "teapot"


def test_the_streamed_error_event_is_the_same_problem_body(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastapi")
    import json

    def failing(self, *args, **kwargs):
        raise ProviderError("the model server is down")

    monkeypatch.setattr(Workspace, "ask", failing)
    question = {"question": "How long do returns take?", "as_of": "none"}
    with _client(index) as c:
        plain = _problem(c.post("/v1/ask", json=question), ProviderError)
        streamed = c.post("/v1/ask", json={**question, "stream": True})
    assert streamed.status_code == 200
    event = streamed.text.split("event: error\ndata: ", 1)[1].split("\n", 1)[0]
    assert json.loads(event) == plain


# ---- the CLI ----------------------------------------------------------------------------------


def test_the_cli_exits_with_each_branch_s_exit_status(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = ["--index", str(index)]
    cases = [
        (TetherError, ["search", "x", "--index", str(tmp_path / "none.sqlite")], "no index at"),
        (NotFoundError, ["chunks", "nope", *at], "no document with doc_id 'nope'"),
        (LimitError, ["search", "x" * (MAX_QUESTION_CHARS + 1), *at], f"is {MAX_QUESTION_CHARS:,}"),
    ]
    keys = tmp_path / "keys.toml"
    assert runner.invoke(app, ["keys", "add", "desk", "--file", str(keys)]).exit_code == 0
    cases.append((ConflictError, ["keys", "add", "desk", "--file", str(keys)], "already has"))
    for cls, args, message in cases:
        done = runner.invoke(app, args)
        assert done.exit_code == cls.exit_code, (cls, done.output)
        assert done.output.startswith("error: ") and message in done.output, done.output
        assert "Traceback" not in done.output
    monkeypatch.setenv("TETHER_LOCK_TIMEOUT", "0.2")
    with lock_held(index):
        done = runner.invoke(app, ["documents", *at])
    assert done.exit_code == ConflictError.exit_code and "another ingest" in done.output


def test_the_cli_reads_the_exit_status_from_the_class(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Odd(UpstreamError):
        """A test's own branch."""

        exit_code = 7

    def failing(self, *args, **kwargs):
        raise Odd("the database went away")

    monkeypatch.setattr(Workspace, "search", failing)
    done = runner.invoke(app, ["search", "returns", "--index", str(index)])
    assert done.exit_code == 7 and "error: the database went away" in done.output


def test_an_unreachable_database_is_an_upstream_error(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    from tether.stores import open_store

    with pytest.raises(UpstreamError, match="cannot connect to PostgreSQL"):
        open_store("postgresql://nobody@127.0.0.1:1/tether")
    done = runner.invoke(app, ["documents", "--store", "postgresql://nobody@127.0.0.1:1/tether"])
    assert done.exit_code == UpstreamError.exit_code and "cannot connect" in done.output


# ---- MCP --------------------------------------------------------------------------------------


def test_mcp_says_a_tool_error_in_one_line_and_a_missing_resource_as_not_found(
    index: Path,
) -> None:
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

    from tether.mcp_server import build_server
    from tether.tools import Tools

    ws = Workspace.open(index, settings=settings_from_mapping({}), models=Models())

    async def go() -> tuple[object, object, object]:
        async with Client(build_server(Tools(ws, "public"))) as client:
            read = await client.call_tool("read", {"chunk_id": "nope"})
            try:
                await client.read_resource("tether://documents/nope")
                missing: object = None
            except Exception as exc:  # the SDK raises the server's error
                missing = exc
            real = await client.read_resource("tether://documents/returns")
            return read, missing, real

    read, missing, real = asyncio.run(go())
    assert read.is_error and "error: no passage has the ID 'nope'" in read.content[0].text
    assert getattr(missing, "code", None) == INVALID_PARAMS != INTERNAL_ERROR
    assert "error: no document with doc_id 'nope'" in str(missing)
    assert "within 30 days" in real.contents[0].text
