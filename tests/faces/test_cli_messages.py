"""What the CLI says: a bad option value is one `error:` line naming the flag as typed (or the
variable it came from), exit 2, never a Python parameter's name, typer's boxed panel or a
traceback; `tether info` is lines a person reads, its --json the records unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.app import Workspace
from tether.cli.info_text import index_lines, info_sections
from tether.cli.main import app
from tether.cli.usage import typed_flag
from tether.config import Settings
from tether.errors import TetherError
from tether.providers.factory import make_provider

runner = CliRunner()

# words that give away a Python parameter, a settings field or typer's own formatting
NOT_SAID = ("as_of", "max_wrongly_refused", "overlap_words", "Input should", "Invalid value",
            "Traceback", "╭", "Usage:")  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "returns.md").write_text(
        "---\ndoc_id: returns\naccess: public\n---\n# Returns\n\nItems go back within 30 days.\n"
    )
    return docs


@pytest.fixture
def index(folder: Path, tmp_path: Path) -> str:
    path = str(tmp_path / "i.sqlite")
    done = runner.invoke(app, ["ingest", str(folder), "--index", path, "--no-embed"])
    assert done.exit_code == 0, done.output
    return path


def one_error_line(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit status, the one line printed) of a command that fails."""
    done = runner.invoke(app, args, env=env)
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1, done.output
    assert lines[0].startswith("error: "), done.output
    assert not any(word in done.output for word in NOT_SAID), done.output
    return done.exit_code, lines[0].removeprefix("error: ")


FLAG_ERRORS = [
    (["ask", "x", "--k", "0"], "--k: must be at least 1 (got 0)"),
    (["ask", "x", "--k", "abc"], "--k: must be a whole number (got 'abc')"),
    (["ask", "x", "-k", "99"], "-k: must be at most 50 (got 99)"),
    (["search", "x", "--k=0"], "--k: must be at least 1 (got 0)"),
    (["ask", "x", "--as-of", "2024-13-40"], "--as-of: '2024-13-40' is not a date"),
    (["ask", "x", "--audience", "robot"], "--audience: 'robot' is not public or staff"),
    (["ask", "x", "--method", "foo"], "--method: unknown method 'foo'"),
    (["ask", "x", "--budget", "-1"], "--budget: must be at least 50 (got -1)"),
    (["ask", "x", "--provider", "foo"], "--provider: unknown provider 'foo'"),
    (["ask", "x", "--agent", "--max-steps", "0"], "--max-steps: must be at least 1 (got 0)"),
    (["search", "x", "--method", "foo"], "--method: unknown method 'foo'"),
    (["search", "x", "--as-of", "soon"], "--as-of: 'soon' is not a date"),
    (["documents", "--audience", "robot"], "--audience: 'robot' is not public or staff"),
    (["info", "--audience", "robot"], "--audience: 'robot' is not public or staff"),
    (["chat", "--as-of", "soon"], "--as-of: 'soon' is not a date"),
    (["demo", "--provider", "foo"], "--provider: unknown provider 'foo'"),
    (["eval", "--k", "0"], "--k: must be at least 1 (got 0)"),
    (["eval", "--methods", "foo"], "--methods: unknown method 'foo'"),
    (["eval", "--audience", "robot"], "--audience: 'robot' is not public or staff"),
    (["eval", "--verifier", "--judge", "foo"], "--judge: unknown judge 'foo'"),
    (["eval", "--answers", "--methods", "bm25,dense"], "--methods: --answers takes one"),
    (["calibrate", "--max-wrongly-refused", "2"], "--max-wrongly-refused: must be at most 1 (got 2)"),
    (["serve", "--port", "99999"], "--port: must be at most 65535 (got 99999)"),
    (["serve", "--rate", "-1"], "--rate: must be at least 0 (got -1)"),
    (["serve", "--readers", "0"], "--readers: must be at least 1 (got 0)"),
    (["serve", "--forwarded-allow-ips", "proxy.local"], "--forwarded-allow-ips: 'proxy.local' is not"),
    (["mcp", "--transport", "foo"], "--transport: 'foo' is not stdio or http"),
    (["mcp", "--port", "0"], "--port: must be at least 1 (got 0)"),
    (["audit", "--since", "2024-13-40"], "--since: '2024-13-40' is not a date"),
    (["audit", "--asked-by", "robot"], "--asked-by: 'robot' is not public or staff"),
    (["audit", "export", "--format", "xml"], "--format: 'xml' is not jsonl or csv"),
    (["audit", "show", "abc"], "ID: must be a whole number (got 'abc')"),
    (["-q", "-v", "info"], "--quiet and --verbose exclude each other"),
    (["ask"], "missing argument question (see "),
]  # fmt: skip


