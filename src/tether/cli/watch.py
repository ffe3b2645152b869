"""`tether watch FOLDER`: keep the index current with a folder, one line per re-ingest; and
`start_watch`, the same watch beside `tether serve --watch`.

The watching is `tether.ingest.watch.FolderWatch`'s; each re-ingest is the Workspace's
incremental `ingest` of the folder (what `tether ingest FOLDER` does), with the chunker the
index was built with and embeddings when it has them. Here: parsing, opening the index (in
the thread that ingests: a SQLite connection serves one thread) and printing.

Ctrl-C (or SIGTERM) stops the watch, exit 0: a re-ingest under way is finished and written
first (a second Ctrl-C stops at once, exit 130, and that re-ingest writes nothing).

What it cannot do: one folder per watch; the options of `tether ingest` other than
--follow-links are not offered (the index's own chunker and access default are kept; change
them with `tether ingest FOLDER --rebuild`, then watch).
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.cli.app import IndexOpt, StoreOpt, err, out, shown, user_errors, verbosity

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.ingest.watch import FolderWatch, Resync
    from tether.types import SyncReport

NAMED = 3  # files named in a re-ingest's line; the rest counted
JOIN_S = 10.0  # how long `tether serve` waits for a re-ingest under way once it has stopped


class FolderIngest:
    """The watch's ingest of `folder` into the index at `index` (or the server `store`): a
    Workspace whose index is opened for each ingest, in the calling thread, and closed after
    (its models stay loaded)."""

    def __init__(
        self, folder: Path, index: Path | None, store: str | None, *, follow_links: bool = False
    ) -> None:
        from tether.cli.ingest import writable_index
        from tether.places import DEFAULT_INDEX

        self.folder = folder
        self.follow_links = follow_links
        self.ws: Workspace = writable_index(index or DEFAULT_INDEX, store)  # a store wins

    def ignored(self) -> list[Path]:
        """What the ingest itself writes (the index file, the vector cache): never a change."""
        paths = [self.ws.location] if isinstance(self.ws.location, Path) else []
        cache = self.ws.settings.vector_cache
        return paths + ([Path(cache)] if cache is not None else [])

    def __call__(self, progress: bool = False) -> SyncReport:
        from tether.ingest.watch import recorded_chunker, recorded_embed

        try:
            store = self.ws.store
            chunker, embed = recorded_chunker(store), recorded_embed(store)
            if not progress:
                return self.ws.ingest(
                    self.folder, chunker=chunker, embed=embed, follow_links=self.follow_links
                )
            from tether.cli.ingest import ingest_progress

            with ingest_progress() as step:
                return self.ws.ingest(
                    self.folder,
                    chunker=chunker,
                    embed=embed,
                    progress=step,
                    follow_links=self.follow_links,
                )
        finally:
            self.ws.close()


def change_line(resync: Resync) -> str:
    """One re-ingest in one line: why, what it changed, how long it took."""
    report = resync.report
    if resync.trigger == "start":
        why = "synced"
    else:
        why = f"re-ingested after {resync.events} file event{'s' if resync.events != 1 else ''}"
    if report is None:
        return f"{why}: failed in {resync.seconds:.2f} s"
    parts = []
    for what, files in (
        ("added", report.added),
        ("changed", report.updated),
        ("removed", report.removed),
    ):
        named = ", ".join(files[:NAMED]) + (
            f" and {len(files) - NAMED} more" if len(files) > NAMED else ""
        )
        parts.append(f"{len(files)} {what}" + (f" ({named})" if files else ""))
    if resync.trigger == "start":
        parts.append(f"{len(report.unchanged)} unchanged")
    if report.problems:
        parts.append(f"{len(report.problems)} problem{'s' if len(report.problems) != 1 else ''}")
    return f"{why} in {resync.seconds:.2f} s: " + ", ".join(parts)


def printer(where: str, *, as_json: bool = False, prefix: str = "", console: Any = None) -> Any:
    """The `on_resync` of a watch: its line (on `console`, stdout by default; `as_json`: its
    IngestReport as one line of JSON), then its new problems and warnings, or its error (on
    stderr); each line starts with `prefix`."""
    console = out if console is None else console

    def said(resync: Resync) -> None:
        if resync.error is not None:
            then = "" if resync.stopped else " (nothing was written; still watching)"
            err.print(
                f"{prefix}[red]error:[/red] {shown(resync.error, one_line=True)}{then}",
                highlight=False,
                soft_wrap=True,
            )
            return
        assert resync.report is not None
        if as_json:
            from tether.schemas import IngestReport

            typer.echo(IngestReport.from_report(resync.report, where).model_dump_json())
        elif not verbosity().quiet:
            console.print(prefix + shown(change_line(resync), one_line=True), highlight=False)
        for problem in resync.new_problems:
            err.print(
                f"{prefix}[yellow]problem[/yellow]  {shown(problem.source, one_line=True)}:"
                f" {shown(problem.reason, one_line=True)}",
                highlight=False,
            )
        for warning in resync.new_warnings:
            err.print(
                f"{prefix}[yellow]warning[/yellow]  {shown(warning, one_line=True)}",
                highlight=False,
            )

    return said


def stop_on_signals(watch: FolderWatch) -> None:
    """Ctrl-C and SIGTERM stop `watch` once its re-ingest under way is written; a second one
    stops at once (KeyboardInterrupt)."""

    def handler(signum: int, frame: Any) -> None:
        if watch.stop.is_set():
            raise KeyboardInterrupt
        watch.stop.set()
        if watch.busy:  # os.write: a signal handler may interrupt a print
            os.write(2, b"stopping once this re-ingest is written (Ctrl-C again stops now)\n")

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def watch(
    folder: Annotated[
        Path,
        typer.Argument(help="The collection folder to keep the index current with."),
    ] = Path("."),
    index: IndexOpt = None,
    store: StoreOpt = None,
    debounce: Annotated[
        float,
        typer.Option(
            help="Seconds the folder must stay quiet after a change before it is re-ingested"
            " (a burst of saves is one re-ingest).",
            min=0,
            max=3600,
        ),
    ] = 1.0,
    follow_links: Annotated[
        bool,
        typer.Option(
            "--follow-links",
            help="Follow links that lead out of the folder, as `tether ingest --follow-links`.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each re-ingest's report as one line of JSON.")
    ] = False,
) -> None:
    """Keep the index current with a folder: re-ingest what changes as it is saved.

    It first brings the index in line with the folder, then waits for file
    events: each burst of changes is one incremental re-ingest (unchanged files
    are not read again, deleted ones are removed), one line each. Hidden files,
    the index itself and editors' temporary files are ignored. Ctrl-C stops it
    (exit 0)."""
    from tether.ingest.watch import FolderWatch, require_watchfiles
    from tether.places import DEFAULT_INDEX

    with user_errors():
        require_watchfiles("tether watch")
        if not folder.is_dir():
            from tether.errors import TetherError

            raise TetherError(f"no such folder: {folder}")
        ingest = FolderIngest(
            folder, index or folder / DEFAULT_INDEX, store, follow_links=follow_links
        )
        where = ingest.ws.store.location
        ingest.ws.close()
        run = FolderWatch(
            folder,
            ingest,
            on_resync=printer(where, as_json=as_json),
            first=lambda: ingest(progress=not as_json),
            quiet_s=debounce,
            ignored=ingest.ignored(),
        )
        stop_on_signals(run)
        if not as_json:
            err.print(f"watching {shown(folder)} → {shown(where)} (Ctrl-C stops)", highlight=False)
        run.run()
    err.print(f"stopped watching ({run.resyncs} re-ingests)", highlight=False)


def start_watch(
    folder: Path, index: Path | None, store: str | None
) -> tuple[Any, threading.Thread]:
    """`tether serve --watch`: the watch of `folder` into the server's index (file `index` or
    `store`), on a thread of its own, its lines on stderr; returned (with its thread) once
    the first sync is over. A TetherError when it cannot start."""
    from tether.ingest.watch import FolderWatch, require_watchfiles

    require_watchfiles("tether serve --watch")
    ingest = FolderIngest(folder, index, store)
    where = ingest.ws.store.location
    ingest.ws.close()
    said = printer(where, prefix="watch: ", console=err)
    run = FolderWatch(folder, ingest, on_resync=said, ignored=ingest.ignored())
    return run, run.start()


def watched_folder(ws: Workspace) -> Path:
    """The folder `tether serve --watch` keeps `ws`'s index current with: the one it was last
    ingested from (a TetherError when none is recorded or it is gone)."""
    from tether.errors import TetherError
    from tether.ingest.watch import recorded_folder

    folder = recorded_folder(ws.store)
    if folder is None:
        raise TetherError(
            f"--watch: {ws.store.location} records no folder it was ingested from: run"
            " `tether ingest FOLDER` into it first"
        )
    if not folder.is_dir():
        raise TetherError(f"--watch: {folder}, the folder the index was ingested from, is gone")
    return folder


def stop_watch(run: FolderWatch, thread: threading.Thread) -> None:
    """Stop `serve --watch`'s watch: a re-ingest under way gets `JOIN_S` seconds to be
    written (past that it ends with the process, writing nothing)."""
    run.stop.set()
    thread.join(JOIN_S)
