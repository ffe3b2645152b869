"""A public answer depends on public documents only (issue 25): indexes that differ only in
their staff files give byte-identical public responses.

Four indexes are built with the real stores, retrievers and embedder (the default e5, as the
other fast indexes of the suite) from the same eight public files of the bundled demo
collection and different staff files: none; one; four of the demo's staff procedures (one in
French); and those four plus two staff copies of each public French file, so that French
becomes the language of most chunks (what moves a statistic counted over all chunks most).
Each is ingested as `tether ingest` does it (the fusion's calibration and the gate's
self-calibration included). Then the same public requests go to each, through every face: the
HTTP API (`/v1/search` with each method, `/v1/ask` with the extractive answerer, `/v1/check`,
`/v1/documents`, `/v1/chunks`, `/v1/whoami`), the CLI (`tether search`, `ask`, `info`,
`documents`, with --json) and the MCP tools and resources. Each response is compared as
bytes, without what is not a function of the documents: timings and the index's own folder.
Requests that name a staff chunk or document (some of which exist in no variant but the
fullest) must read the same as in the index without it.

The same public questions also go to a fake OpenAI-compatible model (`serving.fake_openai`)
that has read each index's staff files (issue 47): its reply cites the first passage it was
shown with one claim, states a number no passage holds in another, cites a staff passage in a
third that says how many staff passages there are, and repeats a staff passage in its short
answer. The checks withhold the last two claims from a public reader, and what they said, with
the raw reply, must reach the public through no face (`/v1/ask` as JSON and as events, `ask
--json`, MCP `ask`): those responses too must be the same in every variant.

What it cannot do: it runs over SQLite only (the PostgreSQL store shares the retriever, the
reranker and the calibrations; its public BM25 statistics are tested in
`tests/integration/test_access.py`); staff content that shows only in how long a response takes (a larger
index is slower) is out of its reach, and so are the HNSW graphs of indexes over 50,000
vectors.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from serving import fake_openai, passage_ids
from typer.testing import CliRunner

from tether.app import Workspace, shared_models
from tether.cli.main import app as cli_app
from tether.config import Settings, settings_from_mapping
from tether.evaluation.questions import demo_collection
from tether.mcp_server import build_server
from tether.server.api import ServeConfig, create_app
from tether.server.keys import KeyRing
from tether.tools import Tools

PUBLIC_FILES = (  # 37 English chunks, 18 French
    "policies/returns-policy-v4.md",
    "policies/refunds-and-payments.md",
    "policies/gift-cards.md",
    "notices/stove-recall-st410.md",
    "governance/document-governance.md",
    "notices/avis-rappel-st410.md",
    "help/faq-quebec.md",
    "guides/hivernage-velo.md",
)
STAFF_FILES = (  # the first alone is the variant "one"
    "staff/refund-approval-procedure.md",
    "staff/fraud-check-procedure.md",
    "staff/staff-discount-procedure.md",
    "staff/procedure-appels-fr.md",
)
FRENCH_PUBLIC = ("notices/avis-rappel-st410.md", "help/faq-quebec.md", "guides/hivernage-velo.md")
MIRRORS = 2  # staff copies of each French public file in the last variant: French then leads

QUERIES = (
    "How many days do I have to return an item?",
    "restocking fee",
    "refund to the original payment method",
    "I lost my gift card, can I get the balance back?",
    "warranty claim for a stove that stopped working",
    "ST-410 recall",
    "Combien de jours pour retourner un article ?",
    "entreposage du vélo pour l'hiver",
    "manager approval for refunds over 500 dollars",
    "staff discount for employees",
    "fraud check before a refund",
    "What is the capital of Australia?",
    "heures d'ouverture pendant les fêtes",
    "price match exceptions",
    "Do you match a competitor's price?",
    "rappel du réchaud ST-410",
)
QUESTIONS = (
    "How many days do I have to return an item?",
    "Can I get a refund to my original payment method?",
    "I lost my gift card, can I get the balance back?",
    "What should I do with a recalled ST-410 stove?",
    "Combien de jours pour retourner un article ?",
    "Comment entreposer mon vélo pour l'hiver ?",
    "Do managers have to approve refunds over 500 dollars?",
    "What is the capital of Australia?",
    "Do you match a competitor's price?",
    "Quelles sont les heures d'ouverture pendant les fêtes ?",
)
METHODS = ("bm25", "dense", "hybrid", "rerank", "deep")
AS_OF = "2026-10-01"  # a fixed day, so a response does not move with the date of the run


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _mirror(src: Path, dst: Path, n: int) -> None:
    """A staff copy of a public file under its own doc_id."""
    text = src.read_text("utf-8")
    text = re.sub(r"^doc_id: (.+)$", rf"doc_id: \1-staff-copy-{n}", text, count=1, flags=re.M)
    text = re.sub(r"^access: public$", "access: staff", text, count=1, flags=re.M)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text, "utf-8")


def _folder(root: Path, variant: str) -> Path:
    source = demo_collection()
    docs = root / "docs"
    for name in PUBLIC_FILES:
        _copy(source / name, docs / name)
    staff = {"none": (), "one": STAFF_FILES[:1]}.get(variant, STAFF_FILES)
    for name in staff:
        _copy(source / name, docs / name)
    if variant == "french-majority":
        for n in range(MIRRORS):
            for name in FRENCH_PUBLIC:
                _mirror(source / name, docs / "staff-copies" / f"{n}-{Path(name).name}", n)
    return docs


VARIANTS = ("none", "one", "several", "french-majority")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One index per variant, ingested as `tether ingest` does (calibrations included)."""
    built: dict[str, Path] = {}
    models = shared_models()
    for variant in VARIANTS:
        root = tmp_path_factory.mktemp(f"differential-{variant}")
        ws = Workspace.open(
            root / "index.sqlite", settings=settings_from_mapping({}), models=models
        )
        report = ws.ingest(_folder(root, variant), executor="serial")
        assert report.committed and not report.problems, report.problems
        ws.close()
        built[variant] = root / "index.sqlite"
    return built


