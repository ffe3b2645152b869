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
    "config", "ask", "chat", "eval", "calibrate", "schema",
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
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---- hostile text, exit statuses, question length ------------------------------------------

HOSTILE = "[/note] [bold] :x: \x1b[31m"


class ChatServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers every POST with `reply`:
    (status, content type, body bytes)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.reply: tuple[int, str, bytes] = (500, "application/json", b"{}")
        self.calls = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.calls += 1
                status, kind, body = fake.reply
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, content: str | None, refusal: str | None = None, model: str = "m") -> None:
        message = {"role": "assistant", "content": content, "refusal": refusal}
        body = {
            "id": "c", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }  # fmt: skip
        self.reply = (200, "application/json", json.dumps(body).encode())


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = ChatServer()
    host, port = server.httpd.server_address[:2]
    env = {
        "NO_PROXY": "127.0.0.1", "TETHER_PROVIDER": "openai", "TETHER_MODEL": "m",
        "TETHER_BASE_URL": f"http://{host}:{port}/v1", "TETHER_API_KEY": "sk-test",
        "TETHER_MAX_RETRIES": "0", "TETHER_TIMEOUT": "10",
    }  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def hostile_index(folder: Path, tmp_path: Path) -> str:
    """The `folder` collection plus a public document whose title, headings, text and file
    name hold markup, an emoji code and an escape sequence; gate floor 0 (any hit passes)."""
    from tether.app import Workspace

    (folder / "ret[bold] :x: \x1b[31murns.md").write_text(
        f"---\ndoc_id: returns\ntitle: 'Returns [/note] [bold] :x:'\naccess: public\n---\n\n"
        f"# Returns {HOSTILE}\n\n## Refund window [/note]\n\n"
        f"Refunds are accepted within 30 days {HOSTILE} of purchase.\n"
    )
    index = str(tmp_path / "hostile.sqlite")
    assert run("ingest", str(folder), "--index", index, "--no-embed").exit_code == 0
    with Workspace.open(Path(index)) as ws:
        ws.set_gate_floors({"bm25": 0.0})
    return index


def assert_literal(output: str, escape_kept: bool = True) -> None:
    """Markup and emoji codes printed as they are; no escape character reaches the terminal
    (ingest drops it from document text; file names and model output keep it, shown as
    `\\x1b`)."""
    assert "Traceback" not in output and "MarkupError" not in output
    assert "\x1b" not in output and "❌" not in output
    assert "[/note]" in output and "[bold]" in output and ":x:" in output
    assert ("\\x1b[31m" in output) is escape_kept


def test_document_text_and_file_names_print_literally(hostile_index: str):
    result = run("search", "refund window", "--index", hostile_index, "--as-of", "none")
    assert result.exit_code == 0, result.output
    assert_literal(result.output, escape_kept=False)
    assert "Refund window [/note]" in result.output
    result = run("chunks", "returns", "--index", hostile_index)
    assert result.exit_code == 0, result.output
    assert_literal(result.output, escape_kept=False)
    result = run("documents", "--index", hostile_index)
    assert result.exit_code == 0 and "ret[bold] :x: \\x1b[31murns.md" in result.output
    result = run("ingest", str(Path(hostile_index).parent / "docs"), "--index", hostile_index)
    assert result.exit_code == 0 and "\x1b" not in result.output


def test_model_output_prints_literally(hostile_index: str, chat_server: ChatServer):
    hits = json.loads(
        run("search", "refund", "--index", hostile_index, "--as-of", "none", "--json").stdout
    )
    chunk_id = hits[0]["chunk_id"]
    chat_server.answer(
        json.dumps({
            "answerable": True, "answer": f"Within 30 days {HOSTILE}",
            "claims": [{"text": f"Refunds are accepted within 30 days {HOSTILE}",
                        "chunk_ids": [chunk_id, f"x{HOSTILE}"]}],
        }),
        model=f"m{HOSTILE}",
    )  # fmt: skip
    # staff: the flagged claim is shown, marked (a public reader is not shown it at all)
    ask = ("ask", "refund window", "--index", hostile_index, "--as-of", "none")
    result = run(*ask, "--audience", "staff")
    assert result.exit_code == 4, result.output  # answered, with a flagged claim (missing_id)
    assert_literal(result.output)
    assert f"Within 30 days {HOSTILE[:-5]}" in result.output
    result = run(*ask, "--audience", "staff", "--json")
    assert result.exit_code == 4 and "\x1b" not in result.stdout
    assert json.loads(result.stdout)["answer"]["answer"] == f"Within 30 days {HOSTILE}"


