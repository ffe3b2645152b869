"""Parsing in watched child processes: a file that takes too much memory or time, or crashes
its parser, is refused on its own and the ingest goes on.

A hostile file a few kilobytes long can make a parser take gigabytes (a PDF whose page draws
one stream thousands of times, forms drawing each other, a zip that lies about its size,
millions of Markdown list items) or run for minutes, and some libraries (PDFium) abort the
whole process when an allocation fails. So `parse(tasks, workers)` runs each file's parse in
a child process and watches it:

- Children come from a `forkserver` context whose server has the parse modules preloaded
  (`PRELOAD`): a child starts in about 10-40 ms (the server itself, once per process, in
  about 0.8 s), and is reused for the next file. Not `fork`: the parent may hold model
  threads. A child whose resident memory after a file is over `RECYCLE_MEMORY` is replaced.
- Memory: the parent reads each busy child's resident size (/proc/PID/statm) every
  `POLL_S` and kills it past `tasks.MAX_PARSE_MEMORY` (768 MiB); the child also sets its
  own address-space limit (RLIMIT_AS) to its size at start plus that much, so memory taken
  faster than the watch can see fails there (a `MemoryError`, or the library's abort).
  Either way the file's problem is "needs more than 768 MB of memory to read: refused".
- Time: a child still reading a file after `PARSE_DEADLINE_S` is killed ("took longer than
  120 s to read: refused").
- A child that dies otherwise (a signal, an exit) is "its reader crashed (signal 6,
  SIGABRT): refused"; it is replaced and the other files go on.

Up to `workers` children parse at once. The bytes go to the child and the outcome comes back
pickled (fine for files up to the 20 MB a file may have). A task with a token window (a
bound method of the loaded embedder, which cannot travel) is only parsed in the child; its
chunking happens in this process (`tasks.finish_task`).

`ISOLATE = False` parses in this process, unguarded (for a test that patches a parser: a
child cannot see the patch); so does a `work` function a child cannot import by name (a
lambda, a closure). Where there is no forkserver (Windows) parsing stays in this process.

What it cannot do: the guard is local only: `RayExecutor` parses in its actors unguarded;
without /proc (macOS) only the address-space limit and the deadline hold; the memory counted
is the child's resident set (pages it shares with the fork server included), not the
parent's copy of the file; a child blocked in C code that holds the GIL is still killed from
outside, but its own parent watch (which ends it when this process is gone) cannot run then.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from multiprocessing.context import ForkServerProcess, set_spawning_popen
from typing import Any

from tether.errors import TetherError
from tether.ingest.tasks import (
    MAX_PARSE_MEMORY,
    ParseOutcome,
    ParseTask,
    finish_task,
    memory_problem,
    parse_task,
    read_task,
)
from tether.types import Document

PARSE_DEADLINE_S = 120.0  # one file's parse; past it the child is killed
POLL_S = 0.025  # how often the watch reads a busy child's memory
RECYCLE_MEMORY = 256 * 2**20  # a child holding more than this after a file is replaced
ISOLATE = True  # False: parse in this process, unguarded (tests that patch a parser)
PRELOAD = (
    "tether.ingest.guard",
    "charset_normalizer",
    "lxml.etree",
    "docx",
    "markdown_it",
    "pypdf",
    "pypdfium2",
    "docutils.core",
    "docutils.nodes",
)
"""Imported once in the fork server, so a child starts with them (the parsers import them
on first use)."""

Work = Callable[[ParseTask], Any]
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def memory_of(pid: int) -> tuple[int, int]:
    """(virtual size, resident size) of process `pid` in bytes; (0, 0) when unknown."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            size, resident = f.read().split()[:2]
        return int(size) * _PAGE, int(resident) * _PAGE
    except (OSError, ValueError):
        return 0, 0


def time_problem(deadline: float) -> str:
    return f"took longer than {deadline:g} s to read: refused"


