"""The index under faults and hostile files: read commands never write, a file that is not a
tether index is refused untouched, and every SQLite failure (the write lock held by another
ingest, a full disk, a read-only file or folder, a damaged file, a write killed midway) is one
clear TetherError with the index as it was.

How faults are made here (the tests run as root in CI, where chmod does not stop writes):
- full disk: a tiny tmpfs when `mount` works (root), and always SQLite's
  `PRAGMA max_page_count`, which fails the write with SQLITE_FULL as a full disk does;
- read-only: `chattr +i` on the file or folder when it works (root), else chmod (non-root),
  and always `PRAGMA query_only`, which fails every write with SQLITE_READONLY.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_store import collection, kill_mid_write, md, snapshot  # noqa: F401 (the fixture)
from typer.testing import CliRunner

from tether.app import Workspace
from tether.cli.main import app
from tether.config import settings_from_mapping
from tether.errors import TetherError
from tether.ingest.sync import sync
from tether.stores import open_store
from tether.stores.sqlite import SCHEMA_VERSION, SqliteStore
from tether.types import ChunkerConfig

runner = CliRunner()
READ_COMMANDS = [
    ["search", "refund"],
    ["documents"],
    ["chunks", "returns-policy"],
    ["info"],
    ["ask", "How long is the return window?", "--provider", "extractive"],
    ["eval", "--methods", "bm25"],
]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_beside(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


@pytest.fixture
def index(tmp_path: Path, collection: Path) -> Path:  # noqa: F811
    path = tmp_path / "index.sqlite"
    store = SqliteStore(path)
    sync(store, collection)
    store.close()
    return path


def not_an_index(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.sqlite"
    if kind == "other-sqlite":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
        db.execute("INSERT INTO contacts VALUES ('Ann', '555')")
        db.commit()
        db.close()
    elif kind in ("wrong-meta", "forged-meta"):  # a meta table, but not tether's index
        db = sqlite3.connect(path)
        if kind == "wrong-meta":
            db.execute("CREATE TABLE meta (a TEXT, b TEXT)")
        else:
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.commit()
        db.close()
    elif kind == "text":
        path.write_text("name,phone\nAnn,555\n" * 50)
    else:
        path.write_bytes(b"")
    return path


# ---- read commands never write, and refuse what is not an index ------------------------------


@pytest.mark.parametrize("kind", ["other-sqlite", "empty", "text", "wrong-meta", "forged-meta"])
def test_a_file_that_is_not_an_index_is_refused_and_left_untouched(tmp_path: Path, kind: str):
    path = not_an_index(tmp_path, kind)
    before, beside = digest(path), files_beside(path)
    with pytest.raises(TetherError, match=r"not a tether index|is empty, not a tether index"):
        open_store(path)
    for args in READ_COMMANDS:
        result = runner.invoke(app, [*args, "--index", str(path)])
        assert result.exit_code == 1, (args, result.output)
        shown = " ".join(result.output.split())  # rich folds a long line on narrow terminals
        assert shown.startswith("error:") and shown.count("error:") == 1, (args, shown)
        assert "tether index" in shown and "Traceback" not in shown
    assert digest(path) == before and files_beside(path) == beside


def test_ingest_refuses_another_programs_database_and_leaves_it_untouched(
    tmp_path: Path,
    collection: Path,  # noqa: F811
):
    path = not_an_index(tmp_path, "other-sqlite")
    before = digest(path)
    with pytest.raises(TetherError, match=r"not a tether index .*contacts"):
        Workspace.open(path).ingest(collection, embed=False)
    assert digest(path) == before
    # a 0-byte file given to ingest becomes an index (it holds nothing to lose)
    empty = not_an_index(tmp_path, "empty")
    Workspace.open(empty).ingest(collection, embed=False)
    assert len(open_store(empty).documents()) == 4


def test_read_commands_open_the_index_read_only(index: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TETHER_AUDIT", "false")  # ask records in the audit (test_audit.py)
    before, beside = digest(index), files_beside(index)
    for args in READ_COMMANDS:
        result = runner.invoke(app, [*args, "--index", str(index)])
        assert result.exit_code in (0, 1, 5), (args, result.output)  # 5: ask refused
        assert "Traceback" not in result.output
    assert digest(index) == before and files_beside(index) == beside
    store = open_store(index)
    with pytest.raises(TetherError, match="opened for reading"):
        store.set_meta({"x": "1"})
    # the connection itself is read-only: a write slipped past the store fails too
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store.db.execute("CREATE TABLE intruder (x)")  # type: ignore[attr-defined]
    assert digest(index) == before


def test_the_workspace_writes_only_to_ingest_and_store_floors(index: Path, collection: Path):  # noqa: F811
    ws = Workspace.open(index)
    assert len(ws.store.documents()) == 4
    with pytest.raises(TetherError, match="opened for reading"):
        ws.store.set_meta({"x": "1"})
    ws.set_gate_floors({"bm25": 0.5})  # calibrate may write: it reopens the index to do so
    assert open_store(index).meta_value("gate_floor:bm25") == "0.5"
    (collection / "fraud.md").unlink()
    assert ws.ingest(collection, embed=False).removed == ("fraud.md",)


def test_an_index_is_recognised_by_its_schema_not_its_name(index: Path, tmp_path: Path):
    renamed = tmp_path / "notes.db"
    shutil.copy(index, renamed)
    assert len(open_store(renamed).documents()) == 4
    assert open_store(renamed).meta_value("schema_version") == str(SCHEMA_VERSION)


# ---- the write lock ---------------------------------------------------------------------------


@contextmanager
def lock_held(path: Path, how: str = "IMMEDIATE") -> Iterator[None]:
    """Another connection holds the write lock (as an ingest mid-apply does)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute(f"BEGIN {how}")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_second_ingest_waits_a_bounded_time_then_stops_clearly(
    index: Path,
    collection: Path,  # noqa: F811
):
    (collection / "new.md").write_text(md("new-doc", "1", "# New\n## A\nnew text", access="public"))
    before = snapshot(index)
    settings = settings_from_mapping({"TETHER_LOCK_TIMEOUT": "0.5"})
    with lock_held(index):
        start = time.monotonic()
        with pytest.raises(TetherError, match="another ingest is writing this index"):
            Workspace.open(index, settings=settings).ingest(collection, embed=False)
        waited = time.monotonic() - start
    assert 0.4 < waited < 10
    assert snapshot(index) == before
    # a wait within the timeout succeeds once the other writer commits
    store = open_store(index, writable=True, lock_timeout=10)
    other = sqlite3.connect(index, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, lambda: other.execute("ROLLBACK")).start()
    assert sync(store, collection).added == ("new.md",)
    other.close()


