"""`eval` on a user's own data: the question-set format documented (docs/questions.md, a
JSON Schema, a template), `eval`/`calibrate` read the index of the current folder (never the
demo for the user's questions, never writing demo.sqlite there), and `--help` lists no
option the command does not have."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli.main import app
from tether.evaluation.questions import QUESTION_TEMPLATE, load_questions
from tether.schemas import QuestionLine

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "questions.md"


def _indexed(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "returns.md").write_text(
        "---\ndoc_id: returns\naccess: public\n---\n# Returns\n\n## Return window\n\n"
        "Items go back within 30 days of delivery.\n"
    )
    (docs / "gifts.md").write_text(
        "---\ndoc_id: gifts\naccess: public\n---\n# Gift cards\n\nGift cards never expire.\n"
    )
    done = runner.invoke(app, ["ingest", str(docs), "--no-embed"])
    assert done.exit_code == 0, done.output
    (tmp_path / "mine.jsonl").write_text(
        json.dumps({"id": "A1", "question": "When do items go back?",
                    "relevant": [{"doc_id": "returns", "section": "Return window"}]}) + "\n"
        + json.dumps({"id": "A2", "question": "Do gift cards expire?",
                      "relevant": [{"doc_id": "gifts"}]}) + "\n"
    )  # fmt: skip
    return docs


def test_eval_reads_the_index_of_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    docs = _indexed(tmp_path)
    monkeypatch.chdir(docs)
    result = runner.invoke(
        app, ["eval", "--questions", str(tmp_path / "mine.jsonl"), "--methods", "bm25", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert Path(report["index"]).resolve() == (docs / ".tether" / "index.sqlite").resolve()
    assert report["n_scored"] == 2
    assert report["aggregates"]["bm25"]["overall"]["hit"] == 1.0
    assert not (docs / ".tether" / "demo.sqlite").exists()


def test_calibrate_on_own_questions_writes_the_users_index(tmp_path: Path, monkeypatch) -> None:
    docs = _indexed(tmp_path)
    monkeypatch.chdir(docs)
    result = runner.invoke(app, ["calibrate", "--questions", str(tmp_path / "mine.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    assert not (docs / ".tether" / "demo.sqlite").exists()


def test_own_questions_without_an_index_are_one_error_line(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "mine.jsonl").write_text('{"id": "A1", "question": "Anything?"}\n')
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["eval", "--questions", "mine.jsonl", "--methods", "bm25"])
    assert result.exit_code == 1
    assert result.output.startswith("error: no index found here") and "tether ingest" in result.output
    assert not (tmp_path / ".tether").exists()  # no demo.sqlite written into the user's folder


@pytest.mark.parametrize("command", ["eval", "ingest", "calibrate", "search", "ask"])
def test_help_names_only_options_the_command_has(command: str) -> None:
    text = runner.invoke(app, [command, "--help"], terminal_width=200).output
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))
    mentioned_demo = "--demo" in options
    command_has_demo = any(
        "--demo" in (p.opts or []) for p in _params(command)
    )
    assert mentioned_demo == command_has_demo, (command, options)


def _params(command: str) -> list:
    import typer.main

    group = typer.main.get_command(app)
    return list(group.commands[command].params)  # type: ignore[attr-defined]


def test_the_template_is_a_valid_question_set(tmp_path: Path) -> None:
    result = runner.invoke(app, ["questions", "--template"])
    assert result.exit_code == 0 and result.stdout == QUESTION_TEMPLATE
    path = tmp_path / "t.jsonl"
    path.write_text(result.stdout)
    assert [q.id for q in load_questions(path)] == ["Q001", "Q002", "Q003", "Q004"]
    for line in result.stdout.splitlines():
        QuestionLine.model_validate_json(line)


def test_the_format_page_has_the_template_and_every_key() -> None:
    text = DOC.read_text(encoding="utf-8")
    example = text.split("```jsonl\n", 1)[1].split("```", 1)[0]
    assert example == QUESTION_TEMPLATE
    for key in QuestionLine.model_fields:
        assert f"| `{key}` |" in text, key
    schema = runner.invoke(app, ["schema", "question-line"])
    assert schema.exit_code == 0 and json.loads(schema.stdout)["required"] == ["id", "question"]
    assert "tether schema question-line" in text


def test_a_bundled_question_file_matches_the_schema() -> None:
    from tether.evaluation.questions import demo_questions

    for line in demo_questions().read_text(encoding="utf-8").splitlines():
        QuestionLine.model_validate_json(line)


def test_a_misspelt_relevant_key_is_an_error_not_a_wider_match(tmp_path: Path) -> None:
    """`sectoin` dropped in silence would let any chunk of the document count as relevant."""
    from tether.errors import TetherError
    from tether.evaluation.questions import load_questions

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "Q1", "question": "x", "relevant": [{"doc_id": "a", "sectoin": "b"}]}\n')
    with pytest.raises(TetherError, match="did you mean 'section'"):
        load_questions(bad)
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"id": "Q1", "question": "x", "relevant": [{"doc_id": "a", "access": "staff"}]}\n')
    assert load_questions(ok)[0].relevant[0].doc_id == "a"  # other extra keys stay allowed


def test_eval_where_no_question_can_be_scored_says_why_and_fails(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("---\naccess: public\n---\n# A\n\nSome text here.\n")
    index = str(tmp_path / "i.sqlite")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(docs), "--index", index, "--no-embed"]).exit_code == 0
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"id": "Q1", "question": "x", "relevant": [{"doc_id": "guides/returns"}]}\n')
    for extra in ([], ["--json"]):
        done = runner.invoke(
            app, ["eval", "--questions", str(mine), "--index", index, "--methods", "bm25", *extra]
        )
        assert done.exit_code == 1, done.output
        assert "no question could be scored" in done.output and "guides/returns" in done.output