def crash_problem(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = f", {signal.Signals(-exitcode).name}"
        except ValueError:
            name = ""
        return f"its reader crashed (signal {-exitcode}{name}): refused"
    return f"its reader ended unexpectedly (exit code {exitcode}): refused"


# ---- the child ---------------------------------------------------------------------------


def _child_main(conn: multiprocessing.connection.Connection, limit: int) -> None:
    """A parsing child: read (work, task) from `conn`, send back the outcome, until the
    parent closes the pipe or is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _follow_parent()
    size = memory_of(os.getpid())[0]
    if size:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (size + limit, size + limit))
        except (ImportError, ValueError, OSError):
            pass  # the parent's watch still holds
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        work, task = message
        try:
            result = work(task)
        except MemoryError:
            result = ParseOutcome(task.state.source, problem=memory_problem(limit))
        except Exception as exc:  # a work function's surprise: this file only
            from tether.ingest.tasks import problem_of

            result = ParseOutcome(task.state.source, problem=problem_of(exc))
        try:
            conn.send(result)
        except MemoryError:
            result = None
            conn.send(ParseOutcome(task.state.source, problem=memory_problem(limit)))


def _follow_parent() -> None:
    """End this child as soon as the process that started it is gone."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="tether-parent-watch", daemon=True).start()


# ---- the parent --------------------------------------------------------------------------


@dataclass
class _Child:
    process: Any  # multiprocessing's Process of the forkserver context
    conn: multiprocessing.connection.Connection
    started: float = 0.0  # when its current file was sent
    index: int = -1  # the position of its current file
    peak: int = 0  # the most memory seen while reading it (resident, or mapped since sent)
    size: int = 0  # its mapped size when the file was sent
    limit: int = MAX_PARSE_MEMORY  # the memory limit it was started with

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class _Popen(popen_forkserver.Popen):
    """The fork server's way to start a child, without the parent's `__main__`: a child
    needs only the parse modules, and re-running the parent's script there (a console
    script's imports, or a script with no `if __name__ == "__main__"`, which would start
    children in its turn) is slow or wrong. The body is the standard library's (3.11 to
    3.13), less those two keys."""

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_path", None)
        prep_data.pop("init_main_from_name", None)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)  # type: ignore[attr-defined]
        _parent_w = os.dup(w)  # the child's sentinel of this process
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))  # type: ignore[attr-defined]
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        if sys.version_info >= (3, 14):  # another fork server protocol: the standard way
            return ForkServerProcess._Popen(process_obj)
        return _Popen(process_obj)


_lock = threading.Lock()
_idle: list[_Child] = []
_context: Any = None


def _start() -> _Child:
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(list(PRELOAD))
            _context = context
    ours, theirs = _context.Pipe()
    limit = MAX_PARSE_MEMORY
    process = _Process(target=_child_main, args=(theirs, limit), name="tether-parse", daemon=True)
    try:
        process.start()
    except Exception as exc:
        raise TetherError(f"cannot start a process to parse files: {exc}") from exc
    theirs.close()
    return _Child(process, ours, limit=limit)


def _take() -> _Child:
    with _lock:
        while _idle:
            child = _idle.pop()
            if child.process.is_alive() and child.limit == MAX_PARSE_MEMORY:
                return child
            child.stop()
    return _start()


def _give(child: _Child) -> None:
    if memory_of(child.process.pid)[1] > RECYCLE_MEMORY or not child.process.is_alive():
        child.stop()
        return
    with _lock:
        _idle.append(child)


@atexit.register
def close() -> None:
    """Stop the idle children (busy ones are stopped by the call that owns them)."""
    with _lock:
        children, _idle[:] = list(_idle), []
    for child in children:
        with contextlib.suppress(OSError):
            child.conn.send(None)
        child.stop()