# ---- what is compared --------------------------------------------------------------------

VOLATILE = {"timings", "latency_s"}  # how long a step took: not a function of the documents


def _plain(value: Any) -> Any:
    """`value` without the fields that are not functions of the documents (also inside a
    JSON text, as MCP sends a result a second time)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        parsed = _json_or_text(value)
        return value if isinstance(parsed, str) else {"json": _plain(parsed)}
    return value


def _text(value: Any, index: Path) -> str:
    """The bytes compared: `value` as JSON, without volatile fields, the index's own folder
    written as <index>."""
    text = json.dumps(_plain(value), ensure_ascii=False, sort_keys=True)
    return text.replace(str(index.parent), "<index>")


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---- the requests --------------------------------------------------------------------------


STAFF_PROBES = ("refund-approval-procedure", "procedure-appels-fr", "faq-quebec-staff-copy-1")


def _probes(indexes: dict[str, Path]) -> dict[str, list[str]]:
    """Public chunk IDs (the same in every variant), and the first chunk of each staff
    document of `STAFF_PROBES`, read from the fullest variant."""
    ws = Workspace.open(
        indexes["french-majority"], settings=settings_from_mapping({}), models=shared_models()
    )  # fmt: skip
    chunks = ws.store.chunks()
    ws.close()
    public = sorted(c.chunk_id for c in chunks if c.meta.access == "public")
    staff = [next(c.chunk_id for c in chunks if c.doc_id == d) for d in STAFF_PROBES]
    return {"public": public[::7][:6], "staff": staff, "staff_docs": list(STAFF_PROBES)}


def _checks(probes: dict[str, list[str]]) -> list[dict[str, Any]]:
    public, staff = probes["public"], probes["staff"]
    return [
        {"claims": [{"text": "Items can be returned within 30 days.", "chunk_ids": public[:1]}],
         "passage_ids": public[:3]},
        {"claims": [{"text": "Refunds go to the original payment method.",
                     "chunk_ids": public[1:2]}], "passage_ids": public[:3]},
        {"claims": [{"text": "A manager approves refunds over 500 dollars.",
                     "chunk_ids": staff[:1]}], "passage_ids": [*public[:2], *staff[:1]]},
        {"claims": [{"text": "Staff get a discount.", "chunk_ids": staff[1:2]},
                    {"text": "Le rappel vise le réchaud ST-410.", "chunk_ids": public[2:3]}],
         "passage_ids": [*public[2:4], *staff[1:2]], "language": "fr"},
        {"claims": [{"text": "Gift cards never expire.", "chunk_ids": public[3:4]}],
         "passage_ids": public[3:5], "question": "Do gift cards expire?"},
        {"claims": [{"text": "The fee is 15%.", "chunk_ids": [*public[4:5], *staff[2:3]]}],
         "passage_ids": [*public[4:6], *staff[2:3]]},
    ]  # fmt: skip


def _http(index: Path, probes: dict[str, list[str]]) -> dict[str, str]:
    """Every public HTTP request, by name: its status, audience header and body."""
    app = create_app(
        index, KeyRing(allow_anonymous=True), config=ServeConfig(rate=0.0),
        settings=Settings(provider="extractive"), models=shared_models(),
    )  # fmt: skip
    out: dict[str, str] = {}

    def keep(name: str, response: Any) -> None:
        body = _json_or_text(response.text)
        header = response.headers.get("tether-audience")
        out[f"http {name}"] = _text([response.status_code, header, body], index)

    with TestClient(app) as client:
        for query in QUERIES:
            for method in METHODS:
                body = {"query": query, "method": method, "k": 5, "as_of": AS_OF}
                keep(f"search {method} {query}", client.post("/v1/search", json=body))
        for question in QUESTIONS:
            body = {"question": question, "as_of": AS_OF}
            keep(f"ask {question}", client.post("/v1/ask", json=body))
        for n, check in enumerate(_checks(probes)):
            keep(f"check {n}", client.post("/v1/check", json={**check, "as_of": AS_OF}))
        keep("documents", client.get("/v1/documents"))
        keep("whoami", client.get("/v1/whoami"))
        staff_view = {"query": QUERIES[8], "view": "staff", "as_of": AS_OF}
        keep("search as staff", client.post("/v1/search", json=staff_view))
        for doc_id in ("returns-policy", "faq-quebec", *probes["staff_docs"]):
            keep(f"document {doc_id}", client.get(f"/v1/documents/{doc_id}"))
        for chunk_id in (*probes["public"][:2], *probes["staff"]):
            keep(f"chunk {chunk_id}", client.get(f"/v1/chunks/{chunk_id}"))
    return out


def _cli(index: Path) -> dict[str, str]:
    """Every public CLI command, by name: its exit status, stdout and stderr."""
    runner = CliRunner()
    out: dict[str, str] = {}

    def keep(name: str, *args: str) -> None:
        done = runner.invoke(cli_app, [*args, "--index", str(index)])
        stdout = _json_or_text(done.stdout)
        out[f"cli {name}"] = _text([done.exit_code, stdout, done.stderr], index)

    for query in QUERIES:
        for method in ("bm25", "rerank"):
            keep(f"search {method} {query}", "search", query, "--method", method,
                 "--as-of", AS_OF, "--json")  # fmt: skip
    for question in QUESTIONS[:6]:
        keep(f"ask {question}", "ask", question, "--provider", "extractive",
             "--as-of", AS_OF, "--json")  # fmt: skip
    keep("info", "info", "--json")
    keep("documents", "documents", "--json")
    return out


def _mcp(index: Path, probes: dict[str, list[str]]) -> dict[str, str]:
    """Every MCP tool call and resource read of a public server, by name."""
    ws = Workspace.open(
        index, settings=settings_from_mapping({"TETHER_PROVIDER": "extractive"}),
        models=shared_models(),
    )  # fmt: skip
    out: dict[str, str] = {}

    def result(found: Any) -> Any:
        return found.model_dump(mode="json")

    async def go() -> None:
        async with Client(build_server(Tools(ws, "public"))) as client:
            for query in QUERIES:
                found = await client.call_tool("search", {"query": query, "as_of": AS_OF})
                out[f"mcp search {query}"] = _text(result(found), index)
            for question in QUESTIONS[:6]:
                found = await client.call_tool("ask", {"question": question, "as_of": AS_OF})
                out[f"mcp ask {question}"] = _text(result(found), index)
            for n, check in enumerate(_checks(probes)[:4]):
                args = {k: v for k, v in check.items() if k != "language"}
                found = await client.call_tool("check", {**args, "as_of": AS_OF})
                out[f"mcp check {n}"] = _text(result(found), index)
            for chunk_id in (*probes["public"][:2], *probes["staff"]):
                found = await client.call_tool("read", {"chunk_id": chunk_id})
                out[f"mcp read {chunk_id}"] = _text(result(found), index)
            listed = await client.list_resources()
            out["mcp resources"] = _text(result(listed), index)
            for uri in ("documents", "documents/faq-quebec", *(
                f"documents/{d}" for d in probes["staff_docs"]
            )):  # fmt: skip
                try:
                    text: Any = result(await client.read_resource(f"tether://{uri}"))
                except Exception as exc:  # the SDK raises the server's error
                    text = str(exc)
                out[f"mcp resource {uri}"] = _text(text, index)

    asyncio.run(go())  # the server's worker thread owns `ws`: it is not closed from here
    return out


# ---- a model that has read the staff files ------------------------------------------------

MODEL_QUESTIONS = (QUESTIONS[0], QUESTIONS[4])  # answered by the model in every variant
MADE_UP = "Items can be returned within 9137 days."  # a number no passage holds


def _staff_knowledge(index: Path) -> tuple[int, str]:
    """What a model that has read this index's staff files knows of them: how many staff
    passages there are, and the first (in chunk ID order; "" when there is none)."""
    ws = Workspace.open(index, settings=settings_from_mapping({}), models=shared_models())
    staff = sorted((c for c in ws.store.chunks() if c.meta.access == "staff"),
                   key=lambda c: c.chunk_id)  # fmt: skip
    ws.close()
    return len(staff), staff[0].text if staff else ""


def _knows_staff(index: Path, probes: dict[str, list[str]]) -> Callable[[str], str]:
    """The reply of a model that has read `index`'s staff files (see the module docstring)."""
    count, passage = _staff_knowledge(index)

    def reply(prompt: str) -> str:
        first = (passage_ids(prompt) or ["none"])[0]
        claims: list[dict[str, Any]] = [
            {"text": "Items can be returned within 30 days.", "chunk_ids": [first]},
            {"text": MADE_UP, "chunk_ids": [first]},
            # how many staff passages there are (plus one: a count of 0 would read as no number)
            {"text": f"The staff files hold {count + 1} passages.",
             "chunk_ids": probes["staff"][:1]},
        ]  # fmt: skip
        answer = " ".join([c["text"] for c in claims] + [passage])
        return json.dumps({"answerable": True, "answer": answer, "claims": claims})

    return reply


