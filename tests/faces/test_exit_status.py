"""Exit statuses and the `status` of `ask --json`, feedback (--quiet, -v, the spinner), and the
small options: --version, ask --budget, ingest --json, search --json's source, calibrate's
warning on few questions, "cost unknown"."""

from __future__ import annotations

import importlib
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console
from typer.testing import CliRunner

from tether import schemas
from tether._version import __version__
from tether.app import Workspace
from tether.cli.main import app
from tether.errors import ProviderError
from tether.types import (
    Answer,
    AnswerProblem,
    AskResult,
    Claim,
    ClaimCheck,
    Completion,
    Flag,
    Gate,
    ModelRequest,
)

runner = CliRunner()
cli_app = importlib.import_module("tether.cli.app")  # the module (tether.cli.app is the Typer)
ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "public.md": "---\ndoc_id: returns\naccess: public\n---\n# Returns\n\n"
    "Items go back within 30 days of purchase.\n",
    "staff.md": "---\ndoc_id: staff-discounts\n---\n# Staff discounts\n\n"
    "Employees receive a 25 percent discount on tents and stoves.\n",  # no label: staff only
}


@pytest.fixture
def index(tmp_path: Path) -> str:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    path = str(tmp_path / "i.sqlite")
    done = runner.invoke(app, ["ingest", str(docs), "--index", path, "--no-embed"])
    assert done.exit_code == 0, done.output
    ws = Workspace.open(Path(path))
    ws.set_gate_floors({"bm25": 0.0})  # two documents: BM25 scores are near 0; any match passes
    ws.close()
    return path


class _Provider:
    name = "fixed"

    def __init__(self, reply: str | Exception, model: str = "fixed") -> None:
        self.reply, self.model = reply, model

    def complete(self, request: ModelRequest) -> Completion:
        if isinstance(self.reply, Exception):
            raise self.reply
        ids = [p[0] for p in request.passages] or list(request.chunk_ids)
        text = self.reply.replace("CHUNK", ids[0] if ids else "none")
        return Completion(text=text, provider=self.name, model=self.model)


def _ask(monkeypatch: pytest.MonkeyPatch, reply: str | Exception, *args: str):
    monkeypatch.setattr(Workspace, "make_provider", lambda self, *a, **k: _Provider(reply))
    return runner.invoke(app, ["ask", *args])


def _reply(answerable: bool, claim: str, cites: str = "CHUNK") -> str:
    claims = [{"text": claim, "chunk_ids": [cites]}] if answerable else []
    return json.dumps({"answerable": answerable, "answer": claim, "claims": claims})


def test_each_outcome_has_its_own_exit_status_and_json_status(
    index: str, monkeypatch: pytest.MonkeyPatch
):
    question = ("How long do returns take?", "--index", index, "--as-of", "none", "--json")
    staff = ("--audience", "staff")
    cases = [
        (_reply(True, "Items go back within 30 days of purchase."), 0, "answered", None, ()),
        # a flagged claim: staff see it marked; it is withheld from the public (a refusal by
        # the verifier when no checked claim remains)
        (_reply(True, "Items go back within 45 days of purchase."), 4, "flagged", None, staff),
        (_reply(True, "Items go back within 45 days of purchase."), 5, "refused", "verifier", ()),
        (_reply(False, "The passages do not say."), 5, "refused", "model", ()),
        (ProviderError("the server said 503"), 3, "no_answer", None, ()),
        ("not json at all", 3, "no_answer", None, ()),
    ]
    for reply, code, status, refused_by, extra in cases:
        done = _ask(monkeypatch, reply, *question, *extra)
        assert done.exit_code == code, (status, done.output)
        data = json.loads(done.stdout)
        assert (data["status"], data["refused_by"]) == (status, refused_by)
        # a provider error or unusable output is never a refusal
        assert data["refused"] == (status == "refused")
        assert (data["why_refused"] is None) == (status != "refused")
    done = _ask(monkeypatch, ProviderError("down"), *question[:-1])
    assert done.exit_code == 3 and "provider_error" in done.output


