"""Keeping an index current with its folder: file events, a burst let settle, one re-ingest.

`FolderWatch(folder, resync, ...)` watches `folder` with watchfiles (inotify, FSEvents or
ReadDirectoryChangesW through the Rust `notify` crate) and calls `resync()`, the caller's
incremental ingest of that folder (`Workspace.ingest`: unchanged files are not read again or
embedded, deleted files are removed, the whole change written in one transaction), once the
folder has been quiet for `quiet_s` seconds after a change, or every `max_wait_s` seconds
while changes never stop. A burst of saves is one re-ingest; changes made while a re-ingest
runs are kept by the watcher and make the next one.

- What counts (`WatchFilter`): a file of a type tether reads (`SUFFIXES`), an `inventory.csv`,
  or a folder (created, moved or deleted). Never a hidden entry or anything under one (the
  index's own `.tether/`, `.git/`, vim's `.name.swp`, Emacs's `.#name`), a name editors use
  for their copies (`name~`, `#name#`, `flycheck_*`, vim's probe `4913`), nor a path named in
  `ignored` (the index file and its `-wal`/`-journal` companions, the vector cache), so the
  ingest's own writes never start another.
- `run()` first puts the watcher in place, then brings the index in line with the folder (the
  first resync, `trigger="start"`: what changed while nothing watched), then waits. Each
  resync is reported to `on_resync` as a `Resync` (its report, or the one-line error that
  stopped it); problems and warnings already reported by an earlier resync are not repeated
  (`Resync.new_problems`, `new_warnings`). A failed resync leaves the index as it was (the
  store writes a change set in one transaction) and the watch goes on; a failed first one
  stops it (`run` raises it): a watch that cannot ingest at all is said at once.
- `stop` (a threading.Event) ends `run` within `TICK_MS` when idle; a resync under way is
  finished first (set it from a signal handler for a clean stop). `start()` runs it on a
  thread of its own and waits for the first resync. A watch whose folder is gone, or whose
  watcher fails (a limit on watches reached), stops: `run` raises a TetherError, and on the
  thread of `start` it is told to `on_resync` (`Resync.stopped`).
- `recorded_folder`, `recorded_chunker`, `recorded_embed`: what the index says of how it was
  built (the folder of its last sync, its chunker, whether it has vectors), so a watch goes on
  as the last `tether ingest` did.

What it cannot do: it sees events, not contents: a save that changes nothing still costs a
resync (which reads nothing: size and mtime are unchanged). A folder deleted under a name with
a dot (`v1.2`) is not seen until another change; with `follow_links`, changes inside a folder
reached through a link that leads out are not seen (they are read at the next resync). On a
network file system that sends no events it sees nothing (watchfiles' polling is not used).
A stop during a resync waits for it; killing the process instead leaves the index as the last
committed resync left it (the store's transaction), never half-written.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tether.errors import TetherError
from tether.extras import install_hint
from tether.ingest.discover import INVENTORY_FILE
from tether.ingest.parse.formats import SUFFIXES
from tether.ingest.sync import INGEST_STATE_META
from tether.protocols import StoreReader
from tether.types import ChunkerConfig, FileProblem, SyncReport

DEFAULT_QUIET_S = 1.0  # seconds without a change before a re-ingest: a burst of saves is one
MAX_WAIT_FACTOR = 10  # a folder that never settles is re-ingested every quiet_s × this
TICK_MS = 100  # how often the loop wakes while idle: how soon it sees `stop` and a settled burst
STEP_MS = 50  # watchfiles' own grouping of events
START_TIMEOUT_S = 600.0  # how long `start` waits for the first resync (a first ingest)
# names editors give their copies, probes and lock files (hidden names are ignored anyway)
EDITOR_NAMES = re.compile(r"~$|^#.*#$|^flycheck_|^4913$|___jb_\w+___$")


def require_watchfiles(command: str) -> None:
    """A TetherError with the command that installs it, when watchfiles is missing (an
    install made before tether depended on it)."""
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        hint = install_hint("").replace("[]", "")  # a dependency of tether itself, no extra
        raise TetherError(
            f"{command} needs watchfiles, which tether depends on: install tether again: {hint}"
        ) from None


class WatchFilter:
    """Which file events may start a re-ingest of `folder` (see the module docstring);
    `ignored`: paths (and everything that starts with them: `index.sqlite-wal`) never."""

    def __init__(self, folder: Path, ignored: Iterable[Path] = ()) -> None:
        self.folder = folder.resolve()
        self.ignored = tuple(str(p.resolve()) for p in ignored)

    def _ignored(self, path: str) -> bool:
        """Whether `path` is an ignored path, a companion of one (`-wal`) or inside one."""
        return any(path == p or path.startswith((p + "-", p + os.sep)) for p in self.ignored)

    def __call__(self, change: Any, path: str) -> bool:
        """Whether the event `change` (watchfiles' Change, unused) on `path` counts."""
        where = Path(path)
        try:
            parts = where.relative_to(self.folder).parts
        except ValueError:
            return False
        if not parts or any(part.startswith(".") for part in parts):
            return False
        if self._ignored(path):
            return False
        name = parts[-1]
        if EDITOR_NAMES.search(name):
            return False
        suffix = where.suffix.lower()
        if suffix in SUFFIXES or name.lower() == INVENTORY_FILE:
            return True
        if where.is_dir():
            return True
        return not suffix and not where.exists()  # a folder deleted or moved away


@dataclass(frozen=True)
class Resync:
    """One re-ingest: why (`start`: the first, bringing the index in line; `change`: file
    events, `events` of them), its report or the one-line `error` that stopped it (nothing
    written), how long it took, and the problems and warnings not reported before."""

    trigger: Literal["start", "change"]
    events: int
    seconds: float
    report: SyncReport | None = None
    error: str | None = None
    new_problems: tuple[FileProblem, ...] = ()
    new_warnings: tuple[str, ...] = ()
    stopped: bool = False  # the error ended the watch (its folder gone)


class FolderWatch:
    """Keeps an index current with `folder` (see the module docstring). `resync` ingests the
    folder and returns its report; `first` (default `resync`) does the first one (a caller's
    progress display, say); `on_resync` is told each outcome."""

    def __init__(
        self,
        folder: Path,
        resync: Callable[[], SyncReport],
        *,
        on_resync: Callable[[Resync], None],
        first: Callable[[], SyncReport] | None = None,
        quiet_s: float = DEFAULT_QUIET_S,
        max_wait_s: float | None = None,
        ignored: Iterable[Path] = (),
        stop: threading.Event | None = None,
    ) -> None:
        if quiet_s < 0:
            raise TetherError(f"the debounce must be 0 or more seconds (got {quiet_s})")
        self.folder = folder.resolve()
        self.resync = resync
        self.first = first or resync
        self.on_resync = on_resync
        self.quiet_s = quiet_s
        self.max_wait_s = (
            max_wait_s if max_wait_s is not None else max(quiet_s, 1) * MAX_WAIT_FACTOR
        )
        self.filter = WatchFilter(self.folder, ignored)
        self.stop = stop or threading.Event()
        self.ready = threading.Event()  # set once the first resync is over, however it went
        self.busy = False  # a resync is under way
        self.resyncs = 0  # the resyncs file events started
        self.watching = False  # the first resync is over and the watch goes on
        self._failed: BaseException | None = None
        self._problems: set[tuple[str, str]] = set()
        self._warnings: set[str] = set()

    def run(self) -> None:
        """Watch until `stop` is set (see the module docstring); the first resync's error
        (a TetherError) is raised, as is a KeyboardInterrupt from the default SIGINT handler."""
        import watchfiles

        if not self.folder.is_dir():
            raise TetherError(f"no such folder: {self.folder}")
        events = watchfiles.watch(
            self.folder,
            watch_filter=self.filter,
            step=STEP_MS,
            debounce=2 * TICK_MS,
            rust_timeout=TICK_MS,
            yield_on_timeout=True,
            stop_event=self.stop,
        )
        started = False
        pending, first_at, last_at = 0, 0.0, 0.0
        try:
            for batch in events:
                if not started:  # the watcher is in place: what changed before is read now
                    started = True
                    self._start()
                    continue
                if not self.folder.is_dir():
                    raise TetherError(f"{self.folder} is gone: the watch stops")
                now = time.monotonic()
                if batch:
                    first_at = first_at if pending else now
                    pending, last_at = pending + len(batch), now
                settled = now - last_at >= self.quiet_s or now - first_at >= self.max_wait_s
                if pending and settled and not self.stop.is_set():
                    self._once("change", self.resync, pending)
                    pending = 0
        except OSError as exc:  # the watcher's own: a limit on watches reached, say
            raise TetherError(f"cannot watch {self.folder}: {exc}") from None
        finally:
            self.ready.set()

    def _start(self) -> None:
        try:
            self._once("start", self.first, 0, fail=True)
            self.watching = True
        except BaseException as exc:
            self._failed = exc
            raise
        finally:
            self.ready.set()

    def _once(
        self,
        trigger: Literal["start", "change"],
        call: Callable[[], SyncReport],
        events: int,
        *,
        fail: bool = False,
    ) -> Resync:
        began = time.perf_counter()
        self.busy = True
        try:
            report = call()
        except Exception as exc:
            if fail:
                raise
            outcome = Resync(trigger, events, time.perf_counter() - began, error=_reason(exc))
        else:
            outcome = self._news(trigger, events, time.perf_counter() - began, report)
        finally:
            self.busy = False
        if trigger == "change":
            self.resyncs += 1
        self.on_resync(outcome)
        return outcome

    def _news(
        self, trigger: Literal["start", "change"], events: int, seconds: float, report: SyncReport
    ) -> Resync:
        """The Resync of `report`, with the problems and warnings no earlier one reported."""
        problems = {(p.source, p.reason) for p in report.problems}
        new_problems = tuple(
            p for p in report.problems if (p.source, p.reason) not in self._problems
        )
        new_warnings = tuple(w for w in report.warnings if w not in self._warnings)
        self._problems, self._warnings = problems, set(report.warnings)
        return Resync(trigger, events, seconds, report, None, new_problems, new_warnings)

    def start(self, timeout_s: float = START_TIMEOUT_S) -> threading.Thread:
        """Run the watch on a daemon thread of its own and return it once the first resync is
        over; its error (a TetherError) is raised here, the thread then ended."""
        thread = threading.Thread(target=self._run_quietly, name="tether-watch", daemon=True)
        thread.start()
        if not self.ready.wait(timeout_s):
            self.stop.set()
            raise TetherError(f"the first ingest of {self.folder} took over {timeout_s:g} s")
        if self._failed is not None:
            thread.join()
            raise self._failed
        return thread

    def _run_quietly(self) -> None:
        try:
            self.run()
        except Exception as exc:
            if not self.watching:  # `start` raises it
                self._failed = self._failed or exc
            else:  # the watch stopped later (its folder gone): said like a failed resync
                self.on_resync(Resync("change", 0, 0.0, error=_reason(exc), stopped=True))
        finally:
            self.ready.set()


def _reason(exc: Exception) -> str:
    """An error in one line: a TetherError's message, else its class and message."""
    return str(exc) if isinstance(exc, TetherError) else f"{type(exc).__name__}: {exc}"


CHUNKER_RECORD = re.compile(
    r"^(structure|fixed|overlap)\(max_words=(\d+)(?:, overlap_words=(\d+))?\)$"
)


def recorded_chunker(store: StoreReader) -> ChunkerConfig:
    """The chunker the index was built with (`ChunkerConfig.describe()` in its meta), so a
    re-ingest needs no --rebuild; the default for a new index or an unreadable record."""
    match = CHUNKER_RECORD.match(store.meta_value("chunker") or "")
    if match is None:
        return ChunkerConfig()
    name, words, overlap = match.groups()
    if name == "overlap":
        return ChunkerConfig("overlap", int(words), int(overlap or 0))
    return ChunkerConfig(name, int(words))  # type: ignore[arg-type]


def recorded_embed(store: StoreReader) -> bool:
    """Whether a re-ingest embeds: the index records an embedder, or is new (never synced)."""
    return store.meta_value("embedder") is not None or store.meta_value("chunker") is None


def recorded_folder(store: StoreReader) -> Path | None:
    """The collection folder of the index's last folder sync (the health report's record),
    or None when none is recorded (a new index, a website's only)."""
    try:
        record = json.loads(store.meta_value(INGEST_STATE_META) or "{}")
    except ValueError:
        return None
    folder = record.get("folder") if isinstance(record, dict) else None
    return Path(folder) if isinstance(folder, str) and folder else None
