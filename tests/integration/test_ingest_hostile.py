"""Hostile folders and files: ingest reads only what the user meant, loses no text silently,
and one bad file never stops a sync. Settings never come from the collection's `.env`.

Tests run as root here, and root ignores file permissions: an unreadable folder is simulated
with a monkeypatched `os.scandir` that raises PermissionError (as chmod 000 would for a user).
"""

from __future__ import annotations

import os
import re
import socket
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.config import load_settings, user_env_file
from tether.errors import ParseError, TetherError
from tether.ingest.discover import read_regular, scan
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.types import SyncReport


def md(doc_id: str, body: str, access: str = "public") -> str:
    body = textwrap.dedent(body).strip()
    return f"---\ndoc_id: {doc_id}\naccess: {access}\n---\n\n{body}\n"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(md("good", "# Good\nThe good document says hello."))
    return folder


@pytest.fixture
def store(tmp_path: Path):
    s = SqliteStore(tmp_path / "index.sqlite")
    yield s
    s.close()


def problems(report: SyncReport) -> dict[str, str]:
    return {p.source: p.reason for p in report.problems}


def all_text(store: SqliteStore) -> str:
    return "\n".join(c.text for c in store.chunks())


# ----------------------------------------------------------------------------------- links


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "sub").mkdir(parents=True)
    (folder / "secret.md").write_text(md("secret", "# Secret\nThe outside secret is 4711."))
    (folder / "sub" / "other.md").write_text(md("other", "# Other\nAnother outside text."))
    return folder


def test_links_out_of_the_folder_are_skipped_and_reported(
    docs: Path, outside: Path, store: SqliteStore
) -> None:
    (docs / "leak.md").symlink_to(outside / "secret.md")
    (docs / "ext").symlink_to(outside / "sub", target_is_directory=True)
    (docs / "passwd.txt").symlink_to("/etc/passwd")
    (docs / ".drafts").mkdir()
    (docs / ".drafts" / "inner.md").write_text(md("inner", "# Inner\nInside the folder."))
    (docs / "alias.md").symlink_to(docs / ".drafts" / "inner.md")  # inside: followed
    (docs / "alias.txt").symlink_to(docs / ".drafts" / "inner.md")  # another type: not
    (docs / "loop").symlink_to(docs, target_is_directory=True)  # inside folder: not followed
    report = sync(store, docs)
    reasons = problems(report)
    assert set(reasons) == {"leak.md", "ext", "passwd.txt", "loop", "alias.txt"}
    assert "another type" in reasons.pop("alias.txt")  # it would skip the front matter
    for name in ("leak.md", "ext", "passwd.txt"):
        assert "leads out of the collection folder" in reasons[name]
        assert "--follow-links" in reasons[name]
    assert sorted(report.added) == ["alias.md", "good.md"]
    text = all_text(store)
    assert "4711" not in text and "root:" not in text and "Another outside" not in text

    followed = sync(store, docs, follow_links=True)
    assert {"leak.md", "ext/other.md", "passwd.txt"} <= set(followed.added)
    assert "4711" in all_text(store)
    assert set(problems(followed)) == {"loop"}  # a loop is walked once, then reported

    # what was read through a link is removed once links are no longer followed
    again = sync(store, docs)
    assert {"leak.md", "ext/other.md", "passwd.txt"} <= set(again.removed)
    assert "4711" not in all_text(store)


def test_an_inventory_that_links_out_stops_the_sync(
    docs: Path, outside: Path, store: SqliteStore
) -> None:
    (outside / "inventory.csv").write_text("path,access\ngood.md,public\n")
    (docs / "inventory.csv").symlink_to(outside / "inventory.csv")
    with pytest.raises(TetherError, match=r"inventory\.csv is a link that leads out"):
        sync(store, docs)
    assert sync(store, docs, follow_links=True).added == ("good.md",)