def test_a_refusal_for_a_public_asker_tells_nothing_of_staff_content(
    index: str, monkeypatch: pytest.MonkeyPatch
):
    """Only a staff-only (unlabelled) document matches: the public asker is refused by the
    gate with the hint about unlabelled documents, in the same words as for a question that
    nothing matches (naming the audience would say that staff documents answer); staff get
    past it."""
    ask = ("What discount do employees receive on tents?", "--index", index, "--as-of", "none")
    done = _ask(monkeypatch, _reply(True, "x"), *ask, "--json")
    assert done.exit_code == 5, done.output
    data = json.loads(done.stdout)
    assert (data["status"], data["refused_by"]) == ("refused", "gate")
    assert "documents without an access label are staff-only" in data["why_refused"]
    assert "25 percent" not in done.stdout and "withheld" not in data["gate"]
    nothing = _ask(monkeypatch, _reply(True, "x"), "zebra quantum", "--index", index, "--json")
    assert json.loads(nothing.stdout)["refused_by"] == "gate"
    assert json.loads(nothing.stdout)["why_refused"] == data["why_refused"]
    staff = _ask(monkeypatch, _reply(False, "no"), *ask, "--audience", "staff", "--json")
    assert json.loads(staff.stdout)["refused_by"] == "model"


def test_status_of_every_kind_of_result():
    claim = Claim("Items go back within 30 days.", ("c1",))
    ok = ClaimCheck(claim)
    bad = ClaimCheck(claim, flags=(Flag("number_not_found", "45"),))
    base = AskResult("q", None, "public", "en", "bm25", gate=Gate(True, 1.0, 1, 1, 2.0))
    answer = Answer(True, "a", (claim,))
    assert (base.__class__(**{**vars(base), "answer": answer, "checks": (ok,)})).status == "answered"

    def result(**kw: object) -> AskResult:
        return AskResult(**{**vars(base), **kw})  # type: ignore[arg-type]

    assert result(answer=answer, checks=(ok, bad)).status == "flagged"
    removed = ClaimCheck(claim, flags=bad.flags, removed=True)
    assert result(answer=answer, checks=(ok, removed)).status == "answered"
    refusal = Answer(False, "none", ())
    assert result(answer=refusal, checks=(removed,)).refused_by == "strict"
    withheld = ClaimCheck(claim, flags=bad.flags, withheld=True)
    assert result(answer=answer, checks=(ok, withheld)).status == "answered"  # not shown
    assert result(answer=refusal, checks=(withheld,)).refused_by == "verifier"
    assert result(answer=refusal).refused_by == "model"
    assert result(problem=AnswerProblem("refused", "no")).refused_by == "model"
    for kind in ("provider_error", "cut", "not_json", "not_schema"):
        failed = result(problem=AnswerProblem(kind, "x"))  # type: ignore[arg-type]
        assert failed.status == "no_answer" and not failed.refused and failed.refused_by is None
    closed = Gate(False, 1.0, 1, 0, 0.2, "weak")
    assert result(gate=closed, answer=refusal).refused_by == "gate"


def test_the_exit_table_is_in_ask_help_the_app_help_and_the_readme():
    flat = lambda text: " ".join(text.split())  # noqa: E731
    assert flat(cli_app.EXIT_TABLE) in flat(runner.invoke(app, ["ask", "--help"]).output)
    assert flat(cli_app.EXIT_TABLE) in flat(runner.invoke(app, ["--help"]).output)
    readme = (ROOT / "README.md").read_text()
    for status, code in cli_app.EXIT_CODES.items():
        assert re.search(rf"^\| {code} \| `{status}` \|", readme, re.M), status
    codes = [cli_app.EXIT_ANSWERED, cli_app.EXIT_USER_ERROR, cli_app.EXIT_USAGE,
             cli_app.EXIT_NO_ANSWER, cli_app.EXIT_FLAGGED, cli_app.EXIT_REFUSED]  # fmt: skip
    assert len(set(codes)) == len(codes)
    for code in (*codes, cli_app.EXIT_INTERRUPTED):
        assert f"| {code} |" in readme


def test_version_option():
    done = runner.invoke(app, ["--version"])
    assert done.exit_code == 0 and done.stdout.strip() == f"tether {__version__}"


def test_ask_budget_limits_the_context(index: str, monkeypatch: pytest.MonkeyPatch):
    ask = ("How long do returns take?", "--index", index, "--as-of", "none", "--json")
    reply = _reply(True, "Items go back within 30 days of purchase.")
    data = json.loads(_ask(monkeypatch, reply, *ask, "--budget", "60").stdout)
    assert data["context"]["budget"] == 60
    data = json.loads(_ask(monkeypatch, reply, *ask).stdout)
    from tether.answering.context import DEFAULT_BUDGET

    help_text = " ".join(runner.invoke(app, ["ask", "--help"]).output.replace("│", " ").split())
    assert data["context"]["budget"] == DEFAULT_BUDGET and f"default {DEFAULT_BUDGET})" in help_text
    assert runner.invoke(app, ["ask", "q", "--index", index, "--budget", "0"]).exit_code == 2