def test_a_reader_blocked_by_a_commit_past_the_timeout_gets_one_line(index: Path):
    store = SqliteStore(index, create=False, writable=False, lock_timeout=0.2)
    with lock_held(index, "EXCLUSIVE"), pytest.raises(TetherError, match="another ingest"):
        store.documents()
    assert len(store.documents()) == 4


def test_the_default_lock_wait_is_bounded_and_configurable():
    assert settings_from_mapping({}).lock_timeout == 30.0
    with pytest.raises(TetherError, match="TETHER_LOCK_TIMEOUT"):
        settings_from_mapping({"TETHER_LOCK_TIMEOUT": "soon"})


# ---- full disk --------------------------------------------------------------------------------


def add_big_files(collection: Path, n: int = 40) -> None:  # noqa: F811
    for i in range(n):
        words = " ".join(f"word{i}x{j}" for j in range(400))
        (collection / f"big{i}.md").write_text(md(f"big-{i}", "1", f"# Big {i}\n## A\n{words}"))


def test_a_full_disk_is_one_line_and_the_first_error_is_not_hidden(
    index: Path,
    collection: Path,  # noqa: F811
):
    """Simulated with PRAGMA max_page_count (SQLITE_FULL, as a full disk gives)."""
    before = snapshot(index)
    store = SqliteStore(index, create=False)
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")
    add_big_files(collection)
    with pytest.raises(TetherError) as caught:
        sync(store, collection)
    message = str(caught.value)
    assert message.startswith("the disk is full") and "rollback" not in message
    assert snapshot(index) == before
    assert not store.db.in_transaction


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"mount failed: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_real_full_disk_is_one_line_with_the_index_as_it_was(
    tiny_disk: Path,
    collection: Path,  # noqa: F811
):
    """A 400 KB tmpfs: the index fits, then a filler takes the rest of the space."""
    path = tiny_disk / "index.sqlite"
    sync(SqliteStore(path), collection)
    before = snapshot(path)
    filler = tiny_disk / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass
    add_big_files(collection)
    with pytest.raises(TetherError, match=r"^the disk is full"):
        Workspace.open(path).ingest(collection, embed=False)
    filler.unlink()
    assert snapshot(path) == before


# ---- read-only file or folder -----------------------------------------------------------------


