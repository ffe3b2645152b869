"""A claim the checks withhold from a public reader never reaches one (issue 47), through
every face: `/v1/ask` as JSON and as server-sent events (`check` and `result`), MCP `ask` and
`tether ask --json`. A fake OpenAI-compatible server (`serving.fake_openai`) answers one good
claim, one with a number no passage holds and one citing a staff passage; a public or
anonymous caller gets the good claim, a count and a reason for the other two (their checks
carry no claim text, citations, evidence, details or flag arguments), and nothing of the raw
reply (no `completion`, however long the reply was); a staff caller gets everything.

What it cannot do: it asks over one small BM25 index with the default (alignment) judge; the
rules that decide which claims are withheld are `tether.verify.flags.withhold`'s, tested in
tests/integration/test_shown_claims.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from serving import fake_openai, passage_ids
from typer.testing import CliRunner

from tether.app import Models, Workspace
from tether.cli.main import app as cli_app
from tether.config import Settings, settings_from_mapping
from tether.mcp_server import build_server
from tether.server.api import ServeConfig, create_app
from tether.server.keys import KeyRing
from tether.tools import Tools

PUBLIC, STAFF = "tk_public-withheld", "tk_staff-withheld"
FILES = {
    "returns.md": "---\ndoc_id: returns\naccess: public\ntitle: Returns policy\n---\n"
    "# Returns\n\nItems go back within 30 days of purchase.\n",
    "staff.md": "---\ndoc_id: staff-discounts\naccess: staff\ntitle: Staff discounts\n---\n"
    "# Staff discounts\n\nEmployees receive a 25 percent discount on tents and stoves.\n",
}
QUESTION = "How many days do items have to go back after purchase?"
GOOD = "Items go back within 30 days of purchase."
MADE_UP = "Items go back within 9137 days of purchase."  # a number no passage holds
STAFF_CLAIM = "Employees receive a 25 percent discount on tents."  # cites the staff passage
# what a public reader must never receive (the staff chunk's ID is added per test)
SECRETS = ("9137", "25 percent", "Employees receive", "staff-discounts", "number_not_found:")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("withheld")
    docs = root / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    path = root / "i.sqlite"
    ws = Workspace.open(path, settings=settings_from_mapping({}), models=Models())
    ws.ingest(docs, embed=False)
    ws.set_gate_floors({"bm25": 0.0})  # two documents: BM25 scores are tiny
    ws.close()
    return path


@pytest.fixture(scope="module")
def staff_id(index: Path) -> str:
    ws = Workspace.open(index, settings=settings_from_mapping({}), models=Models())
    (chunk,) = ws.store.chunks("staff-discounts")
    ws.close()
    return chunk.chunk_id


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def three_claims(staff_id: str) -> Callable[[str], str]:
    """The model's reply: the good claim and the made-up number, both citing the first passage
    it was shown, and the staff claim citing the staff passage."""

    def reply(prompt: str) -> str:
        first = (passage_ids(prompt) or ["none"])[0]
        claims: list[dict[str, Any]] = [
            {"text": GOOD, "chunk_ids": [first]},
            {"text": MADE_UP, "chunk_ids": [first]},
            {"text": STAFF_CLAIM, "chunk_ids": [staff_id]},
        ]
        answer = " ".join(c["text"] for c in claims)
        return json.dumps({"answerable": True, "answer": answer, "claims": claims})

    return reply


@pytest.fixture
def model(staff_id: str) -> Iterator[str]:
    with fake_openai(three_claims(staff_id)) as url:
        yield url


def settings(url: str) -> Settings:
    return Settings(provider="openai", model="fake", base_url=url, api_key="sk-test",
                    max_retries=0, timeout=30)  # fmt: skip


def http(index: Path, url: str) -> TestClient:
    keys = KeyRing.of({PUBLIC: "public", STAFF: "staff"}, allow_anonymous=True)
    app = create_app(index, keys, config=ServeConfig(rate=0.0), settings=settings(url),
                     models=Models())  # fmt: skip
    return TestClient(app, raise_server_exceptions=False)


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def assert_public(result: dict[str, Any], raw: str, staff_id: str) -> None:
    """`result` (a wire AskResult, `raw` the whole response it came in) as a public reader
    must get it: the good claim shown, the other two counted and explained, never said."""
    assert result["audience"] == "public" and result["status"] == "answered", result
    assert [c["text"] for c in result["answer"]["claims"]] == [GOOD]
    assert result["answer"]["answer"] == GOOD
    assert result["notice"].startswith("2 claims withheld:")
    assert "number" in result["notice"] and "may not cite" in result["notice"]
    good, number, staff = result["checks"]
    assert good["claim"] == GOOD and good["ok"] and not good["withheld"]
    for check in (number, staff):
        assert check["withheld"] and not check["ok"]
        assert (check["claim"], check["chunk_ids"], check["evidence"], check["details"]) == (
            "", [], [], []
        )
        assert check["entailment"] is None
        assert check["flags"] and all(":" not in f for f in check["flags"])  # kinds only
    assert "number_not_found" in number["flags"] and "missing_id" in staff["flags"]
    assert result["completion"] is None and result["model"] == "fake"
    for secret in (*SECRETS, staff_id):
        assert secret not in raw, secret


# ---- HTTP: /v1/ask as JSON and as events -----------------------------------------------------


def test_api_json_gives_a_public_or_anonymous_caller_no_withheld_claim(
    index: Path, model: str, staff_id: str
) -> None:
    body = {"question": QUESTION, "as_of": "none"}
    with http(index, model) as client:
        for key in (PUBLIC, None):  # a public key, and an anonymous caller
            response = client.post("/v1/ask", json=body, headers=bearer(key))
            assert response.status_code == 200, response.text
            assert_public(response.json(), response.text, staff_id)
        staff = client.post("/v1/ask", json=body, headers=bearer(STAFF)).json()
        # the same answer for staff: every claim, marked, and the raw reply
        assert staff["status"] == "flagged" and staff["notice"] == ""
        assert [c["claim"] for c in staff["checks"]] == [GOOD, MADE_UP, STAFF_CLAIM]
        assert "number_not_found:9137" in staff["checks"][1]["flags"]
        assert staff["checks"][2]["chunk_ids"] == [staff_id]
        assert json.loads(staff["completion"]["text"])["claims"][1]["text"] == MADE_UP


def events_of(text: str) -> list[tuple[str, Any]]:
    """(name, data) of each server-sent event in `text`."""
    found = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_api_events_give_a_public_caller_no_withheld_claim(
    index: Path, model: str, staff_id: str
) -> None:
    """The `check` events and the `result` event of a stream: a public caller's carry what
    its JSON answer carries; staff's carry every claim."""
    body = {"question": QUESTION, "as_of": "none", "stream": True}
    with http(index, model) as client:
        text = client.post("/v1/ask", json=body, headers=bearer(PUBLIC)).text
        staff = events_of(client.post("/v1/ask", json=body, headers=bearer(STAFF)).text)
    events = events_of(text)
    names = [name for name, _ in events]
    assert names.count("check") == 3 and names[-1] == "result" and "text" not in names
    result = events[-1][1]
    assert_public(result, text, staff_id)
    checks = [data for name, data in events if name == "check"]
    assert [{k: v for k, v in c.items() if k != "index"} for c in checks] == result["checks"]
    assert dict(events)["answer"]["completion"] is None
    assert [data["claim"] for name, data in staff if name == "check"] == [
        GOOD, MADE_UP, STAFF_CLAIM
    ]  # fmt: skip