def test_search_json_hits_carry_their_source(index: str):
    done = runner.invoke(app, ["search", "returns", "--index", index, "--as-of", "none", "--json"])
    assert done.exit_code == 0, done.output
    (hit,) = json.loads(done.stdout)
    assert hit["source"] == "public.md"
    assert "source" in schemas.WireHit.model_json_schema()["properties"]


def test_ingest_json_is_the_ingest_report(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("---\naccess: public\n---\n# A\n\nSome text.\n")
    (docs / "bad.pdf").write_bytes(b"not a pdf")
    path = str(tmp_path / "i.sqlite")
    done = runner.invoke(app, ["ingest", str(docs), "--index", path, "--no-embed", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    schema = schemas.IngestReport.model_json_schema()
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["added"] == ["a.md"] and data["index"] == path and data["committed"]
    assert [p["source"] for p in data["problems"]] == ["bad.pdf"]
    again = json.loads(
        runner.invoke(app, ["ingest", str(docs), "--index", path, "--no-embed", "--json"]).stdout
    )
    assert again["unchanged"] == ["a.md"] and again["added"] == []
    assert json.loads(runner.invoke(app, ["schema", "ingest-report"]).stdout) == schema


def test_quiet_and_verbose(tmp_path: Path, index: str, monkeypatch: pytest.MonkeyPatch):
    docs = tmp_path / "docs"
    quiet = runner.invoke(app, ["-q", "ingest", str(docs), "--index", index, "--no-embed"])
    assert quiet.exit_code == 0 and quiet.output == ""
    loud = runner.invoke(app, ["-v", "ingest", str(docs), "--index", index, "--no-embed"])
    assert "unchanged public.md" in loud.output and "added" in loud.output
    monkeypatch.setattr(Workspace, "make_provider", lambda self, *a, **k: _Provider("{}"))
    ask = ["ask", "How long do returns take?", "--index", index, "--as-of", "none"]
    assert "timings: retrieve" in runner.invoke(app, ["-v", *ask]).output
    assert "timings" not in runner.invoke(app, ask).output
    assert runner.invoke(app, ["-q", "-v", "info", "--index", index]).exit_code == 2


def test_the_spinner_shows_elapsed_time_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch):
    for terminal in (True, False):
        screen = io.StringIO()
        console = Console(file=screen, force_terminal=terminal, width=80)
        monkeypatch.setattr(cli_app.err, "_console", console)
        with cli_app.working("loading the model…"):
            pass
        assert ("loading the model" in screen.getvalue()) == terminal
        assert ("0:00:00" in screen.getvalue()) == terminal


def test_calibrate_warns_on_fewer_than_30_questions(index: str, tmp_path: Path):
    from tether.evaluation.calibration import MIN_QUESTIONS

    rows = [
        {"id": f"Q{i:03}", "question": q, "language": "en", "as_of": None, "audience": "public",
         "abstain": abstain, "kind": "answerable" if not abstain else "unanswerable",
         "reference_answer": "", "keys": [], "must_not": [], "relevant": []}
        for i, (q, abstain) in enumerate([("How long do returns take?", False),
                                          ("zebra quantum", True)], 1)
    ]  # fmt: skip
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["calibrate", "--index", index, "--questions", str(questions)]
    done = runner.invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.output
    assert "fewer than 30" in json.loads(done.stdout)["warnings"][0] and MIN_QUESTIONS == 30
    assert "warning:" in runner.invoke(app, args).output


def test_an_unknown_price_prints_cost_unknown_not_zero(monkeypatch: pytest.MonkeyPatch):
    from tether.cli.ask import print_completion
    from tether.providers.base import price_for

    screen = io.StringIO()
    monkeypatch.setattr(cli_app.out, "_console", Console(file=screen, width=200))
    print_completion(Completion("x", model="my-model", cost_known=False), "openai")
    print_completion(Completion("x", model="qwen", cost_usd=0.0), "local")
    unknown, free = screen.getvalue().splitlines()
    assert unknown.endswith("cost unknown") and "$0" not in unknown and free.endswith("$0")
    assert price_for("my-model") is None