@pytest.mark.parametrize(("args", "said"), FLAG_ERRORS, ids=[" ".join(a) for a, _ in FLAG_ERRORS])
def test_a_bad_option_value_names_the_flag_as_typed(args: list[str], said: str):
    code, line = one_error_line(args)
    assert code == 2
    assert line.startswith(said), line


def test_ingest_options_name_their_flags(folder: Path, tmp_path: Path):
    index = str(tmp_path / "i.sqlite")
    cases = [
        (["--workers", "0"], "--workers: must be at least 1 (got 0)"),
        (["--max-words", "5"], "--max-words: must be at least 20 (got 5)"),
        (["--chunker", "foo"], "--chunker: 'foo' is not structure, fixed or overlap"),
        (["--executor", "foo"], "--executor: 'foo' is not process, serial or ray"),
        (["--default-access", "foo"], "--default-access: 'foo' is not public or staff"),
        # a rule between two flags, said once before any file is read (not a problem per file)
        (["--chunker", "overlap", "--max-words", "20", "--overlap-words", "30"],
         "--overlap-words: must be below --max-words (20) (got 30)"),
    ]  # fmt: skip
    for extra, said in cases:
        code, line = one_error_line(["ingest", str(folder), "--index", index, *extra])
        assert (code, line) == (2, said)
    assert not Path(index).exists()


def test_keys_add_names_its_argument_and_options(tmp_path: Path):
    keys = str(tmp_path / "keys.toml")
    assert one_error_line(["keys", "add", "bob", "--file", keys, "--audience", "robot"]) == (
        2, "--audience: 'robot' is not public or staff"
    )  # fmt: skip
    code, line = one_error_line(["keys", "add", "bad name!", "--file", keys])
    assert code == 2 and line.startswith("name: 'bad name!' is not a key's name")
    code, line = one_error_line(["keys", "add", "bob"])
    assert code == 2 and line.startswith("missing option --file")
    assert not Path(keys).exists()


def test_a_value_from_a_variable_names_the_variable_not_the_flag(tmp_path: Path):
    missing = str(tmp_path / "nope.env")
    assert one_error_line(["info"], env={"TETHER_ENV_FILE": missing}) == (
        2, f"TETHER_ENV_FILE: file '{missing}' does not exist"
    )  # fmt: skip
    assert one_error_line(["--env-file", missing, "info"]) == (
        2, f"--env-file: file '{missing}' does not exist"
    )  # fmt: skip
    code, line = one_error_line(["mcp"], env={"TETHER_MCP_AUDIENCE": "robot"})
    assert (code, line) == (2, "TETHER_MCP_AUDIENCE: 'robot' is not public or staff")
    code, line = one_error_line(["mcp", "--audience", "robot"])
    assert (code, line) == (2, "--audience: 'robot' is not public or staff")


def test_the_provider_is_named_by_where_it_came_from(index: str):
    """--provider names the flag; TETHER_PROVIDER (a settings error, exit 1) the variable; a
    missing model is asked of --model only when the provider came from the flag."""
    ask = ["ask", "How long for returns?", "--index", index]
    no_model = {"TETHER_MODEL": "", "TETHER_PROVIDER": ""}
    code, line = one_error_line([*ask, "--provider", "openai"], env=no_model)
    assert code == 1 and line.startswith("provider 'openai' needs a model: --model or TETHER_MODEL")
    code, line = one_error_line(ask, env={**no_model, "TETHER_PROVIDER": "openai"})
    assert code == 1 and line.startswith("TETHER_PROVIDER=openai needs TETHER_MODEL")
    code, line = one_error_line(ask, env={"TETHER_PROVIDER": "foo"})
    assert code == 1 and line.startswith("TETHER_PROVIDER='foo' is not a known provider")
    code, line = one_error_line([*ask, "--provider", "foo"])
    assert code == 2 and line.startswith("--provider: unknown provider 'foo'")
    with pytest.raises(TetherError, match="provider 'anthropic' needs a model: --model"):
        make_provider(Settings(), name="anthropic")
    with pytest.raises(TetherError, match=r"provider 'replay' needs TETHER_RECORDINGS"):
        make_provider(Settings(), name="replay")