def _model_settings(url: str) -> dict[str, str]:
    return {"TETHER_PROVIDER": "openai", "TETHER_MODEL": "fake", "TETHER_BASE_URL": url,
            "TETHER_API_KEY": "sk-test", "TETHER_MAX_RETRIES": "0", "TETHER_TIMEOUT": "60"}  # fmt: skip


def _events(text: str) -> list[list[Any]]:
    """[name, data] of each server-sent event in `text`."""
    found: list[list[Any]] = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        found.append([lines["event"], _json_or_text(lines["data"])])
    return found


def _withheld(index: Path, url: str) -> dict[str, str]:
    """The public asks answered by the model at `url`, through every face, by name."""
    env = _model_settings(url)
    out: dict[str, str] = {}
    app = create_app(
        index, KeyRing(allow_anonymous=True), config=ServeConfig(rate=0.0),
        settings=settings_from_mapping(env), models=shared_models(),
    )  # fmt: skip
    with TestClient(app) as client:
        for question in MODEL_QUESTIONS:
            for stream in (False, True):
                body = {"question": question, "as_of": AS_OF, "stream": stream}
                response = client.post("/v1/ask", json=body)
                data = _events(response.text) if stream else _json_or_text(response.text)
                name = f"model http ask{' stream' if stream else ''} {question}"
                out[name] = _text([response.status_code, data], index)
    runner = CliRunner()
    for question in MODEL_QUESTIONS:
        args = ["ask", question, "--as-of", AS_OF, "--json", "--index", str(index)]
        done = runner.invoke(cli_app, args, env=env)
        out[f"model cli ask {question}"] = _text(
            [done.exit_code, _json_or_text(done.stdout), done.stderr], index
        )  # fmt: skip
    ws = Workspace.open(index, settings=settings_from_mapping(env), models=shared_models())

    async def go() -> None:
        async with Client(build_server(Tools(ws, "public"))) as client:
            for question in MODEL_QUESTIONS:
                found = await client.call_tool("ask", {"question": question, "as_of": AS_OF})
                out[f"model mcp ask {question}"] = _text(found.model_dump(mode="json"), index)

    asyncio.run(go())
    # each variant's model listens on its own port, which a line on stderr could name
    return {name: text.replace(url, "<model>") for name, text in out.items()}


