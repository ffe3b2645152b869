"""The parse guard (`tether.ingest.guard`): a file whose parse takes too much memory or time,
or crashes its reader, is refused with one line, the other files of the same ingest are
indexed, and the child that read it never grows past the limit."""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

import pytest

from tether.ingest import executor, guard
from tether.ingest.executor import ProcessExecutor, SerialExecutor
from tether.ingest.sync import sync
from tether.ingest.tasks import MAX_PARSE_MEMORY, ParseOutcome, ParseTask, parse_task
from tether.stores.sqlite import SqliteStore

GOOD = "---\naccess: public\n---\n# Good\n\nThe good text about returns.\n"
LIMIT = 256 * 2**20  # a lower limit keeps the bombs small and quick


def _sleepy(task: ParseTask) -> ParseOutcome:
    """A parse that never ends on a file named slow.md (runs in the child: importable)."""
    if task.state.source == "slow.md":
        time.sleep(60)
    return parse_task(task)


def _aborts(task: ParseTask) -> ParseOutcome:
    """A parse whose library aborts the process on a file named crash.md."""
    if task.state.source == "crash.md":
        os.abort()
    return parse_task(task)


def _raises_memory(task: ParseTask) -> ParseOutcome:
    if task.state.source == "big.md":
        raise MemoryError
    return parse_task(task)


def _pdf_contents_bomb(refs: int) -> bytes:
    """A page whose /Contents array draws one 1 MB text stream `refs` times: PDFium
    concatenates them (3,000 refs took 2.9 GB unguarded)."""
    ops = b"BT /F1 12 Tf 72 700 Td " + b"(Hello world returns policy) Tj 0 -1 Td " * 25_000
    data = zlib.compress(ops + b"ET", 9)
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ["
        + b"4 0 R " * refs
        + b"] /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode()
        + data
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + o + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    return folder


def _ingest(tmp_path: Path, docs: Path, run: object = None) -> tuple[dict[str, str], tuple]:
    store = SqliteStore(tmp_path / "index.sqlite")
    try:
        report = sync(store, docs, executor=run)  # type: ignore[arg-type]
    finally:
        store.close()
    return {p.source: p.reason for p in report.problems}, report.added


@pytest.fixture
def watched_peak(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The most resident memory the guard saw in any child (kept as it reads them)."""
    seen = [0]
    real = guard.memory_of

    def memory_of(pid: int) -> tuple[int, int]:
        size, resident = real(pid)
        seen[0] = max(seen[0], resident)
        return size, resident

    monkeypatch.setattr(guard, "memory_of", memory_of)
    return seen


def test_a_markdown_list_bomb_is_refused_and_the_rest_is_indexed(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch, watched_peak: list[int]
) -> None:
    monkeypatch.setattr(guard, "MAX_PARSE_MEMORY", LIMIT)
    (docs / "list.md").write_bytes(b"- a\n" * 2_000_000)  # 8 MB: > 1 GB parsed unguarded
    problems, added = _ingest(tmp_path, docs)
    assert problems == {"list.md": "needs more than 256 MB of memory to read: refused"}
    assert added == ("good.md",)
    assert 0 < watched_peak[0] <= LIMIT + 64 * 2**20  # killed within one poll of the limit


def test_a_pdf_contents_array_bomb_is_refused_with_the_pool_executor(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch, watched_peak: list[int]
) -> None:
    monkeypatch.setattr(guard, "MAX_PARSE_MEMORY", LIMIT)
    (docs / "bomb.pdf").write_bytes(_pdf_contents_bomb(600))  # 600 MB drawn, a 21 KB file
    (docs / "also.md").write_text(GOOD.replace("Good", "Also"))
    run = ProcessExecutor(None, workers=2, min_bytes=0)
    try:
        problems, added = _ingest(tmp_path, docs, run)
    finally:
        run.close()
    assert problems == {"bomb.pdf": "needs more than 256 MB of memory to read: refused"}
    assert added == ("also.md", "good.md")
    assert watched_peak[0] <= LIMIT + 64 * 2**20


def test_a_parse_past_the_deadline_is_refused(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guard, "PARSE_DEADLINE_S", 3.0)  # a fresh child imports this module
    monkeypatch.setattr(executor, "parse_task", _sleepy)
    (docs / "slow.md").write_text(GOOD)
    start = time.monotonic()
    problems, added = _ingest(tmp_path, docs)
    assert problems == {"slow.md": "took longer than 3 s to read: refused"}
    assert added == ("good.md",) and time.monotonic() - start < 20


def test_a_reader_that_aborts_is_refused_and_replaced(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "parse_task", _aborts)
    (docs / "crash.md").write_text(GOOD)
    (docs / "later.md").write_text(GOOD.replace("Good", "Later"))
    problems, added = _ingest(tmp_path, docs)
    assert problems == {"crash.md": "its reader crashed (signal 6, SIGABRT): refused"}
    assert added == ("good.md", "later.md")


def test_a_memory_error_in_a_parser_is_the_memory_line(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "parse_task", _raises_memory)
    (docs / "big.md").write_text(GOOD)
    problems, added = _ingest(tmp_path, docs)
    assert problems == {"big.md": "needs more than 768 MB of memory to read: refused"}
    assert added == ("good.md",)


def test_parse_task_alone_turns_a_memory_error_into_the_memory_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tether.ingest.tasks as tasks

    def no_memory(*_: object, **__: object) -> None:
        raise MemoryError

    monkeypatch.setattr(tasks, "parse_bytes", no_memory)
    task = ParseTask(_state("x.md"), b"# x\n", "markdown", None, "public", _chunker(), True)
    assert parse_task(task).problem == "needs more than 768 MB of memory to read: refused"
    assert MAX_PARSE_MEMORY == 768 * 2**20


def test_children_are_reused_and_a_lambda_runs_in_this_process(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(tmp_path, docs)
    assert guard._idle, "a child is kept for the next ingest"
    kept = {c.process.pid for c in guard._idle}
    (docs / "two.md").write_text(GOOD.replace("Good", "Two"))
    problems, added = _ingest(tmp_path, docs)
    assert problems == {} and added == ("two.md",)
    assert {c.process.pid for c in guard._idle} & kept  # the same child read it
    # a parse a child cannot import by name (a test's lambda) runs here, and sees its patches
    seen: list[str] = []
    monkeypatch.setattr(
        executor, "parse_task", lambda t: seen.append(t.state.source) or parse_task(t)
    )
    (docs / "three.md").write_text(GOOD.replace("Good", "Three"))
    problems, added = _ingest(tmp_path, docs)
    assert problems == {} and added == ("three.md",) and seen == ["three.md"]
    assert SerialExecutor().parse([]) == []


def _state(source: str):  # type: ignore[no-untyped-def]
    from tether.types import FileState

    return FileState(source, "f", 4, 0, "", "")


def _chunker():  # type: ignore[no-untyped-def]
    from tether.types import ChunkerConfig

    return ChunkerConfig()
