"""tether as an MCP server, built with the official `mcp` Python SDK (`MCPServer`).

Tools (each returns tether's wire shapes, `tether.schemas`): `search(query, k, as_of)` →
hits, `read(chunk_id)` → a chunk, `ask(question, as_of)` → an AskResult (the agent loop when
the server was started with it), `check(claims, passage_ids, question, as_of)` → one Check
per claim. Resources: `tether://documents` (the documents, JSON) and
`tether://documents/{doc_id}` (one document's text, version by version), each document
listed by name. The resource list is read from the index on every `resources/list` (the
generation in force then), so a document ingested, retitled, relabelled staff or removed
while the server runs is listed as it now is, without a restart.

The audience is the server's (`tether mcp --audience`, or TETHER_MCP_AUDIENCE; public by
default), fixed in the `tether.tools.Tools` it serves: no tool takes an audience, and on a
public server a staff chunk or document is answered exactly as an unknown one, in every
tool and resource.

Every call runs on one worker thread that owns the Workspace (its SQLite connection and
caches belong to one thread), so calls are served one after another; a TetherError is a tool
error with one line (`error: ...`), anything else a tool error without a traceback. A resource
that fails says the same line as a JSON-RPC error: -32602 for a NotFoundError (as the SDK
answers an unknown URI), -32603 for any other.

What it cannot do: it does not authenticate clients (whoever can reach it gets its
audience: run a staff server only where only staff can reach it, on stdio or loopback);
it does not tell a connected client that the list changed (no `list_changed` notification:
a client sees the change when it lists again); one slow `ask` (the local model) holds up
the calls behind it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import (
    MCPServerError,
    ResourceError,
    ResourceNotFoundError,
    ToolError,
)
from mcp.types import Resource as MCPResource

from tether import schemas
from tether._version import __version__
from tether.errors import NotFoundError, TetherError
from tether.tools import Tools

T = TypeVar("T")
Transport = Literal["stdio", "http"]
INSTRUCTIONS = (
    "tether answers questions from a document collection with claims checked against the "
    "passages they cite. search finds passages, read shows one in full, ask answers with "
    "checked claims, check checks your own claims against passage IDs. The audience ({}) "
    "is fixed by the server."
)


class _Worker:
    """Runs every call on one thread (the Workspace's), one at a time."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tether-mcp")

    async def call(self, fn: Callable[..., T], *args: Any, error: type[MCPServerError]) -> T:
        try:
            return await asyncio.wrap_future(self._pool.submit(fn, *args))
        except TetherError as exc:
            raise reported(exc, error) from None


def reported(exc: TetherError, error: type[MCPServerError]) -> MCPServerError:
    """`exc` in its one line as the SDK's `error` (ToolError: the call's `is_error` result;
    ResourceError: a JSON-RPC error), a NotFoundError read as a resource as
    ResourceNotFoundError (-32602, not -32603)."""
    if issubclass(error, ResourceError) and isinstance(exc, NotFoundError):
        return ResourceNotFoundError(f"error: {exc}")
    return error(f"error: {exc}")


class _LiveServer(MCPServer):
    """An MCPServer whose resource list adds, on every call, one resource per document the
    audience may see now (read on the worker thread from the index's current generation)."""

    def __init__(self, name: str, tools: Tools, worker: _Worker) -> None:
        super().__init__(
            name, instructions=INSTRUCTIONS.format(tools.audience), version=__version__
        )
        self._tools = tools
        self._worker = worker

    async def list_resources(self) -> list[MCPResource]:
        fixed = await super().list_resources()
        found = await self._worker.call(self._tools.documents, error=ResourceError)
        latest = {d.doc_id: d for d in found}  # one per document: its last version listed
        return fixed + [
            MCPResource(
                uri=f"tether://documents/{doc.doc_id}",
                name=doc.doc_id,
                title=doc.title,
                mime_type="text/markdown",
            )
            for doc in latest.values()
        ]


def build_server(tools: Tools, *, name: str = "tether") -> MCPServer:
    """An MCP server over `tools` (their audience is the server's)."""
    worker = _Worker()
    server = _LiveServer(name, tools, worker)

    @server.tool(
        description="Search the collection: the top k passages (1-50) for a query,"
        " among the versions in force on as_of (YYYY-MM-DD, today or none)."
    )
    async def search(query: str, k: int = 5, as_of: str = "today") -> list[schemas.WireHit]:
        return await worker.call(tools.search, query, k, as_of, error=ToolError)

    @server.tool(description="Read one passage (chunk) in full by its ID.")
    async def read(chunk_id: str) -> schemas.WireChunk:
        return await worker.call(tools.read, chunk_id, error=ToolError)

    @server.tool(
        description="Answer a question from the collection with claims that cite"
        " passages, each checked by code; refuses when the passages do not answer."
    )
    async def ask(question: str, as_of: str = "today") -> schemas.WireAskResult:
        return await worker.call(tools.ask, question, as_of, error=ToolError)

    @server.tool(
        description="Check claims ({text, chunk_ids}) against the passages an answer"
        " was written from (passage_ids; default: the cited ones)."
    )
    async def check(
        claims: list[schemas.WireClaim],
        passage_ids: list[str] | None = None,
        question: str = "",
        as_of: str | None = None,
    ) -> list[schemas.Check]:
        return await worker.call(tools.check, claims, passage_ids, question, as_of, error=ToolError)

    @server.resource(
        "tether://documents",
        name="documents",
        mime_type="application/json",
        description="The documents of the collection (JSON).",
    )
    async def documents() -> str:
        found = await worker.call(tools.documents, error=ResourceError)
        return json.dumps([d.model_dump(mode="json") for d in found], ensure_ascii=False)

    @server.resource(
        "tether://documents/{doc_id}",
        name="document",
        mime_type="text/markdown",
        description="One document's text, version by version.",
    )
    async def document(doc_id: str) -> str:
        return await worker.call(tools.document, doc_id, error=ResourceError)

    return server


def run(
    tools: Tools, transport: Transport = "stdio", host: str = "127.0.0.1", port: int = 8765
) -> None:
    """Serve `tools` over stdio, or streamable HTTP at http://HOST:PORT/mcp."""
    server = build_server(tools)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
