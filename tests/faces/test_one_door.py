"""One door per act (issue 45): the same claims and the same questions, sent through every
face, give identical checks and answers.

The faces: the CLI (`tether ask --json`, through its Typer app as the installed entry point
runs it), the HTTP API (`POST /v1/check`, `POST /v1/ask`, through the test client), the MCP
tools (`check`, `ask`, through the `mcp` SDK's client in-process) and the Python API
(`Collection.check`, `Collection.ask`). Every one calls the Workspace's own `check` and `ask`,
so what comes back must be the same JSON (the wire shapes of `tether.schemas`), without what
is per run only: timings, the answerer's latency and the audit entry's id (each face records
its answers under its own name, and some not at all). Each face is asked at each audience,
public and staff: a reader's audience is chosen per face (a key, `--audience`, the server's,
an argument), and a public reader is shown less (withheld claims, staff passages as unknown
IDs), so faces are compared at the same audience only.

The index is the bundled demo collection, ingested once for the module as `tether ingest`
does it (vectors and calibrations included); questions are answered by the extractive
answerer (no language model).

What it cannot do: the CLI has no `check` command, so the CLI's checks are compared only as
those of its answers; the agent loop (`ask --agent`, an MCP server started with it) and the
streamed events of `/v1/ask` are not compared here (`test_differential.py` covers the events).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from typer.testing import CliRunner

from tether import schemas
from tether.app import Workspace, shared_models
from tether.cli.main import app as cli_app
from tether.collection import Collection
from tether.config import settings_from_mapping
from tether.evaluation.questions import demo_collection
from tether.mcp_server import build_server
from tether.server.api import ServeConfig, create_app
from tether.server.keys import KeyRing
from tether.tools import Tools
from tether.types import Audience, Claim, Filters
from tether.verify.options import CheckOptions

AS_OF = "2026-11-30"  # the demo questions' day: a response does not move with the run's date
AUDIENCES: tuple[Audience, ...] = ("public", "staff")
STAFF_KEY = "sk-one-door-staff"
EXTRACTIVE = {"TETHER_PROVIDER": "extractive"}
QUESTIONS = (
    "How long does standard delivery take?",  # answered
    "What is the capital of Australia?",  # refused: nothing answers it
    "Mes points Pine expirent-ils un jour ?",  # French, over English passages
    "Who has to approve a $640 refund?",  # staff only
)
# how long each step and the model call took; the audit entry of this face
PER_RUN = {"timings", "latency_s", "audit_id"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo collection, ingested as `tether ingest` does (shared by the module's tests:
    asks add audit entries, which no response here depends on)."""
    path = tmp_path_factory.mktemp("one-door") / "index.sqlite"
    settings = settings_from_mapping({})
    with Workspace.open(path, settings=settings, models=shared_models(), create=True) as ws:
        report = ws.ingest(demo_collection(), executor="serial")
    assert report.committed and not report.problems, report.problems
    return path


def _chunk(index: Path, doc_id: str, words: str) -> str:
    """The ID of the chunk of `doc_id` in force on `AS_OF` whose text holds `words`."""
    in_force = Filters(as_of=date.fromisoformat(AS_OF), audience="staff")
    with Workspace.open(index, settings=settings_from_mapping({}), models=shared_models()) as ws:
        chunks = ws.store.chunks(doc_id)
    found = [c.chunk_id for c in chunks if words in c.text and in_force.allows(c.meta)]
    assert found, (doc_id, words)
    return found[0]