def test_a_long_or_broken_reply_is_not_echoed_to_a_public_caller(
    index: Path, staff_id: str
) -> None:
    """A reply refused as too long (here 1 MB) comes back to a public caller as a short
    answer without its text, and a reply that is not JSON without the slice of it the
    problem quotes; staff get both."""
    long = json.dumps({"answerable": True, "answer": MADE_UP * 25_000, "claims": []})
    broken = f"{STAFF_CLAIM} Not JSON."
    body = {"question": QUESTION, "as_of": "none"}
    for reply, kind in ((long, "too_long"), (broken, "not_json")):

        def says(prompt: str, reply: str = reply) -> str:
            return reply

        with fake_openai(says) as url, http(index, url) as client:
            response = client.post("/v1/ask", json=body, headers=bearer(PUBLIC))
            staff = client.post("/v1/ask", json=body, headers=bearer(STAFF)).json()
        public = response.json()
        assert public["status"] == "no_answer" and public["problem"]["kind"] == kind
        assert public["completion"] is None and len(response.content) < 20_000
        for secret in SECRETS:
            assert secret not in response.text, secret
        assert staff["completion"]["text"] == reply and staff["problem"]["kind"] == kind
    assert STAFF_CLAIM in staff["problem"]["detail"]  # staff: the slice of the reply
    assert public["problem"]["detail"] == "the model's reply was not JSON"


