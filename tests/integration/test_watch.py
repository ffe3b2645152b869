"""`tether watch` and `tether serve --watch` with a real watcher (watchfiles, the OS's file
events) on a temporary folder: a saved file is found by a search within a bounded time, an
edit replaces its text, a deletion removes it; a burst of saves is one re-ingest; editor
files and writes into the index's own `.tether/` start none; a file that cannot be read is
one problem, said once, and the watch goes on; Ctrl-C stops `tether watch` with exit 0; a
server started with --watch finds a saved file on /v1/search without a restart.

The indexes are lexical (ingested with embed=False, which the watch keeps), so no model
loads and the whole file runs in about 20 s."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("watchfiles")

from tether.app import SearchOptions, Workspace
from tether.cli.main import app
from tether.cli.watch import FolderIngest, stop_watch
from tether.config import VARIABLES
from tether.errors import TetherError
from tether.ingest.watch import (
    FolderWatch,
    Resync,
    WatchFilter,
    recorded_chunker,
    recorded_folder,
    require_watchfiles,
)
from tether.types import ChunkerConfig

SRC = Path(__file__).resolve().parents[2] / "src"
QUIET_S = 0.3  # the tests' debounce
BOUND_S = 10.0  # the goal: a saved change is searchable within 10 s


def _doc(title: str, text: str) -> str:
    return f"---\naccess: public\n---\n# {title}\n\n{text}\n"


def _found(index: Path, words: str) -> bool:
    """Whether a lexical search of the index finds a passage holding `words`."""
    ws = Workspace.open(index)
    try:
        hits = ws.search(words, SearchOptions(method="bm25", k=10))
        return any(words in hit.chunk.text for hit in hits)
    finally:
        ws.close()


def _wait(condition: Callable[[], bool], bound: float = BOUND_S) -> float:
    """Seconds until `condition` holds (fails past `bound`)."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > bound:
            pytest.fail(f"not within {bound:g} s")
        time.sleep(0.05)
    return time.monotonic() - began


def _collection(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with one public file, ingested without vectors; (folder, index)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(_doc("Parking", "Parking is free on Sundays."))
    index = folder / ".tether" / "index.sqlite"
    ws = Workspace.open(index, create=True)
    try:
        assert ws.ingest(folder, embed=False).committed
    finally:
        ws.close()
    return folder, index


@contextmanager
def _watching(
    tmp_path: Path, quiet_s: float = QUIET_S
) -> Iterator[tuple[Path, Path, FolderWatch, list[Resync]]]:
    """A collection under a running watch (its first sync over); the outcomes it reported."""
    folder, index = _collection(tmp_path)
    outcomes: list[Resync] = []
    ingest = FolderIngest(folder, index, None)
    run = FolderWatch(
        folder, ingest, on_resync=outcomes.append, quiet_s=quiet_s, ignored=ingest.ignored()
    )
    thread = run.start()
    assert [o.trigger for o in outcomes] == ["start"] and outcomes[0].error is None
    yield folder, index, run, outcomes
    stop_watch(run, thread)
    assert not thread.is_alive()


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Path, FolderWatch, list[Resync]]]:
    with _watching(tmp_path) as watch:
        yield watch


def test_a_save_an_edit_and_a_deletion_are_searched_within_the_bound(watched) -> None:
    folder, index, run, outcomes = watched
    (folder / "birds.md").write_text(_doc("Birds", "Penguins nest in October."))
    added_in = _wait(lambda: _found(index, "Penguins nest in October"))
    assert outcomes[-1].report is not None and outcomes[-1].report.added == ("birds.md",)

    (folder / "birds.md").write_text(_doc("Birds", "Puffins nest in May."))
    _wait(lambda: _found(index, "Puffins nest in May"))
    assert not _found(index, "Penguins nest in October")
    assert outcomes[-1].report is not None and outcomes[-1].report.updated == ("birds.md",)

    (folder / "birds.md").unlink()
    gone_in = _wait(lambda: not _found(index, "Puffins nest in May"))
    assert outcomes[-1].report is not None and outcomes[-1].report.removed == ("birds.md",)
    assert _found(index, "Parking is free on Sundays")  # the others stay
    assert run.resyncs == 3, [o.report for o in outcomes]
    assert added_in < BOUND_S and gone_in < BOUND_S