@pytest.fixture(scope="module")
def requests(index: Path) -> list[dict[str, Any]]:
    """Check requests, as `/v1/check` takes them (every face takes the same fields)."""
    delivery = _chunk(index, "delivery-policy", "3 to 7 business days")
    payments = _chunk(index, "refunds-and-payments", "PayPal")
    recall = _chunk(index, "avis-rappel-st410", "ST-410")
    staff = _chunk(index, "refund-approval-procedure", "no-receipt store credit")
    return [
        {"claims": [
            {"text": "Standard delivery takes 3 to 7 business days.", "chunk_ids": [delivery]},
            {"text": "Standard delivery takes 2 to 4 business days.", "chunk_ids": [delivery]},
            {"text": "Online we accept PayPal.", "chunk_ids": [payments]},
        ], "passage_ids": [delivery, payments], "question": QUESTIONS[0]},
        # an invented condition no rule flags: the learned judge does (MCP's own path, before
        # issue 45, had no judge and passed it)
        {"claims": [{"text": "Standard delivery takes 3 to 7 business days after the order "
                     "leaves our warehouse, unless the store manager decides otherwise after "
                     "a careful review.",
                     "chunk_ids": [delivery]}], "passage_ids": [delivery]},
        # a staff passage: an unknown ID to the public, evidence to staff
        {"claims": [{"text": "One customer can receive at most $150 of no-receipt store "
                     "credit in any 12-month period.", "chunk_ids": [staff]},
                    {"text": "Online we accept PayPal.", "chunk_ids": [payments]}],
         "passage_ids": [payments, staff]},
        # a French claim, a cited passage left out of the context, and one no index holds
        {"claims": [{"text": "Le rappel vise le réchaud ST-410.", "chunk_ids": [recall]},
                    {"text": "Standard delivery is free.", "chunk_ids": [delivery]},
                    {"text": "Gift cards never expire.", "chunk_ids": ["000000000000"]}],
         "passage_ids": [recall], "question": "Quel réchaud est rappelé ?"},
    ]  # fmt: skip


