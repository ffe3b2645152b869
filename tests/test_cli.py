"""The CLI: every command answers --help, user mistakes give one clear line, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli.main import app

runner = CliRunner()

COMMANDS = [
    "ingest", "documents", "chunks", "search", "info", "demo", "questions", "version",
    "ask", "chat", "eval", "calibrate", "schema",
]  # fmt: skip


def run(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "delivery.md").write_text(
        "---\ndoc_id: delivery-policy\nversion: '2'\ntitle: Delivery policy\naccess: public\n"
        "effective_from: 2026-01-01\n---\n\n# Delivery policy\n\n## Fees\n\n"
        "Standard delivery costs 12.95 dollars; orders over 150 dollars ship free.\n"
    )
    (docs / "notes.txt").write_text("Store hours\n===========\n\nWe open at nine.\n")
    return docs


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_ingest_search_documents_chunks_info(folder: Path, tmp_path: Path):
    index = str(tmp_path / "i.sqlite")
    result = run("ingest", str(folder), "--index", index, "--no-embed")
    assert result.exit_code == 0, result.output
    assert "added" in result.output and "delivery.md" in result.output

    result = run("search", "delivery fee", "--index", index, "--json", "--as-of", "2026-06-01")
    hits = json.loads(result.stdout)
    assert hits[0]["doc_id"] == "delivery-policy" and hits[0]["section"] == "Fees"
    # the text file has no access label: staff only (fail-closed), so public search misses it
    result = run("search", "store hours", "--index", index, "--json", "--as-of", "none")
    assert json.loads(result.stdout) == []
    result = run(
        "search",
        "store hours",
        "--index",
        index,
        "--json",
        "--audience",
        "staff",
        "--as-of",
        "none",
    )
    assert json.loads(result.stdout)[0]["doc_id"] == "notes"

    result = run("documents", "--index", index, "--json", "--audience", "staff")
    docs = {d["doc_id"]: d for d in json.loads(result.stdout)}
    assert docs["notes"]["version"] == "1" and docs["notes"]["access"] == "staff"
    result = run("chunks", "delivery-policy", "--index", index)
    assert result.exit_code == 0 and "12.95" in result.output
    result = run("info", "--index", index, "--json", "--audience", "staff")
    info = json.loads(result.stdout)
    assert info["documents"] == 2 and info["chunker"] == "structure(max_words=200)"

    result = run("ingest", str(folder), "--index", index, "--no-embed")
    assert result.exit_code == 0 and "unchanged" in result.output


def test_user_mistakes_are_one_clear_line(folder: Path, tmp_path: Path):
    index = str(tmp_path / "i.sqlite")
    run("ingest", str(folder), "--index", index, "--no-embed")
    cases = [
        (["ingest", str(tmp_path / "missing")], "no such folder"),
        (["chunks", "nope", "--index", index], "no document with doc_id 'nope'"),
        (["chunks", "delivery-policy", "--version", "9", "--index", index], "has no version '9'"),
        (["search", "x", "--index", str(tmp_path / "none.sqlite")], "tether ingest"),
        (
            ["ingest", str(folder), "--index", index, "--chunker", "fixed", "--no-embed"],
            "--rebuild",
        ),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.exit_code == 1, args
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    result = run("search", "x", "--index", index, "--as-of", "tomorrow-ish")
    assert result.exit_code == 2 and "is not a date" in result.output
    assert "Traceback" not in result.output
    result = run("search", "x", "--index", index, "--audience", "everyone")
    assert result.exit_code == 2 and "not public or staff" in result.output


def test_strict_ingest_fails_and_writes_nothing(folder: Path, tmp_path: Path):
    index = str(tmp_path / "i.sqlite")
    (folder / "empty.md").write_bytes(b"")
    result = run("ingest", str(folder), "--index", index, "--no-embed", "--strict")
    assert result.exit_code == 1
    assert "empty.md" in result.output and "nothing was written" in result.output
    result = run("info", "--index", index, "--json")
    assert json.loads(result.stdout)["documents"] == 0


def test_help_and_version_import_no_engine_numpy_or_pydantic():
    """Start-up stays short: the commands import what they need only when they run (typer
    itself imports pydantic to parse options, so pydantic is not on the list)."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from tether.cli.main import app\n"
        "for args in (['--help'], ['version'], ['search', '--help']):\n"
        "    assert CliRunner().invoke(app, args).exit_code == 0\n"
        "heavy = ('numpy', 'tether.stores', 'tether.retrieval', 'tether.providers',\n"
        "         'tether.evaluation', 'tether.answering', 'tether.schemas', 'matplotlib')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