def _responses(index: Path, probes: dict[str, list[str]]) -> dict[str, str]:
    faces: list[Callable[[], dict[str, str]]] = [
        lambda: _http(index, probes), lambda: _cli(index), lambda: _mcp(index, probes),
    ]  # fmt: skip
    out: dict[str, str] = {}
    for face in faces:
        out.update(face())
    with fake_openai(_knows_staff(index, probes)) as url:
        out.update(_withheld(index, url))
    return out


def responses(indexes: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Each variant's public responses, by request name."""
    probes = _probes(indexes)
    return {variant: _responses(path, probes) for variant, path in indexes.items()}


def differing(found: dict[str, dict[str, str]]) -> tuple[int, list[str]]:
    """(how many requests were compared, the names of those whose public response is not
    the same in every variant)."""
    names = list(found[VARIANTS[0]])
    assert all(list(r) == names for r in found.values())
    return len(names), [n for n in names if len({found[v][n] for v in VARIANTS}) > 1]


@pytest.mark.slow  # four indexes embedded with the real e5 model: about two minutes on 2 cores
def test_public_responses_do_not_depend_on_staff_files(
    indexes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)  # the fake model listens on loopback
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # the HTTP client logs each request to the fake model (its port, and a time column that
    # shows only when the second changes) at INFO: shown on the CLI's stderr once the MCP SDK
    # has put a handler on the root logger in this process, which `tether ask` alone never has
    quiet = [logging.getLogger(name) for name in ("httpx", "httpx2")]  # openai's is httpx2
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.WARNING)
    try:
        found = responses(indexes)
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    compared, differ = differing(found)
    assert compared >= 150
    assert not differ, f"{len(differ)} of {compared} public responses differ: {differ}"
    # the model's answers were checked and claims of each withheld (the made-up number and the
    # staff citation at least; not a refusal before the model, which would compare nothing of
    # what it said)
    model = {n: r for n, r in found[VARIANTS[-1]].items() if n.startswith("model ")}
    assert len(model) == 4 * len(MODEL_QUESTIONS)  # JSON, events, CLI, MCP
    for name, response in model.items():
        assert "claims withheld" in response or "affirmations retenues" in response, name
        assert "9137 days" not in response and "number_not_found:" not in response, name