def _plain(value: Any) -> Any:
    """`value` without what is per run (see `PER_RUN`)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in PER_RUN}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _json(found: Any) -> Any:
    return _plain(json.loads(json.dumps(found)))


Faces = dict[str, Callable[[Audience], tuple[list[Any], list[Any]]]]


def _http(index: Path, requests: list[dict[str, Any]]) -> Callable[[Audience], Any]:
    def face(audience: Audience) -> tuple[list[Any], list[Any]]:
        app = create_app(
            index, KeyRing.of({STAFF_KEY: "staff"}, allow_anonymous=True),
            config=ServeConfig(rate=0.0), settings=settings_from_mapping(EXTRACTIVE),
            models=shared_models(),
        )  # fmt: skip
        headers = {"Authorization": f"Bearer {STAFF_KEY}"} if audience == "staff" else {}
        checks, answers = [], []
        with TestClient(app) as client:
            for body in requests:
                response = client.post("/v1/check", json={**body, "as_of": AS_OF}, headers=headers)
                assert response.status_code == 200, response.text
                checks.append(_json(response.json()))
            for question in QUESTIONS:
                body = {"question": question, "as_of": AS_OF}
                response = client.post("/v1/ask", json=body, headers=headers)
                assert response.status_code == 200, response.text
                answers.append(_json(response.json()))
        return checks, answers

    return face


def _mcp(index: Path, requests: list[dict[str, Any]]) -> Callable[[Audience], Any]:
    def face(audience: Audience) -> tuple[list[Any], list[Any]]:
        settings = settings_from_mapping(EXTRACTIVE)
        ws = Workspace.open(index, settings=settings, models=shared_models())
        checks, answers = [], []

        async def go() -> None:
            async with Client(build_server(Tools(ws, audience))) as client:
                for body in requests:
                    found = await client.call_tool("check", {**body, "as_of": AS_OF})
                    assert not found.is_error, found.content
                    checks.append(_json(found.structured_content["result"]))
                for question in QUESTIONS:
                    found = await client.call_tool("ask", {"question": question, "as_of": AS_OF})
                    assert not found.is_error, found.content
                    answers.append(_json(found.structured_content))

        asyncio.run(go())  # the server's worker thread owns `ws`: it is not closed from here
        return checks, answers

    return face


def _collection(index: Path, requests: list[dict[str, Any]]) -> Callable[[Audience], Any]:
    def face(audience: Audience) -> tuple[list[Any], list[Any]]:
        docs = demo_collection()
        collection = Collection(docs, index=index, settings=settings_from_mapping(EXTRACTIVE))
        checks, answers = [], []
        for body in requests:
            claims = [Claim(c["text"], tuple(c["chunk_ids"])) for c in body["claims"]]
            found = collection.check(
                claims, body["passage_ids"], question=body.get("question", ""), as_of=AS_OF,
                audience=audience,
            )  # fmt: skip
            checks.append(
                _json([schemas.Check.from_check(c).model_dump(mode="json") for c in found])
            )
        for question in QUESTIONS:
            result = collection.ask(question, as_of=AS_OF, audience=audience)
            answers.append(
                _json(schemas.WireAskResult.from_ask_result(result).model_dump(mode="json"))
            )
        collection.workspace.close()
        return checks, answers

    return face


def _cli(index: Path) -> Callable[[Audience], Any]:
    def face(audience: Audience) -> tuple[list[Any], list[Any]]:
        runner = CliRunner()
        answers = []
        for question in QUESTIONS:
            args = ["ask", question, "--index", str(index), "--provider", "extractive",
                    "--as-of", AS_OF, "--audience", audience, "--json"]  # fmt: skip
            done = runner.invoke(cli_app, args)
            assert done.exit_code in (0, 4, 5), done.output  # answered, flagged, refused
            answers.append(_json(json.loads(done.stdout)))
        return [], answers

    return face


@pytest.mark.parametrize("audience", AUDIENCES)
def test_every_face_gives_the_same_checks_and_answers(
    index: Path, requests: list[dict[str, Any]], audience: Audience, clean_env: Path
) -> None:
    faces: Faces = {
        "http": _http(index, requests), "mcp": _mcp(index, requests),
        "collection": _collection(index, requests), "cli": _cli(index),
    }  # fmt: skip
    found = {name: face(audience) for name, face in faces.items()}
    checks, answers = found["http"]
    for name, (their_checks, their_answers) in found.items():
        if name != "cli":  # the CLI has no check command
            assert their_checks == checks, f"{name}'s checks differ from HTTP's"
        assert their_answers == answers, f"{name}'s answers differ from HTTP's"
    # what was compared holds what it should: checks that pass and fail, the learned judge's
    # score, an answer and a refusal
    verdicts = [c["ok"] for each in checks for c in each]
    assert True in verdicts and False in verdicts
    assert checks[1][0]["entailment"] is not None and not checks[1][0]["ok"]
    assert [a["refused"] for a in answers[:2]] == [False, True]
    staff_check = checks[2][0]
    if audience == "public":
        assert staff_check["flags"] == [f"missing_id:{requests[2]['claims'][0]['chunk_ids'][0]}"]
    else:
        assert staff_check["ok"], staff_check


def test_mcp_check_is_workspace_check(index: Path, requests: list[dict[str, Any]]) -> None:
    """The MCP `check` tool gives `Workspace.check`'s verdicts, the learned judge's included:
    a claim with an invented condition that no rule flags is flagged by the judge."""
    settings = settings_from_mapping({})
    body = requests[1]
    claims = [Claim(c["text"], tuple(c["chunk_ids"])) for c in body["claims"]]
    with Workspace.open(index, settings=settings, models=shared_models()) as ws:
        direct = ws.check(claims, body["passage_ids"], CheckOptions(as_of=None))
        tools = Tools(ws, "public").check(body["claims"], body["passage_ids"])
    assert [c.ok for c in direct] == [c.ok for c in tools] == [False]
    assert [[str(f) for f in c.flags] for c in direct] == [c.flags for c in tools]
    assert [c.entailment for c in direct] == [c.entailment for c in tools]


def test_every_face_bounds_the_claims_it_checks(index: Path) -> None:
    """The hostile pass after issue 47: MCP `check` and `Collection.check` took 300 claims of
    20,000 characters (280 s of checking) where HTTP answers 422; the bounds are now
    `Workspace.check`'s, so every face refuses them."""
    from tether.answering.answer import MAX_CLAIM_CHARS, MAX_CLAIMS
    from tether.errors import LimitError

    many = [{"text": "Items go back within 30 days.", "chunk_ids": ["x"]}] * (MAX_CLAIMS + 1)
    long = [{"text": "a" * (MAX_CLAIM_CHARS + 1), "chunk_ids": ["x"]}]
    with Workspace.open(index, settings=settings_from_mapping({}), models=shared_models()) as ws:
        for claims, said in ((many, "at most 30"), (long, "at most 2,000")):
            with pytest.raises(LimitError, match=said):
                Tools(ws, "public").check(claims, ["x"])
            with pytest.raises(LimitError, match=said):
                ws.check([Claim(c["text"], ("x",)) for c in claims], ["x"])