def test_the_flag_as_typed():
    assert typed_flag(["--k", "-k"], ["ask", "x", "-k", "0"]) == "-k"
    assert typed_flag(["--k", "-k"], ["ask", "x", "-k0"]) == "-k"
    assert typed_flag(["--k", "-k"], ["ask", "x", "--k=0"]) == "--k"
    assert typed_flag(["--k", "-k"], ["ask", "--kind", "0"]) is None  # another flag
    assert typed_flag(["--k", "-k"], ["ask", "--", "-k"]) is None  # after --: an argument


# ---- tether info --------------------------------------------------------------------------

SELF_FIT = {
    "rule": "floor = mean + z*sd ...", "z": 2.0, "quantile": 0.05, "at": "2026-11-30T10:00:00+00:00",
    "fits": [{"audience": "public", "method": "rerank", "floor": 0.7688, "offtopic_n": 40,
              "offtopic_mean": 0.7233, "offtopic_sd": 0.0305, "generated_n": 60,
              "generated_low": 0.7688, "capped": True}],
}  # fmt: skip
FUSION = {"lexical_prior": 0.248, "lexical_weight": 0.33, "questions": 184, "bm25_mrr": 0.861,
          "dense_mrr": 0.669, "fitted_on": "184 sentence questions from this collection's"
          " public passages (40 heading questions recorded), 2026-11-30"}  # fmt: skip


def test_info_records_read_as_lines():
    lines = dict(
        index_lines({
            "path": "i.sqlite", "documents": 3, "chunks": 9, "vectors": 9,
            "by_access": {"public": 2, "staff": 1}, "by_language": {"en": 2, "fr": 1},
            "by_format": {"markdown": 3}, "fusion_calibration": FUSION,
            "gate_self:rerank:public": "0.7688", "gate_self": SELF_FIT,
            "gate_floor:bm25": "5.0", "something_new": {"a": 1, "b": [1, 2]},
        })
    )  # fmt: skip
    assert lines["documents"] == (
        "3 document versions (versions by access: public 2, staff 1) · 9 chunks, 9 with vectors"
    )
    assert lines["languages"] == "en 2, fr 1 (versions)"
    assert lines["fusion"].startswith("BM25 weight 0.33 against dense 1, fitted on 184 sentence")
    assert lines["gate floor"] == (
        "rerank 0.7688, fitted at ingest: off-topic mean 0.7233 + 2 sd (0.0305) over 40"
        " questions, capped at the 5% quantile of 60 generated questions, 2026-11-30"
    )
    assert lines["something_new"] == "a 1 · b (1, 2)"  # a key it does not know: kept, flat
    assert not any("{" in text or "gate_" in label for label, text in lines.items())


def test_info_text_has_no_json_and_its_json_is_the_records(index: str):
    ws = Workspace.open(Path(index))
    record = {"questions": "mine.jsonl", "n_questions": 40, "at": "2026-11-30T10:00:00Z",
              "max_wrongly_refused": 0.02,
              "chosen": [{"method": "bm25", "floor": 5.0, "wrongly_refused": "1/30",
                          "let_through": "2/10"}]}  # fmt: skip
    ws.set_gate_floors({"bm25": 5.0, "rerank": 0.745}, record)
    ws.close()
    for audience in ("public", "staff"):
        text = runner.invoke(app, ["info", "--index", index, "--audience", audience])
        assert text.exit_code == 0, text.output
        assert "{" not in text.output and "}" not in text.output
        calibration = next(x for x in text.output.splitlines() if "calibration" in x)
        assert calibration.split(None, 1)[1] == (
            "bm25 5 · rerank 0.745 (calibrated 2026-11-30 on 40 questions of mine.jsonl,"
            " refusing at most 2% of answerable ones)"
        )
        assert ("trade-off" in text.output) == (audience == "staff")
        assert "none stored (run `tether eval --answers`)" in text.output
    data = json.loads(runner.invoke(app, ["info", "--index", index, "--json"]).stdout)
    assert data["handoff"]["calibration"] == {
        "floors": {"bm25": 5.0, "rerank": 0.745}, "profile": "calibrated",
        **{k: v for k, v in record.items() if k != "chosen"},
    }  # fmt: skip
    assert data["gate_floor:bm25"] == "5.0" and data["by_language"] == {"en": 1}