def test_ingest_cli_reports_links_and_follows_them_when_asked(
    docs: Path, outside: Path, tmp_path: Path
) -> None:
    from tether.cli.main import app

    (docs / "leak.md").symlink_to(outside / "secret.md")
    index = str(tmp_path / "cli.sqlite")
    result = CliRunner().invoke(app, ["ingest", str(docs), "--index", index, "--no-embed"])
    assert result.exit_code == 0, result.output
    assert re.search(r"problem\s+leak\.md: a link that leads out", result.output)
    result = CliRunner().invoke(
        app, ["ingest", str(docs), "--index", index, "--no-embed", "--follow-links"]
    )
    assert result.exit_code == 0 and "added    leak.md" in result.output


# ------------------------------------------------------------------------- settings (.env)


def test_a_dotenv_in_the_current_folder_is_never_read(
    docs: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TETHER_BASE_URL", raising=False)
    (docs / ".env").write_text("TETHER_BASE_URL=https://evil.example/v1\n")
    monkeypatch.chdir(docs)
    assert load_settings().base_url is None
    # the user's own file is read: $XDG_CONFIG_HOME/tether/env
    own = tmp_path / "config" / "tether" / "env"
    own.parent.mkdir(parents=True)
    own.write_text("TETHER_BASE_URL=http://localhost:11434/v1\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert user_env_file() == own
    assert load_settings().base_url == "http://localhost:11434/v1"
    # an explicit file replaces it; a missing explicit file is an error
    chosen = tmp_path / "chosen.env"
    chosen.write_text("TETHER_BASE_URL=http://chosen/v1\n")
    monkeypatch.setenv("TETHER_ENV_FILE", str(chosen))
    assert load_settings().base_url == "http://chosen/v1"
    monkeypatch.setenv("TETHER_ENV_FILE", str(tmp_path / "missing.env"))
    with pytest.raises(TetherError, match="does not exist"):
        load_settings()


def test_the_user_settings_file_follows_the_xdg_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for value in ("", "relative/config"):  # unset or not absolute: ~/.config
        monkeypatch.setenv("XDG_CONFIG_HOME", value)
        assert user_env_file() == tmp_path / ".config" / "tether" / "env"


def test_env_file_option_is_read_for_the_command_only(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.cli.main import app

    monkeypatch.delenv("TETHER_TIMEOUT", raising=False)
    monkeypatch.chdir(docs)
    (docs / ".env").write_text("TETHER_TIMEOUT=soon\n")  # never read: ingest works
    index = str(tmp_path / "cli.sqlite")
    ok = CliRunner().invoke(app, ["ingest", ".", "--index", index, "--no-embed"])
    assert ok.exit_code == 0, ok.output
    chosen = tmp_path / "chosen.env"
    chosen.write_text("TETHER_TIMEOUT=soon\n")  # read: its bad value is the error
    bad = CliRunner().invoke(
        app, ["--env-file", str(chosen), "ingest", ".", "--index", index, "--no-embed"]
    )
    assert bad.exit_code == 1
    assert "error: TETHER_TIMEOUT='soon' is not a number" in bad.output
    assert "TETHER_ENV_FILE" not in os.environ  # set while the command ran, then restored
    missing = CliRunner().invoke(app, ["--env-file", str(tmp_path / "no.env"), "version"])
    assert missing.exit_code == 2 and "--env-file" in missing.output


# ----------------------------------------------------------------- special and huge files


def _sync_within(index: Path, folder: Path, seconds: float, **kw: object) -> SyncReport:
    """sync in a thread (its own store): a hang fails the test instead of blocking the suite;
    an exception is raised here."""
    done: list[SyncReport | BaseException] = []

    def run() -> None:
        store = SqliteStore(index)
        try:
            done.append(sync(store, folder, **kw))  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the test
            done.append(exc)
        finally:
            store.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"sync did not finish within {seconds} s"
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def test_fifo_socket_and_device_are_problems_never_opened(docs: Path, tmp_path: Path) -> None:
    os.mkfifo(docs / "pipe.md")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(docs / "sock.txt"))
    (docs / "zero.txt").symlink_to("/dev/zero")
    try:
        report = _sync_within(tmp_path / "index.sqlite", docs, 20, follow_links=True)
    finally:
        server.close()
    reasons = problems(report)
    assert reasons["pipe.md"] == "not a regular file (a FIFO); it is not read"
    assert reasons["sock.txt"] == "not a regular file (a socket); it is not read"
    assert reasons["zero.txt"] == "not a regular file (a character device); it is not read"
    assert report.added == ("good.md",)
    with pytest.raises(ParseError, match="character device"):
        read_regular(Path("/dev/zero"))
    os.mkfifo(tmp_path / "fifo-inventory")
    (docs / "inventory.csv").symlink_to(tmp_path / "fifo-inventory")
    with pytest.raises(TetherError, match=r"inventory\.csv: not a regular file"):
        _sync_within(tmp_path / "index.sqlite", docs, 20, follow_links=True)


def test_a_huge_sparse_file_is_refused_without_being_read(docs: Path, store: SqliteStore) -> None:
    with open(docs / "huge.md", "wb") as f:
        f.truncate(3_000_000_000)  # 3 GB, sparse: no disk used
    tracemalloc.start()
    began = time.perf_counter()
    report = sync(store, docs)
    seconds = time.perf_counter() - began
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert problems(report)["huge.md"] == "file is 3000.0 MB, over the 20 MB limit"
    assert report.added == ("good.md",)
    assert peak < 50_000_000 and seconds < 10  # read whole, it took 3 GB


def test_a_file_that_grows_after_stat_is_still_read_bounded(tmp_path: Path) -> None:
    path = tmp_path / "grows.md"
    path.write_bytes(b"x" * 100)
    real_stat = os.stat

    def small_stat(p: object, *a: object, **k: object) -> os.stat_result:
        st = real_stat(p, *a, **k)  # type: ignore[arg-type]
        return os.stat_result((st.st_mode, *st[1:6], 10, *st[7:]))

    path.write_bytes(b"x" * 5000)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "stat", small_stat)
        mp.setattr(os, "fstat", lambda fd: small_stat(f"/proc/self/fd/{fd}"))
        with pytest.raises(ParseError, match="over the 1,000 bytes limit"):
            read_regular(path, 1000)


# -------------------------------------------------------------- one bad file never aborts


def test_one_bad_file_is_a_problem_and_the_rest_syncs(
    docs: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync(store, docs)
    deep = "---\ndoc_id: deep\nnested: " + "[" * 1000 + "]" * 1000 + "\n---\n\n# Deep\ntext\n"
    (docs / "deep-front-matter.md").write_text(deep)
    for name, charset in (("rot13", "rot13"), ("puny", "punycode"), ("undefined", "undefined")):
        page = f'<html><head><meta charset="{charset}"></head><body><p>{name} page</p></body>'
        (docs / f"{name}.html").write_text(page + "</html>")
    (docs / "new.md").write_text(md("new", "# New\nA new document."))
    (docs / "two-lines.md").write_text('---\neffective_from: "0\\n0"\n---\n\n# T\ntext\n')
    report = sync(store, docs)
    reasons = problems(report)
    assert reasons == {
        "deep-front-matter.md": "front matter is nested too deeply to be read",
        "puny.html": reasons["puny.html"],
        "two-lines.md": "effective_from '0 0' is not a date (use YYYY-MM-DD)",  # one line
    }
    assert reasons["puny.html"].startswith("not valid punycode")
    # a charset that names no text encoding is ignored, as a browser does
    assert set(report.added) == {"new.md", "rot13.html", "undefined.html"}

    # any exception in one parser: that file is a problem, its previous version stays
    import tether.ingest.parse.markdown as markdown
    from tether.ingest import guard

    real = markdown.parse

    def boom(data: bytes):  # type: ignore[no-untyped-def]
        if b"hello" in data:
            raise KeyError("surprise")
        return real(data)

    monkeypatch.setattr(markdown, "parse", boom)
    monkeypatch.setattr(guard, "ISOLATE", False)  # parse here: a child cannot see the patch
    (docs / "good.md").write_text(md("good", "# Good\nThe good document says hello again."))
    (docs / "later.md").write_text(md("later", "# Later\nA later document."))
    report = sync(store, docs)
    assert problems(report)["good.md"] == "cannot be read (KeyError: 'surprise')"
    assert "good.md" in report.unchanged and report.added == ("later.md",)
    assert "says hello." in all_text(store)


def test_a_lone_surrogate_in_metadata_is_a_problem_not_a_failed_write(
    docs: Path, store: SqliteStore
) -> None:
    (docs / "surrogate.md").write_text('---\ntitle: "a\\udc00"\n---\n\n# T\nbody\n')
    report = sync(store, docs)  # the store could not write it: the whole sync failed
    assert problems(report) == {
        "surrogate.md": "the title holds a lone surrogate (not a Unicode character)"
    }
    assert report.added == ("good.md",)


def test_a_file_name_that_is_not_utf8_is_a_problem(docs: Path, store: SqliteStore) -> None:
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "wb") as f:
        f.write(b"# Cafe\nLatin-1 name.\n")
    report = sync(store, docs)
    assert problems(report) == {"caf\\xe9.md": "the name is not valid UTF-8"}
    assert report.added == ("good.md",)


# ----------------------------------------------------------------- no silent loss of text

DEPTH = 300


def _deep_files(folder: Path) -> dict[str, list[str]]:
    """Files nested DEPTH levels deep, and the words each must keep."""
    words = [f"level{i}x" for i in range(DEPTH)]
    lists = "\n".join("  " * i + f"- {w}" for i, w in enumerate(words))
    quotes = "\n".join("> " * (i + 1) + w + "\n" for i, w in enumerate(words))
    divs = "".join(f"<div>{w} " for w in words) + "</div>" * DEPTH
    items = "".join(f"<ul><li>{w} " for w in words) + "</li></ul>" * DEPTH
    (folder / "lists.md").write_text(md("lists", f"# Lists\n\n{lists}\n\nAfter the list."))
    (folder / "quotes.md").write_text(md("quotes", f"# Quotes\n\n{quotes}\nAfter the quote."))
    for name, body in (("divs", divs), ("items", items)):
        page = f"<html><body><h1>{name}</h1>{body}<p>After the {name}.</p></body></html>"
        (folder / f"{name}.html").write_text(page)
    return {name: [*words, "After the"] for name in ("lists", "quotes", "divs", "items")}


def test_deeply_nested_text_is_kept_in_the_chunks(docs: Path, store: SqliteStore) -> None:
    expected = _deep_files(docs)
    report = sync(store, docs)
    assert not report.problems
    for doc_id, words in expected.items():
        text = " ".join(c.text for c in store.chunks(doc_id))
        missing = [w for w in words if w not in text]
        assert not missing, f"{doc_id}: {len(missing)} of {len(words)} words lost"


def test_html_deeper_than_the_parser_goes_is_a_problem(docs: Path, store: SqliteStore) -> None:
    deep = "<div>" * 3000 + "<p>bottom text</p>" + "</div>" * 3000
    (docs / "abyss.html").write_text(f"<html><body><p>top</p>{deep}</body></html>")
    report = sync(store, docs)
    assert problems(report) == {
        "abyss.html": "HTML cannot be read whole: elements nested too deeply"
    }


# -------------------------------------------------------------------- unreadable folders


def test_an_unreadable_folder_is_a_problem_and_keeps_its_documents(
    docs: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (docs / "private").mkdir()
    (docs / "private" / "kept.md").write_text(md("kept", "# Kept\nThe kept text."))
    (docs / "private" / "deeper").mkdir()
    (docs / "private" / "deeper" / "also.md").write_text(md("also", "# Also\nAlso kept."))
    assert len(sync(store, docs).added) == 3
    real_scandir = os.scandir

    def denied(path: object = ".") -> object:  # as chmod 000 does for a user other than root
        if str(path).rstrip("/").endswith("private"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", denied)
    (docs / "new.md").write_text(md("new", "# New\nA new document."))
    report = sync(store, docs)
    assert problems(report) == {"private/": "cannot read folder: Permission denied"}
    assert report.removed == () and report.added == ("new.md",)
    assert {"private/kept.md", "private/deeper/also.md"} <= set(report.unchanged)
    assert "The kept text" in all_text(store)
    monkeypatch.setattr(os, "scandir", lambda path=".": denied(str(path) + "/private"))
    with pytest.raises(TetherError, match="cannot read the collection folder"):
        scan(docs)


# -------------------------------------------------------------------- an emptied file (issue 25)


@pytest.mark.parametrize(("emptied", "what"), [(b"", "0 bytes"), (b" \n\t\n", "only whitespace")])
def test_an_emptied_file_says_its_previous_version_is_still_served(
    docs: Path, store: SqliteStore, emptied: bytes, what: str
) -> None:
    """Emptied in place, a file used to keep serving its previous version behind a bare
    "empty file" problem: the problem now says so, and --strict removes it instead."""
    (docs / "gone.md").write_text(md("gone", "# Gone\nThe gone document says 4711."))
    sync(store, docs)
    (docs / "gone.md").write_bytes(emptied)
    report = sync(store, docs)
    assert problems(report) == {
        "gone.md": f"empty file ({what}); its previous version is still served"
        " (--strict removes it)"
    }
    assert "gone.md" in report.unchanged and "says 4711" in all_text(store)

    strict = sync(store, docs, strict=True)
    assert strict.committed and strict.removed == ("gone.md",)
    assert problems(strict) == {
        "gone.md": f"empty file ({what}); removed from the index (--strict)"
    }
    assert "4711" not in all_text(store) and "hello" in all_text(store)


def test_strict_stopped_by_another_problem_keeps_the_emptied_files_version(
    docs: Path, store: SqliteStore
) -> None:
    (docs / "gone.md").write_text(md("gone", "# Gone\nThe gone document says 4711."))
    sync(store, docs)
    (docs / "gone.md").write_bytes(b"")
    (docs / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    report = sync(store, docs, strict=True)
    assert not report.committed and report.removed == ()
    assert problems(report)["gone.md"] == (
        "empty file (0 bytes); nothing was written (--strict), so its previous version is"
        " still served"
    )
    assert "says 4711" in all_text(store)


def test_the_cli_prints_the_emptied_file_in_one_line_and_strict_exits_1(
    docs: Path, tmp_path: Path, clean_env: Path
) -> None:
    from tether.cli import app

    index = tmp_path / "cli.sqlite"
    (docs / "gone.md").write_text(md("gone", "# Gone\nThe gone document says 4711."))
    runner = CliRunner()
    base = ["ingest", str(docs), "--index", str(index), "--no-embed"]
    assert runner.invoke(app, base).exit_code == 0
    (docs / "gone.md").write_bytes(b"")
    kept = runner.invoke(app, base)
    assert kept.exit_code == 0, kept.output
    assert "gone.md: empty file (0 bytes); its previous version is still served" in kept.output
    removed = runner.invoke(app, [*base, "--strict"])
    assert removed.exit_code == 1 and "Traceback" not in removed.output
    assert "gone.md: empty file (0 bytes); removed from the index (--strict)" in removed.output
    assert "nothing was written" not in removed.output