def _importable(work: Work) -> bool:
    """Whether a child can import `work` by its name (pickle sends functions by name)."""
    module = sys.modules.get(getattr(work, "__module__", None) or "")
    qualname = getattr(work, "__qualname__", "")
    return module is not None and "<" not in qualname and getattr(module, qualname, None) is work


def guarded() -> bool:
    """Whether parsing runs in watched children here (`ISOLATE`, and a forkserver)."""
    return ISOLATE and "forkserver" in multiprocessing.get_all_start_methods()


def parse(tasks: list[ParseTask], workers: int = 1, work: Work = parse_task) -> list[ParseOutcome]:
    """The outcome of each task, in order, each parsed by `work` in a watched child (up to
    `workers` at once); see the module docstring."""
    if not tasks:
        return []
    if not guarded() or not _importable(work):
        return [_in_process(work, t) for t in tasks]
    outcomes: list[ParseOutcome | None] = [None] * len(tasks)
    todo = list(range(len(tasks)))[::-1]
    busy: list[_Child] = []
    try:
        while todo or busy:
            while todo and len(busy) < max(1, workers):
                busy.append(_send(_take(), todo.pop(), tasks, work))
            _watch(busy, tasks, outcomes)
    finally:
        for child in busy:  # interrupted: what they were doing is lost
            child.stop()
    return [o for o in outcomes if o is not None]


def _in_process(work: Work, task: ParseTask) -> ParseOutcome:
    try:
        return _finished(task, work(task))
    except MemoryError:
        return ParseOutcome(task.state.source, problem=memory_problem(MAX_PARSE_MEMORY))


def _send(child: _Child, index: int, tasks: list[ParseTask], work: Work) -> _Child:
    task = tasks[index]
    if task.window is not None:  # the window's counter cannot travel: parse only, chunk here
        work, task = (read_task if work is parse_task else work), replace(task, window=None)
    child.conn.send((work, task))
    child.started, child.index, child.peak = time.monotonic(), index, 0
    child.size = memory_of(child.process.pid)[0]
    return child


def _finished(task: ParseTask, result: Any) -> ParseOutcome:
    """The outcome of `task` from what its work returned (a document is chunked here)."""
    if isinstance(result, Document):
        return finish_task(task, result)
    return result


def _watch(busy: list[_Child], tasks: list[ParseTask], outcomes: list[ParseOutcome | None]) -> None:
    """Wait up to `POLL_S` for the busy children; collect what they finished, and refuse the
    files of those that died, took too much memory or ran past the deadline."""
    waits: list[Any] = [c.conn for c in busy] + [c.process.sentinel for c in busy]
    ready = set(multiprocessing.connection.wait(waits, timeout=POLL_S))
    now = time.monotonic()
    for child in list(busy):
        task = tasks[child.index]
        problem = None
        if child.conn in ready:
            try:
                outcomes[child.index] = _finished(task, child.conn.recv())
            except (EOFError, OSError):
                child.process.join(1)
                problem = _death(child)
            else:
                busy.remove(child)
                _give(child)
                continue
        elif child.process.sentinel in ready:
            child.process.join(1)
            problem = _death(child)
        else:
            size, resident = memory_of(child.process.pid)
            child.peak = max(child.peak, resident, size - child.size)
            if resident > MAX_PARSE_MEMORY:
                problem = memory_problem(MAX_PARSE_MEMORY)
            elif now - child.started > PARSE_DEADLINE_S:
                problem = time_problem(PARSE_DEADLINE_S)
            if problem is None:
                continue
        busy.remove(child)
        child.stop()
        outcomes[child.index] = ParseOutcome(task.state.source, problem=problem)


def _death(child: _Child) -> str:
    """The problem of a child that died reading a file: memory when it was near the limit
    (a library that aborts when an allocation fails), else a crash."""
    if child.peak > MAX_PARSE_MEMORY // 2 and child.process.exitcode in (-6, -9, -11, 1):
        return memory_problem(MAX_PARSE_MEMORY)
    return crash_problem(child.process.exitcode)