def test_a_write_refused_by_sqlite_is_one_line_with_the_index_as_it_was(
    index: Path,
    collection: Path,  # noqa: F811
):
    """Simulated with PRAGMA query_only (SQLITE_READONLY, as a read-only file gives)."""
    before = snapshot(index)
    store = SqliteStore(index, create=False)
    store.db.execute("PRAGMA query_only = 1")
    add_big_files(collection, 2)
    with pytest.raises(TetherError, match="read-only"):
        sync(store, collection)
    assert snapshot(index) == before


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` cannot be written, even by root: chattr +i, else chmod (non-root)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i does not work on this file system")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_file_or_folder_is_one_line(index: Path, collection: Path, what: str):  # noqa: F811
    before = snapshot(index)
    add_big_files(collection, 2)
    with read_only(index if what == "file" else index.parent):
        with pytest.raises(TetherError, match="read-only"):
            Workspace.open(index).ingest(collection, embed=False)
        # reading still works
        assert len(open_store(index).documents()) == 4
    assert snapshot(index) == before


# ---- damaged files ----------------------------------------------------------------------------


def damage(path: Path) -> None:
    """Overwrite every page but the first (the schema stays readable, the data does not)."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = b"\x5a" * (len(data) - page)
    path.write_bytes(bytes(data))


def test_a_damaged_index_is_one_line_and_rebuild_replaces_it(index: Path, collection: Path):  # noqa: F811
    damage(index)
    with pytest.raises(TetherError, match=r"is damaged.*--rebuild"):
        open_store(index).documents()
    result = runner.invoke(app, ["documents", "--index", str(index)])
    shown = " ".join(result.output.split())
    assert result.exit_code == 1 and shown.count("error:") == 1 and "Traceback" not in shown
    assert shown.startswith("error: the index") and "is damaged" in shown
    with pytest.raises(TetherError, match="is damaged"):
        Workspace.open(index).ingest(collection, embed=False)
    report = Workspace.open(index).ingest(collection, embed=False, rebuild=True)
    assert len(report.added) == 4
    assert (index.parent / "index.sqlite.damaged").exists()
    assert len(open_store(index).documents()) == 4


@pytest.mark.parametrize("key", ["generation", "embedder_dim"])
def test_a_meta_value_that_is_not_a_number_is_a_damaged_index(
    index: Path,
    collection: Path,  # noqa: F811
    key: str,
):
    db = sqlite3.connect(index)
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, 'x')", (key,))
    db.commit()
    db.close()
    with pytest.raises(TetherError, match=f"is damaged \\(its {key}"):
        open_store(index).vectors()
    report = Workspace.open(index).ingest(collection, embed=False, rebuild=True)
    assert len(report.added) == 4 and (index.parent / "index.sqlite.damaged").exists()


@pytest.mark.parametrize("kind", ["text", "other-sqlite", "forged-meta"])
def test_rebuild_never_sets_aside_a_file_that_is_not_an_index(
    tmp_path: Path,
    collection: Path,  # noqa: F811
    kind: str,
):
    path = not_an_index(tmp_path, kind)
    before = digest(path)
    with pytest.raises(TetherError, match="not a tether index"):
        Workspace.open(path).ingest(collection, embed=False, rebuild=True)
    assert digest(path) == before and sorted(tmp_path.iterdir()) == [collection, path]


def test_rebuild_replaces_an_index_of_another_schema_version(index: Path, collection: Path):  # noqa: F811
    db = sqlite3.connect(index)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(TetherError, match=r"newer tether \(index schema 99"):
        open_store(index)
    assert len(Workspace.open(index).ingest(collection, embed=False, rebuild=True).added) == 4
    assert (index.parent / "index.sqlite.schema-99").exists()


# ---- a write killed midway --------------------------------------------------------------------


def test_a_read_after_a_killed_write_sees_the_last_committed_generation(
    index: Path,
    collection: Path,  # noqa: F811
    tmp_path: Path,
):
    before = [d.meta.source for d in open_store(index).documents()]
    add_big_files(collection, 30)
    # a tiny page cache makes SQLite write pages into the file before the commit
    kill_mid_write(index, collection, tmp_path / "paused", "s.db.execute('PRAGMA cache_size = 1')")
    assert (index.parent / "index.sqlite-journal").exists()  # a hot journal was left behind
    assert [d.meta.source for d in open_store(index).documents()] == before
    config = ChunkerConfig()
    assert len(sync(SqliteStore(index), collection, chunker=config).added) == 30


def test_a_killed_write_in_a_folder_that_cannot_be_written_is_one_line(
    index: Path,
    collection: Path,  # noqa: F811
    tmp_path: Path,
):
    add_big_files(collection, 30)
    kill_mid_write(index, collection, tmp_path / "paused", "s.db.execute('PRAGMA cache_size = 1')")
    with read_only(index.parent), pytest.raises(TetherError, match="interrupted and cannot be"):
        open_store(index)
    assert len(open_store(index).documents()) == 4  # undone once the folder can be written


def test_a_demo_index_of_an_older_tether_is_upgraded_not_refused(
    demo_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """After an upgrade of tether, `--demo` commands rebuild the demo index they made before
    (a user cannot be told to ingest a folder inside the package); another index is refused
    with what to run."""
    demo = tmp_path / ".tether" / "demo.sqlite"
    demo.parent.mkdir()
    with sqlite3.connect(demo) as dst, sqlite3.connect(demo_store.path) as src:
        src.backup(dst)
        dst.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["search", "--demo", "--method", "bm25", "return window"])
    assert done.exit_code == 0, done.output
    assert "ingested the demo collection" in done.output
    with sqlite3.connect(demo) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
    other = tmp_path / "other.sqlite"
    shutil.copy(demo, other)
    with sqlite3.connect(other) as db:
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    refused = CliRunner().invoke(app, ["search", "--index", str(other), "return window"])
    assert refused.exit_code == 1 and "run `tether ingest FOLDER" in refused.output