def test_the_profiles_note_is_said_once():
    note = "not calibrated for the embedder 'x'"
    sections = info_sections({
        "path": "i", "documents": 0, "chunks": 0, "vectors": 0, "profile": note,
        "handoff": {"calibration": {"floors": {}, "profile": note}},
    })  # fmt: skip
    said = [text for lines in sections.values() for _, text in lines if text == note]
    assert said == [note]


# ---- issue 47: tried as a new user would ---------------------------------------------------


def test_a_refusal_says_no_model_call_only_when_none_was_made(capsys) -> None:
    """The answerability judge's refusal said "Refused before the model ... no model call,
    no cost" even when its second opinion had asked the model ("the model said 0.40")."""
    from dataclasses import replace

    from tether import schemas
    from tether.cli.ask import print_result
    from tether.types import Answer, Answerability, AskResult, Gate

    reason = "the passages found are about the subject, but none gives a price"
    alone = AskResult(
        "How much is a saddle?", None, "public", "en", "rerank", gate=Gate(True, 0.7, 1, 2, 0.9),
        answerability=Answerability(False, 0.18, 0.22, "money", reason), answer=Answer(False, "", ()),
    )  # fmt: skip
    asked = replace(alone, answerability=replace(alone.answerability, second=0.4))
    assert not alone.model_called and asked.model_called
    print_result(alone)
    said = capsys.readouterr().out
    assert "Refused before the model" in said and "no model call, no cost" in said
    print_result(asked)
    said = capsys.readouterr().out
    assert "the model said 0.40" in said
    assert "no model call" not in said and "before the model" not in said
    assert schemas.WireAskResult.from_ask_result(alone).why_refused == (
        "refused before the model: " + reason
    )
    assert schemas.WireAskResult.from_ask_result(asked).why_refused == "refused: " + reason
    gate = replace(
        alone, gate=Gate(False, 0.7, 1, 0, 0.2, "retrieval too weak"), answerability=None
    )
    print_result(gate)
    assert "(no model call, no cost)" in capsys.readouterr().out