def test_a_burst_of_five_saves_is_one_reingest(tmp_path: Path) -> None:
    # 0.2 s apart: each save is an event batch of its own (watchfiles groups 0.2 s at most),
    # so only the debounce (1 s here) makes them one re-ingest
    with _watching(tmp_path, quiet_s=1.0) as (folder, index, run, outcomes):
        for n in range(5):
            (folder / f"tide-{n}.md").write_text(_doc("Tides", f"High tide is at {n + 1}."))
            time.sleep(0.2)
        _wait(lambda: run.resyncs >= 1)
        time.sleep(1.5)  # a second re-ingest would have started by now
        assert run.resyncs == 1, [o.report for o in outcomes]
        last = outcomes[-1]
        assert last.events >= 5 and last.report is not None and len(last.report.added) == 5
        assert _found(index, "High tide is at 5")


def test_editor_files_and_the_index_folder_start_no_reingest(watched) -> None:
    folder, _index, run, outcomes = watched
    for name in (".parking.md.swp", "parking.md~", "#parking.md#", ".#parking.md", "4913",
                 "parking.md.tmp", "notes.log"):  # fmt: skip
        (folder / name).write_text("scratch")
    (folder / ".tether" / "stray.md").write_text(_doc("Stray", "Never indexed."))
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD.md").write_text("ref")
    time.sleep(QUIET_S * 5)
    assert run.resyncs == 0, [o.report for o in outcomes]
    (folder / "alive.md").write_text(_doc("Alive", "The watch still runs."))  # it is listening
    _wait(lambda: run.resyncs == 1)
    assert outcomes[-1].report is not None and outcomes[-1].report.added == ("alive.md",)


def test_a_failing_file_is_one_problem_said_once_and_the_watch_goes_on(watched) -> None:
    folder, index, run, outcomes = watched
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 not a pdf at all")
    _wait(lambda: run.resyncs == 1)
    first = outcomes[-1]
    assert first.error is None and [p.source for p in first.new_problems] == ["broken.pdf"]
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 still not a pdf")  # fails the same way
    (folder / "fine.md").write_text(_doc("Fine", "Lockers cost two euros."))
    _wait(lambda: _found(index, "Lockers cost two euros"))
    assert [p.source for p in outcomes[-1].report.problems] == ["broken.pdf"]  # type: ignore[union-attr]
    assert outcomes[-1].new_problems == ()  # said once


def test_a_watch_whose_folder_is_gone_stops_and_says_so(watched) -> None:
    import shutil

    folder, _index, _run, outcomes = watched
    shutil.rmtree(folder)
    _wait(lambda: bool(outcomes[-1].stopped))
    assert outcomes[-1].error is not None and "is gone" in outcomes[-1].error


