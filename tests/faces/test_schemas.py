"""The wire models: what --json prints validates against each model's own JSON Schema, models
round-trip, and `tether schema` lists and prints them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from test_cli import folder  # noqa: F401  (a fixture: the small collection of test_cli)
from typer.testing import CliRunner

from tether import schemas
from tether.cli.main import app
from tether.cli.schema import SCHEMA_NAMES
from tether.types import Claim, ClaimCheck, Evidence, Flag

runner = CliRunner()
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER  # date, date-time

def conforms(name: str, data: Any) -> None:
    """`data` fits the named model's JSON Schema and round-trips through the model unchanged."""
    model = schemas.MODELS[name]
    schema = model.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema, format_checker=FORMATS).iter_errors(data)]
    assert errors == []
    assert model.model_validate(data).model_dump(mode="json") == data


@pytest.fixture
def index(folder: Path, tmp_path: Path) -> str:  # noqa: F811 (the fixture imported above)
    delivery = folder / "delivery.md"  # a review date too (the text is unchanged)
    text = delivery.read_text()
    delivery.write_text(text.replace("effective_from:", "review_by: 2027-01-31\neffective_from:"))
    path = str(tmp_path / "i.sqlite")
    done = runner.invoke(app, ["ingest", str(folder), "--index", path, "--no-embed"])
    assert done.exit_code == 0, done.output
    return path


def cli_json(*args: str, code: int = 0) -> Any:
    done = runner.invoke(app, [*args, "--json"])
    assert done.exit_code == code, done.output
    return json.loads(done.stdout)


def test_the_cli_lists_every_model():
    assert tuple(schemas.MODELS) == SCHEMA_NAMES


def test_search_and_index_json_fit_their_schemas(index: str):
    hits = cli_json("search", "delivery fee", "--index", index, "--as-of", "2026-06-01")
    assert hits and hits[0]["section"] == "Fees" and hits[0]["method"] == "bm25"
    for hit in hits:
        conforms("hit", hit)
    docs = cli_json("documents", "--index", index, "--audience", "staff")
    for doc in docs:
        conforms("document", doc)
    assert {d["doc_id"]: d["review_by"] for d in docs} == {
        "delivery-policy": "2027-01-31", "notes": None,
    }  # fmt: skip
    assert "review_by" in schemas.WireDocument.model_json_schema()["required"]
    for chunk in cli_json("chunks", "delivery-policy", "--index", index):
        conforms("chunk", chunk)
    conforms("index-info", cli_json("info", "--index", index))
    for question in cli_json("questions")[:20]:
        conforms("question", question)


def test_ask_json_fits_its_schema_and_keeps_every_key(index: str):
    data = cli_json(
        "ask", "How much does standard delivery cost?", "--index", index, "--method", "bm25",
        "--provider", "extractive", "--as-of", "2026-06-01", code=5,
    )  # fmt: skip  (the gate refuses: exit 5)
    conforms("ask-result", data)
    assert data["status"] == "refused" and data["refused_by"] == "gate"
    for key in (
        "question", "as_of", "audience", "language", "method", "hits", "gate", "context",
        "request", "completion", "answer", "problem", "checks", "refused", "provider",
        "provider_note", "timings",
    ):  # fmt: skip
        assert key in data
    assert data["as_of"] == "2026-06-01" and data["hits"][0]["doc_id"] == "delivery-policy"
    assert data["refused"] == (data["why_refused"] is not None)
    for check in data["checks"]:
        conforms("check", check)


def test_a_check_carries_flags_as_strings_and_its_evidence():
    check = ClaimCheck(
        Claim("Delivery costs 15 dollars.", ("abc",)),
        flags=(Flag("number_not_found", "15"),),
        evidence=(Evidence("abc", "Delivery costs 12.95 dollars.", 3, 31, 0.5),),
        entailment=0.25,
    )
    wire = schemas.Check.from_check(check)
    assert wire.flags == ["number_not_found:15"] and not wire.ok and wire.chunk_ids == ["abc"]
    conforms("check", wire.model_dump(mode="json"))


def test_tether_schema_prints_one_or_all_and_writes_files(tmp_path: Path):
    done = runner.invoke(app, ["schema"])
    assert done.exit_code == 0
    assert set(json.loads(done.stdout)) == set(SCHEMA_NAMES)
    done = runner.invoke(app, ["schema", "hit"])
    assert json.loads(done.stdout) == schemas.WireHit.model_json_schema()
    done = runner.invoke(app, ["schema", "ask-result", "--out", str(tmp_path / "s")])
    assert done.exit_code == 0
    written = json.loads((tmp_path / "s" / "ask-result.schema.json").read_text())
    assert written == schemas.WireAskResult.model_json_schema()
    help_text = re.sub(r"\s+", " ", runner.invoke(app, ["schema", "--help"]).output)
    assert all(name in help_text for name in ("document", "ask-result", "retrieval-report"))


def test_tether_schema_unknown_name_is_one_error_line():
    done = runner.invoke(app, ["schema", "nope"])
    assert done.exit_code == 2
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "nope" in lines[0]
    assert "Traceback" not in done.output