def test_info_counts_documents_and_versions_alike(tmp_path: Path) -> None:
    """`tether info` said "3 documents" (versions) above "2 documents, 3 versions" (doc_ids):
    both lines now count the same way and say what they count, for either audience."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, head in (("old.md", "doc_id: returns\nversion: 1"), ("new.md", "doc_id: returns\nversion: 2"),
                       ("staff.md", "doc_id: refunds\naccess: staff")):  # fmt: skip
        access = "" if "access" in head else "\naccess: public"
        (docs / name).write_text(f"---\n{head}{access}\n---\n# T\n\nSome text about {name}.\n")
    path = str(tmp_path / "i.sqlite")
    assert runner.invoke(app, ["ingest", str(docs), "--index", path, "--no-embed"]).exit_code == 0
    for audience, counted in (
        ("staff", "2 documents, 3 versions"),
        ("public", "1 document, 2 versions"),
    ):
        done = runner.invoke(app, ["info", "--index", path, "--audience", audience])
        assert done.exit_code == 0, done.output
        lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1)
                     for line in done.output.splitlines() if line.startswith("  "))  # fmt: skip
        assert lines["documents"].startswith(counted + " (versions by access: "), lines
        assert lines["collection"].startswith(counted), lines
        assert lines["counted for"].startswith(f"the {audience} audience")
    staff = runner.invoke(app, ["info", "--index", path, "--audience", "staff"]).output
    assert "public 2, staff 1" in staff


def _audit_with_staff_feedback(path: str) -> None:
    """Two recorded answers, one asked for staff, each with feedback."""
    from tether.stores import open_audit_log
    from tether.types import AuditEntry, Feedback

    log = open_audit_log(Path(path), writable=True)
    for audience, note in (("public", "public note"), ("staff", "staff only note")):
        entry = AuditEntry(at="2026-11-20T10:00:00Z", who="desk", audience=audience,  # type: ignore[arg-type]
                           question=f"asked for {audience}", status="answered")  # fmt: skip
        entry_id = log.record(entry)
        log.add_feedback(Feedback(entry_id, "2026-11-21T10:00:00Z", "desk", "wrong", note))


def test_audit_says_how_many_staff_entries_it_left_out_and_how_to_see_them(index: str) -> None:
    """`tether audit --feedback` hid the feedback on staff answers from its public reader
    without a word; the listing did the same with staff answers."""
    _audit_with_staff_feedback(index)
    hint = "not shown to a public reader: add --audience staff to see them"
    public = runner.invoke(app, ["audit", "--feedback", "--index", index])
    assert public.exit_code == 0, public.output
    assert "public note" in public.stdout and "staff only note" not in public.stdout
    assert f"1 piece of feedback on answers asked for staff is {hint}" in public.stdout
    staff = runner.invoke(app, ["audit", "--feedback", "--index", index, "--audience", "staff"])
    assert "staff only note" in staff.stdout and hint not in staff.output
    as_json = runner.invoke(app, ["audit", "--feedback", "--json", "--index", index])
    assert len(json.loads(as_json.stdout)) == 1  # stdout stays the JSON records
    assert hint in as_json.stderr
    listed = runner.invoke(app, ["audit", "--index", index])
    assert f"1 answer asked for staff is {hint}" in listed.stdout
    only_public = runner.invoke(app, ["audit", "--index", index, "--asked-by", "public"])
    assert hint not in only_public.output


def test_the_health_report_is_titled_with_the_collections_name(
    folder: Path, tmp_path: Path
) -> None:
    """Its title was the index's absolute path; the path is now said below it."""
    from tether.health.report import collection_name

    assert runner.invoke(app, ["ingest", str(folder), "--no-embed"]).exit_code == 0
    index = folder / ".tether" / "index.sqlite"
    page = tmp_path / "health.html"
    args = ["health", "--no-contradictions", "--index", str(index), "--report", str(page)]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    first, second = done.stdout.splitlines()[:2]
    assert first.startswith("Health of docs on ") and str(index) not in first
    assert second == f"index: {index}"
    html = page.read_text()
    assert "<title>Health of docs on " in html and "<h1>Health of docs</h1>" in html
    assert f"Index: {index}" in html
    assert collection_name("/x/.tether/demo.sqlite") == "demo"
    assert collection_name("/srv/helpdesk/index.sqlite") == "helpdesk"
    assert collection_name("postgresql://t@db/tether?collection=helpdesk") == "helpdesk"


def test_ingest_says_it_read_the_inventory(folder: Path, tmp_path: Path) -> None:
    """inventory.csv was read without a word: the ingest now says so, with its rows."""
    path = str(tmp_path / "i.sqlite")
    done = runner.invoke(app, ["ingest", str(folder), "--index", path, "--no-embed"])
    assert "inventory.csv" not in done.output  # none in the folder: nothing said
    (folder / "inventory.csv").write_text("path,owner\nreturns.md,Customer Care\ngone.md,Nobody\n")
    done = runner.invoke(app, ["ingest", str(folder), "--index", path, "--no-embed"])
    assert done.exit_code == 0, done.output
    said = "inventory.csv read: 2 rows, 1 naming a file here, 1 naming no file (see the warnings)"
    assert said in done.stdout
    assert "inventory.csv: path 'gone.md' matches no file" in done.output
    data = json.loads(
        runner.invoke(app, ["ingest", str(folder), "--index", path, "--no-embed", "--json"]).stdout
    )
    assert (data["inventory_rows"], data["inventory_matched"]) == (2, 1)