def test_the_first_sync_failing_stops_the_watch(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()

    def fails() -> object:
        raise TetherError("another ingest is writing this index")

    run = FolderWatch(folder, fails, on_resync=lambda r: None)  # type: ignore[arg-type]
    with pytest.raises(TetherError, match="another ingest"):
        run.start(timeout_s=20)


def test_the_filter_and_the_recorded_build(tmp_path: Path) -> None:
    folder, index = _collection(tmp_path)
    keep = WatchFilter(folder, ignored=[tmp_path / "idx.sqlite"])
    assert keep(None, str(folder / "a" / "b.md"))
    assert keep(None, str(folder / "inventory.csv"))
    assert keep(None, str(folder / "gone-folder"))  # deleted: may have held documents
    assert not keep(None, str(folder / "a" / ".hidden" / "b.md"))
    assert not keep(None, str(folder / "flycheck_b.md"))
    assert not keep(None, str(tmp_path / "idx.sqlite-wal"))  # outside, and ignored
    ws = Workspace.open(index)
    try:
        assert recorded_folder(ws.store) == folder.resolve()
        assert recorded_chunker(ws.store) == ChunkerConfig()
    finally:
        ws.close()
    for config in (ChunkerConfig("fixed", 90), ChunkerConfig("overlap", 120, 30)):
        other = Workspace.open(tmp_path / f"{config.name}.sqlite", create=True)
        try:
            other.ingest(folder, embed=False, chunker=config)
            assert recorded_chunker(other.store) == config
        finally:
            other.close()


def test_a_missing_watchfiles_is_one_line_with_the_install_command(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    with pytest.raises(TetherError, match=r"tether watch needs watchfiles.*pip install"):
        require_watchfiles("tether watch")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), TETHER_PROVIDER="extractive",
               XDG_CONFIG_HOME=str(home / "config"))  # fmt: skip
    return env


def test_tether_watch_prints_a_line_per_reingest_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    folder, index = _collection(tmp_path)
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as o, err.open("w") as e:
        process = subprocess.Popen(
            [sys.executable, "-m", "tether", "watch", str(folder), "--debounce", str(QUIET_S)],
            env=_env(tmp_path), cwd=tmp_path, stdout=o, stderr=e,
        )  # fmt: skip
        try:
            _wait(lambda: "synced" in out.read_text(), bound=60)
            (folder / "hours.md").write_text(_doc("Hours", "The desk opens at nine."))
            _wait(lambda: "re-ingested" in out.read_text())
            process.send_signal(signal.SIGINT)
            assert process.wait(30) == 0, err.read_text()
        finally:
            if process.poll() is None:
                process.kill()
    lines = out.read_text().splitlines()
    assert lines[0].startswith("synced in ") and "1 unchanged" in lines[0]
    assert lines[1].startswith("re-ingested after ") and "1 added (hours.md)" in lines[1]
    assert "stopped watching (1 re-ingests)" in err.read_text()
    assert _found(index, "The desk opens at nine")


def test_serve_without_a_recorded_folder_cannot_watch(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    index = tmp_path / "empty.sqlite"
    Workspace.open(index, create=True).store.generation()  # an index no folder was ingested into
    result = CliRunner().invoke(
        app, ["serve", "--index", str(index), "--watch", "--port", str(_free_port())]
    )
    assert result.exit_code == 1
    assert "records no folder it was ingested from" in result.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_watch_finds_a_saved_file_without_a_restart(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    import httpx

    folder, index = _collection(tmp_path)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    err = tmp_path / "err.txt"
    with err.open("w") as e:
        process = subprocess.Popen(
            [sys.executable, "-m", "tether", "serve", "--index", str(index), "--watch",
             "--port", str(port), "--allow-anonymous", "--rate", "0", "--no-warm"],
            env=_env(tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=e,
        )  # fmt: skip
        try:

            def up() -> bool:
                assert process.poll() is None, err.read_text()
                try:
                    return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
                except httpx.HTTPError:
                    return False

            _wait(up, bound=90)

            def finds(words: str) -> bool:
                query = {"query": words, "method": "bm25"}
                hits = httpx.post(f"{base}/v1/search", json=query, timeout=10).json()
                return any(words in hit["text"] for hit in hits)

            assert finds("Parking is free on Sundays")
            (folder / "ferry.md").write_text(_doc("Ferry", "The ferry leaves at dawn."))
            _wait(lambda: finds("The ferry leaves at dawn"))
            process.terminate()
            process.wait(60)
        finally:
            if process.poll() is None:
                process.kill()
    said = err.read_text()
    assert "watch: synced" in said and "watch: re-ingested after" in said, said
