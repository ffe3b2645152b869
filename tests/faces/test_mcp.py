"""The MCP face (`tether mcp`), driven by the `mcp` SDK's own client in-process: every tool
and resource, and the audience rule: a public server never returns staff content (search,
read, resources, ask, check), whatever a call asks; over stdio, the real command."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tether.app import Models, Workspace
from tether.config import settings_from_mapping
from tether.mcp_server import build_server
from tether.tools import Tools
from tether.types import Completion, ModelRequest

STAFF_TEXT = "Staff may waive the restocking fee with the manager code ZX-99."
FILES = {
    "returns.md": "---\ndoc_id: returns\naccess: public\ntitle: Returns policy\n---\n"
    "# Returns\n\nItems go back within 30 days of delivery. A restocking fee applies.\n",
    "staff.md": "---\ndoc_id: staff-returns\naccess: staff\ntitle: Staff returns handbook\n---\n"
    f"# Staff returns\n\n{STAFF_TEXT} The restocking fee is waived for damaged items.\n",
}
SECRETS = ("ZX-99", "staff-returns", "Staff returns handbook")


class CitesFirst:
    """An answerer that cites the first passage it was shown (and a staff ID it was not)."""

    name = "cites-first"

    def __init__(self, also: str = "") -> None:
        self.also = also

    def complete(self, request: ModelRequest) -> Completion:
        first = request.chunk_ids[:1]
        claims = [{"text": "Items go back within 30 days of delivery.", "chunk_ids": list(first)}]
        if self.also:
            claims.append({"text": "The restocking fee is waived.", "chunk_ids": [self.also]})
        answer = {"answerable": True, "answer": "Within 30 days.", "claims": claims}
        return Completion(json.dumps(answer), provider=self.name, model="fake")


@pytest.fixture
def index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    path = tmp_path / "i.sqlite"
    ws = Workspace.open(path, settings=settings_from_mapping({}), models=Models())
    ws.ingest(docs, embed=False)
    ws.set_gate_floors({"bm25": 0.0})  # two documents: BM25 scores are tiny
    ws.close()
    return path


def _staff_id(index: Path) -> str:
    ws = Workspace.open(index, settings=settings_from_mapping({}), models=Models())
    (chunk,) = ws.store.chunks("staff-returns")
    ws.close()
    return chunk.chunk_id


def _server(index: Path, audience: str, provider: Any = None) -> Any:
    ws = Workspace.open(
        index, settings=settings_from_mapping({}), models=Models(), provider=provider
    )
    return build_server(Tools(ws, audience))


def _text(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


def _session(index: Path, audience: str, body: Any, provider: Any = None) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(_server(index, audience, provider)) as client:
            return await body(client)

    return asyncio.run(go())


def test_public_server_lists_calls_and_reads_without_staff_content(index: Path) -> None:
    staff = _staff_id(index)

    async def body(c: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["tools"] = sorted(t.name for t in (await c.list_tools()).tools)
        search_args = {"query": "restocking fee waived manager code", "k": 10, "as_of": "none"}
        out["search"] = await c.call_tool("search", search_args)
        # an audience in the call is not an argument of the tool: it changes nothing
        out["search_staff"] = await c.call_tool("search", {**search_args, "audience": "staff"})
        out["read_staff"] = await c.call_tool("read", {"chunk_id": staff})
        out["read_unknown"] = await c.call_tool("read", {"chunk_id": "000000000000"})
        hit = out["search"].structured_content["result"][0]
        out["read"] = await c.call_tool("read", {"chunk_id": hit["chunk_id"]})
        out["resources"] = await c.list_resources()
        out["documents"] = await c.read_resource("tether://documents")
        out["document"] = await c.read_resource("tether://documents/returns")
        for uri, key in (("staff-returns", "doc_staff"), ("nothing-here", "doc_unknown")):
            try:
                out[key] = str(await c.read_resource(f"tether://documents/{uri}"))
            except Exception as exc:  # the SDK raises the server's error
                out[key] = str(exc)
        out["ask"] = await c.call_tool("ask", {"question": "Can the restocking fee be waived?"})
        claims = [
            {"text": "Items go back within 30 days.", "chunk_ids": [hit["chunk_id"]]},
            {"text": "The restocking fee is waived for damaged items.", "chunk_ids": [staff]},
        ]
        out["check"] = await c.call_tool("check", {"claims": claims, "passage_ids": [hit["chunk_id"], staff]})  # fmt: skip
        return out

    out = _session(index, "public", body, CitesFirst(also=staff))
    assert out["tools"] == ["ask", "check", "read", "search"]
    hits = out["search"].structured_content["result"]
    assert hits and {h["access"] for h in hits} == {"public"}
    assert out["search_staff"].structured_content == out["search"].structured_content
    assert out["read"].structured_content["doc_id"] == "returns"
    assert out["read_staff"].is_error and out["read_unknown"].is_error
    assert out["read_staff"].content[0].text.replace(staff, "X") == out["read_unknown"].content[
        0
    ].text.replace("000000000000", "X")
    uris = {str(r.uri) for r in out["resources"].resources}
    assert "tether://documents/returns" in uris and "tether://documents/staff-returns" not in uris
    assert [d["doc_id"] for d in json.loads(out["documents"].contents[0].text)] == ["returns"]
    assert "within 30 days" in out["document"].contents[0].text
    assert out["doc_staff"].replace("staff-returns", "X") == out["doc_unknown"].replace(
        "nothing-here", "X"
    )
    asked = out["ask"].structured_content
    assert asked["audience"] == "public" and "within 30 days" in asked["answer"]["answer"]
    checks = out["check"].structured_content["result"]
    assert checks[0]["ok"] and checks[1]["flags"] == [f"missing_id:{staff}"]
    everything = " ".join(
        _text(out[k]) for k in out if k not in ("tools", "doc_staff", "doc_unknown")
    )
    for secret in SECRETS:
        assert secret not in everything, secret


def test_staff_server_sees_staff_content(index: Path) -> None:
    staff = _staff_id(index)

    async def body(c: Client) -> dict[str, Any]:
        return {
            "read": await c.call_tool("read", {"chunk_id": staff}),
            "search": await c.call_tool("search", {"query": "manager code ZX-99", "as_of": "none"}),
            "resources": await c.list_resources(),
            "check": await c.call_tool(
                "check", {"claims": [{"text": "The manager code is ZX-99.", "chunk_ids": [staff]}]}
            ),
        }

    out = _session(index, "staff", body)
    assert STAFF_TEXT in out["read"].structured_content["text"]
    assert staff in {h["chunk_id"] for h in out["search"].structured_content["result"]}
    assert "tether://documents/staff-returns" in {str(r.uri) for r in out["resources"].resources}
    assert out["check"].structured_content["result"][0]["ok"]


def test_a_user_error_is_one_line_tool_error(index: Path) -> None:
    async def body(c: Client) -> dict[str, Any]:
        return {
            "k": await c.call_tool("search", {"query": "fee", "k": 500}),
            "date": await c.call_tool("search", {"query": "fee", "as_of": "soon"}),
        }

    out = _session(index, "public", body)
    assert out["k"].is_error and "k must be from 1 to 50" in out["k"].content[0].text
    text = out["date"].content[0].text
    assert out["date"].is_error and "is not a date" in text and "Traceback" not in text


def test_tether_mcp_over_stdio(index: Path) -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src, "TETHER_MCP_AUDIENCE": "public"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tether", "mcp", "--index", str(index)], env=env
    )

    async def go() -> tuple[list[str], Any]:
        async with Client(params) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            found = await client.call_tool("search", {"query": "restocking fee", "as_of": "none"})
            return names, found

    names, found = asyncio.run(go())
    assert names == ["ask", "check", "read", "search"]
    assert {h["doc_id"] for h in found.structured_content["result"]} == {"returns"}


def test_mcp_command_refuses_a_bad_audience_and_a_missing_index(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app

    runner = CliRunner()
    bad = runner.invoke(app, ["mcp", "--index", str(tmp_path / "i.sqlite"), "--audience", "all"])
    assert bad.exit_code == 2
    missing = runner.invoke(app, ["mcp", "--index", str(tmp_path / "none.sqlite")])
    assert missing.exit_code == 1 and "error:" in missing.output


def test_tether_mcp_over_streamable_http(index: Path) -> None:
    import socket
    import subprocess
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, "-m", "tether", "mcp", "--index", str(index), "--transport", "http", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    async def go() -> tuple[list[str], Any]:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            staff = await client.call_tool("search", {"query": "manager code ZX-99", "as_of": "none"})  # fmt: skip
            return names, staff

    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.3)
        names, staff = asyncio.run(go())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert names == ["ask", "check", "read", "search"]
    assert "ZX-99" not in json.dumps(staff.structured_content)


def test_resource_list_follows_the_index_without_a_restart(index: Path) -> None:
    """Issue 25: the list was frozen at start-up, so a document relabelled staff stayed
    listed (with its old title) to a public client until the server restarted."""
    docs = index.parent / "docs"
    hours = "---\ndoc_id: hours\naccess: {}\ntitle: Opening hours\n---\n# Hours\n\nOpen 9 to 5.\n"
    (docs / "hours.md").write_text(hours.format("public"))
    with Workspace.open(index, settings=settings_from_mapping({}), models=Models()) as ws:
        ws.ingest(docs, embed=False)

    def reingest() -> None:
        (docs / "hours.md").write_text(hours.format("staff"))
        returns = (docs / "returns.md").read_text()
        (docs / "returns.md").write_text(returns.replace("Returns policy", "Returns and refunds"))
        with Workspace.open(index, settings=settings_from_mapping({}), models=Models()) as ws:
            ws.ingest(docs, embed=False)

    def listed(found: Any) -> dict[str, str | None]:
        return {str(r.uri): r.title for r in found.resources}

    async def body(c: Client) -> dict[str, Any]:
        before = listed(await c.list_resources())
        await asyncio.to_thread(reingest)
        after = listed(await c.list_resources())
        try:
            hidden = str(await c.read_resource("tether://documents/hours"))
        except Exception as exc:  # the SDK raises the server's error
            hidden = str(exc)
        return {"before": before, "after": after, "hidden": hidden}

    out = _session(index, "public", body)
    assert out["before"]["tether://documents/hours"] == "Opening hours"
    assert out["before"]["tether://documents/returns"] == "Returns policy"
    assert "tether://documents/hours" not in out["after"], "a doc relabelled staff is still listed"
    assert out["after"]["tether://documents/returns"] == "Returns and refunds", "stale title"
    assert "tether://documents" in out["after"] and "Open 9 to 5" not in out["hidden"]