def test_ask_exits_3_when_no_answer_could_be_produced(
    hostile_index: str, chat_server: ChatServer
):
    ask = ("ask", "refund window", "--index", hostile_index, "--as-of", "none")
    cases = [
        ((500, "application/json", b'{"error": {"message": "down"}}'), "provider_error"),
        ((200, "text/html", b"<html><body>Sign in</body></html>"), "not JSON"),
        ((200, "application/json", b"<html>"), "not JSON"),
    ]
    for reply, message in cases:
        chat_server.reply = reply
        for extra in ((), ("--json",)):
            result = run(*ask, *extra)
            assert result.exit_code == 3, (reply, extra, result.output)
            assert message in result.output and "Traceback" not in result.output
    chat_server.answer("Sure! Refunds take 30 days.")  # prose where JSON was asked for
    assert run(*ask).exit_code == 3
    chat_server.answer(None, refusal="I can't help with that")  # the model refuses: honest
    result = run(*ask)
    assert result.exit_code == 5 and "refused" in result.output
    # the gate refuses (no passage for this question): no model call, exit 5
    calls = chat_server.calls
    result = run("ask", "zebra quantum", "--index", hostile_index, "--as-of", "none")
    assert result.exit_code == 5 and "Refused before the model" in result.output
    assert chat_server.calls == calls
    assert "3 no answer could be produced" in run("ask", "--help").output


def test_questions_over_the_limit_are_refused_before_retrieval(
    hostile_index: str, monkeypatch: pytest.MonkeyPatch
):
    from tether.answering.gate import MAX_QUESTION_CHARS
    from tether.collection import Collection
    from tether.errors import TetherError
    from tether.retrieval.retriever import Retriever

    def no_retrieval(*args: object, **kwargs: object) -> None:
        raise AssertionError("retrieval ran")

    monkeypatch.setattr(Retriever, "search", no_retrieval)
    long = "refund window " * (MAX_QUESTION_CHARS // 14 + 1)
    for command in ("search", "ask"):
        result = run(command, long, "--index", hostile_index)
        assert result.exit_code == 1, result.output
        assert "limit is 2,000" in result.output and "Traceback" not in result.output
    with pytest.raises(TetherError, match="limit is 2,000"):
        Collection(Path(hostile_index).parent / "docs").search(long)


def test_shown_prints_any_text_literally():
    """Property: any text in a markup template prints as itself, control characters as
    escapes, whatever brackets, backslashes or emoji codes it holds."""
    import io

    from hypothesis import given, settings
    from hypothesis import strategies as st
    from rich.console import Console

    from tether.cli.app import shown, visible

    pieces = st.sampled_from(
        ["[", "]", "\\", "/", ":x:", "[/note]", "[bold]", "[link=x]", "\\[", "\x1b", "\x9b",
         "\u202e", "\n", "\r", "a", " ", "@", "#"]
    ) | st.characters()  # fmt: skip

    @settings(max_examples=400, deadline=None)
    @given(st.lists(pieces, max_size=16).map("".join), st.booleans())
    def check(text: str, one_line: bool) -> None:
        text = text.replace("\t", " ")  # rich expands tabs to spaces: layout, not content
        buf = io.StringIO()
        console = Console(file=buf, width=10_000, emoji=False, color_system=None, soft_wrap=True)
        console.print(f"[bold]{shown(text, one_line=one_line)}[/bold]|", end="", highlight=False)
        assert buf.getvalue() == visible(text, one_line=one_line) + "|"

    check()
    assert visible("a\x1bb\u202ec\nd") == "a\\x1bb\\u202ec\nd"
    assert visible("a\nb\tc", one_line=True) == "a\\nb\\tc"


def test_serve_without_the_serve_extra_says_so_in_one_line(monkeypatch) -> None:
    """After `make demo` (no serve extra) `tether serve` names what is missing: no traceback."""
    import sys

    from typer.testing import CliRunner

    from tether.cli.main import app as cli

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # an import of it raises ImportError
    result = CliRunner().invoke(cli, ["serve", "--demo"])
    assert result.exit_code == 1, result.output
    from tether.extras import install_hint

    assert install_hint("serve") in result.output and "Traceback" not in result.output
    assert "tether[serve]" not in result.output  # on no package index: never the index form


def test_a_keys_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    from tether.errors import TetherError
    from tether.server.keys import load_keys

    keys = tmp_path / "keys.toml"
    keys.write_bytes(b"allow_anonymous = false\n# \xff\xfe latin-1 comment\n")
    with pytest.raises(TetherError, match="not UTF-8"):
        load_keys(keys)


def test_serve_on_a_busy_port_says_so_before_serving(tmp_path: Path) -> None:
    """A port another server holds: one line, exit 1, and never "serving … on"."""
    import socket

    from typer.testing import CliRunner

    from tether.cli.main import app as cli

    pytest.importorskip("uvicorn")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["serve", "--index", str(tmp_path / "none.sqlite"), "--port", str(port)]
        )
    assert result.exit_code == 1, result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "serving" not in result.output and "Traceback" not in result.output