# ---- MCP ask, and the CLI's ask --json ------------------------------------------------------


def test_mcp_ask_gives_a_public_server_no_withheld_claim(
    index: Path, model: str, staff_id: str
) -> None:
    env = {"TETHER_PROVIDER": "openai", "TETHER_MODEL": "fake", "TETHER_BASE_URL": model,
           "TETHER_API_KEY": "sk-test", "TETHER_MAX_RETRIES": "0"}  # fmt: skip

    def ask(audience: str) -> Any:
        ws = Workspace.open(index, settings=settings_from_mapping(env), models=Models())

        async def go() -> Any:
            async with Client(build_server(Tools(ws, audience))) as client:
                return await client.call_tool("ask", {"question": QUESTION, "as_of": "none"})

        return asyncio.run(go())

    public = ask("public")
    raw = json.dumps(public.model_dump(mode="json"), ensure_ascii=False)  # both copies
    assert_public(public.structured_content, raw, staff_id)
    staff = ask("staff").structured_content
    assert [c["claim"] for c in staff["checks"]] == [GOOD, MADE_UP, STAFF_CLAIM]


def test_cli_ask_json_gives_a_public_asker_no_withheld_claim_and_exits_0(
    index: Path, model: str, staff_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ask --json` as the public: exit 0 (answered: every claim shown passed its checks, as
    the README's exit table says), the withheld claims counted, never said."""
    env = {"TETHER_PROVIDER": "openai", "TETHER_MODEL": "fake", "TETHER_BASE_URL": model,
           "TETHER_API_KEY": "sk-test", "TETHER_MAX_RETRIES": "0"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = ["ask", QUESTION, "--index", str(index), "--as-of", "none", "--json"]
    done = CliRunner().invoke(cli_app, args)
    assert done.exit_code == 0, done.output
    assert_public(json.loads(done.stdout), done.stdout, staff_id)
    staff = CliRunner().invoke(cli_app, [*args, "--audience", "staff"])
    assert staff.exit_code == 4 and MADE_UP in staff.stdout


def test_cli_ask_strict_text_counts_removed_claims_for_the_public(
    index: Path, model: str, staff_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ask --strict` printed as text (the hostile pass after issue 47): a public asker is told
    how many claims --strict removed and of what kinds, never their text or a staff passage's
    ID; staff see each removed claim with its flags."""
    env = {"TETHER_PROVIDER": "openai", "TETHER_MODEL": "fake", "TETHER_BASE_URL": model,
           "TETHER_API_KEY": "sk-test", "TETHER_MAX_RETRIES": "0"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = ["ask", QUESTION, "--index", str(index), "--as-of", "none", "--strict"]
    done = CliRunner().invoke(cli_app, args)
    assert "removed (--strict)" in done.stdout, done.output
    for secret in (*SECRETS, staff_id):
        assert secret not in done.output, secret
    staff = CliRunner().invoke(cli_app, [*args, "--audience", "staff"])
    assert f"removed (--strict): {STAFF_CLAIM}" in " ".join(staff.stdout.split())


def test_a_public_caller_cannot_turn_the_checks_off(index: Path, model: str) -> None:
    """`verify: false` would hand a public caller every claim unchecked: it is for staff only
    (a public key, an anonymous caller and a staff key asking for the public view get 403)."""
    body = {"question": QUESTION, "as_of": "none", "verify": False}
    with http(index, model) as client:
        for key in (PUBLIC, None):
            response = client.post("/v1/ask", json=body, headers=bearer(key))
            assert response.status_code == 403, response.text
            assert MADE_UP not in response.text
        view = client.post("/v1/ask", json={**body, "view": "public"}, headers=bearer(STAFF))
        assert view.status_code == 403
        staff = client.post("/v1/ask", json=body, headers=bearer(STAFF))
        assert staff.status_code == 200 and MADE_UP in staff.text


# ---- the reply's own text: never shown unchecked (hostile pass, issue 47) ---------------------


def reply_of(payload: Callable[[str], dict[str, Any]]) -> Callable[[str], str]:
    def reply(prompt: str) -> str:
        return json.dumps(payload((passage_ids(prompt) or ["none"])[0]))

    return reply


@pytest.mark.parametrize(
    "payload, shown",
    [
        # an answer text saying more than its one (good) claim: the claim alone is shown
        (lambda first: {"answerable": True, "answer": f"{GOOD} Also the fee is 31337 dollars.",
                        "claims": [{"text": GOOD, "chunk_ids": [first]}]}, GOOD),
        # no claim at all: nothing was checked, so nothing is shown but the refusal
        (lambda first: {"answerable": True, "answer": "The fee is 31337 dollars.",
                        "claims": []}, "The passages do not answer this question."),
        # the model's own refusal words are unchecked too
        (lambda first: {"answerable": False, "answer": "I refuse: 31337 secret reasons.",
                        "claims": []}, "The passages do not answer this question."),
    ],
    ids=["more than its claims", "no claim", "its own refusal"],
)  # fmt: skip
def test_a_public_caller_gets_only_checked_claim_text(
    index: Path, payload: Callable[[str], dict[str, Any]], shown: str
) -> None:
    body = {"question": QUESTION, "as_of": "none"}
    with fake_openai(reply_of(payload)) as url, http(index, url) as client:
        public = client.post("/v1/ask", json=body, headers=bearer(PUBLIC))
        staff = client.post("/v1/ask", json=body, headers=bearer(STAFF)).json()
    assert public.status_code == 200, public.text
    assert public.json()["answer"]["answer"] == shown
    assert "31337" not in public.text
    assert "31337" in staff["answer"]["answer"]  # staff see the reply as it came


def test_a_provider_error_is_told_to_a_public_caller_without_its_words(index: Path) -> None:
    """The provider's error message (its words, the server's model URL) is the operator's:
    a public caller is told the provider failed; staff get the message."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Failing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            data = json.dumps({"error": {"message": "RAWCANARY bad request /srv/secret"}}).encode()
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    body = {"question": QUESTION, "as_of": "none"}
    try:
        with http(index, url) as client:
            public = client.post("/v1/ask", json=body, headers=bearer(PUBLIC))
            staff = client.post("/v1/ask", json=body, headers=bearer(STAFF)).json()
    finally:
        httpd.shutdown()
    assert public.json()["problem"]["kind"] == "provider_error"
    assert "RAWCANARY" not in public.text and "/srv/secret" not in public.text
    assert "127.0.0.1" not in public.text
    assert "RAWCANARY" in staff["problem"]["detail"]


def test_the_public_audit_holds_no_withheld_claim(index: Path, model: str, staff_id: str) -> None:
    """Hostile pass (issue 47): `tether audit` (list and export) read with the public
    audience showed a withheld claim's text and its flag arguments; it shows the claim as
    `/v1/ask` does, without them. Staff readers see everything."""
    from tether.types import AuditQuery

    body = {"question": QUESTION, "as_of": "none"}
    with http(index, model) as client:
        assert client.post("/v1/ask", json=body, headers=bearer(PUBLIC)).status_code == 200
    ws = Workspace.open(index, settings=settings_from_mapping({}), models=Models())
    try:
        public = ws.audit_entries(AuditQuery(reader="public", audience="public"))
        staff = ws.audit_entries(AuditQuery(reader="staff", audience="public"))
    finally:
        ws.close()
    assert public and staff
    text = json.dumps([e.claims for e in public])
    for secret in (*SECRETS, staff_id):
        assert secret not in text, secret
    assert any(c.get("withheld") for e in public for c in e.claims)
    assert GOOD in [c["text"] for e in public for c in e.claims]
    assert MADE_UP in [c["text"] for e in staff for c in e.claims]  # staff keep every claim
