"""`tether ingest`: read a collection folder into an index, with a progress bar and a report
(a website: `ingest_web`; an export: `ingest_export`); also the demo collection's ingest that
`demo`, `--demo` and `eval` use.

What it cannot do: it parses and chunks nothing itself (the Workspace's `ingest` does), and
the embedder loads only when embeddings are asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.catalog import EXECUTORS, executor_names, one_of
from tether.cli.app import (
    IndexOpt,
    JsonOpt,
    StoreOpt,
    err,
    out,
    print_json,
    shown,
    user_errors,
    verbosity,
)
from tether.cli.ingest_web import SITE_PANEL
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import ChunkerConfig, Progress, SyncReport

PHASE_LABELS = {
    "fetch": "Fetching pages",  # a website's crawl (`tether ingest URL`)
    "read": "Reading files",
    "embed": "Embedding chunks",
    "embed sentences": "Embedding sentences",
    "write": "Writing index",
    "calibrate": "Calibrating",  # the fusion weight and the gate's floors, on the index itself
}


@contextmanager
def ingest_progress() -> Iterator[Progress]:
    """An ingest's progress callback: a bar per phase on a terminal, a log line per phase
    (and every few seconds) elsewhere; nothing shows until the first phase starts."""
    from tether.cli.app import phase_log, progress

    log = phase_log(PHASE_LABELS)
    with progress("{task.description:<17}", rate=True) as bar:
        tasks: dict[str, Any] = {}

        def step(phase: str, done: int, total: int) -> None:
            if log is not None:
                log.step(phase, done, total)
            if phase == "embed:tokens":  # tokens embedded so far: show the rate
                task = bar.tasks[tasks["embed"]] if "embed" in tasks else None
                if task is not None and task.elapsed:
                    bar.update(task.id, rate=f"{done / task.elapsed:,.0f} tokens/s")
                return
            if phase not in tasks:
                tasks[phase] = bar.add_task(PHASE_LABELS.get(phase, phase), total=total, rate="")
            bar.update(tasks[phase], completed=done, total=total)

        yield step


def run_sync(
    ws: Workspace,
    folder: Path,
    chunker: ChunkerConfig,
    rebuild: bool,
    strict: bool,
    embed: bool,
    follow_links: bool = False,
    default_access: str | None = None,
) -> SyncReport:
    """Bring the Workspace's index in line with `folder`, showing each phase's progress."""
    with ingest_progress() as step:
        return ws.ingest(
            folder, chunker=chunker, embed=embed, rebuild=rebuild, strict=strict, progress=step,
            follow_links=follow_links, default_access=default_access,
        )  # fmt: skip


def print_problems(report: SyncReport) -> None:
    """The files that could not be read, then the warnings (files indexed on the safe side,
    inventory rows that apply to no file), on stderr."""
    for problem in report.problems:
        err.print(
            f"[yellow]problem[/yellow]  {shown(problem.source, one_line=True)}:"
            f" {shown(problem.reason, one_line=True)}",
            highlight=False,
        )
    for warning in report.warnings:
        err.print(f"[yellow]warning[/yellow]  {shown(warning, one_line=True)}", highlight=False)


def print_unsupported(report: SyncReport) -> None:
    """One line for the files left out because tether does not read their type."""
    if not report.unsupported:
        return
    from tether.ingest.discover import SUFFIXES

    total = sum(count for _, count in report.unsupported)
    kinds = ", ".join(
        f"{shown(suffix, one_line=True)} {count}" for suffix, count in report.unsupported
    )
    noun = "file" if total == 1 else "files"
    out.print(
        f"  not read: {total} {noun} of a type tether does not read ({kinds});"
        f" it reads {' '.join(SUFFIXES)}",
        highlight=False,
    )


def print_report(report: SyncReport, index: Path | str) -> None:
    from rich.table import Table

    table = Table(title=f"ingest → {shown(index, one_line=True)}", show_header=True)
    columns = (
        "added", "updated", "removed", "unchanged", "problems", "chunks written", "seconds",
        "calibration s",
    )  # fmt: skip
    for col in columns:
        table.add_column(col, justify="right")
    table.add_row(
        *(str(len(x)) for x in (report.added, report.updated, report.removed, report.unchanged)),
        str(len(report.problems)),
        str(report.chunks_written),
        f"{report.seconds:.2f}",
        f"{report.calibration_seconds:.2f}",
    )
    out.print(table)
    for name, files in (
        ("added", report.added),
        ("updated", report.updated),
        ("removed", report.removed),
    ):
        for f in files:
            out.print(f"  {name:<8} {shown(f, one_line=True)}", highlight=False)
    for f in report.unchanged if verbosity().verbose else ():
        out.print(f"  unchanged {shown(f, one_line=True)}", highlight=False)
    for f in report.instructions:
        out.print(
            f"  ! {shown(f, one_line=True)} holds text addressed to AI assistants"
            " (never obeyed; `tether documents`)",
            highlight=False,
        )
    if line := inventory_line(report):
        out.print(f"  {line}", highlight=False)
    print_access_note(report)
    print_unsupported(report)
    print_problems(report)
    if not report.committed:
        err.print("[red]--strict: nothing was written (the index is as it was)[/red]")


def inventory_line(report: SyncReport) -> str:
    """That the folder's inventory.csv was read: its rows, how many name a file found and
    how many none (each of those is a warning); "" when the folder has none."""
    rows = report.inventory_rows
    if rows is None:
        return ""
    said = f"inventory.csv read: {rows} row{'' if rows == 1 else 's'}"
    if not rows:
        return said + " (only a header: no metadata applied)"
    missing = rows - report.inventory_matched
    said += f", {report.inventory_matched} naming a file here"
    if missing:
        said += f", {missing} naming no file (see the warnings)"
    return said


NAMED_UNLABELLED = 5  # files named in the access note; the rest counted


def access_note(report: SyncReport) -> str:
    """How many documents read carry no access label, and what that means for public
    questions; "" when all carry one."""
    n = len(report.unlabelled)
    if not n:
        return ""
    docs = f"{n} document{'s' if n != 1 else ''} read" + (" has" if n == 1 else " have")
    shown = ", ".join(report.unlabelled[:NAMED_UNLABELLED])
    more = n - NAMED_UNLABELLED
    named = f" ({shown}{f' and {more} more' if more > 0 else ''})"
    if report.default_access == "public":
        return (
            f"{docs} no access label{named}: indexed as public (--default-access public), so"
            " anyone asking as public sees them"
        )
    return (
        f"{docs} no access label{named}: indexed as staff-only (fail-closed), so questions"
        " asked as public (the default) will not see them; label them (front matter `access:"
        " public`, a field `:access: public`, `<meta name=access>` or inventory.csv) or ingest"
        " with --default-access public"
    )


def print_access_note(report: SyncReport) -> None:
    if note := access_note(report):
        colour = "yellow" if report.default_access == "staff" else "dim"
        err.print(f"[{colour}]note[/{colour}]  {note}", highlight=False)


def writable_index(path: Path, store: str | None = None, **settings: Any) -> Workspace:
    """A Workspace over the index at `path` (or the server `store`, or TETHER_STORE) to write
    into (created when missing); `settings` that are not None replace the loaded Settings'
    values (executor, workers, ray_address)."""
    from dataclasses import replace

    from tether.app import Workspace
    from tether.config import load_settings

    given = {k: v for k, v in settings.items() if v is not None}
    return Workspace.open(path, store=store, create=True, settings=replace(load_settings(), **given))


def ingest(
    folder: Annotated[
        str,
        typer.Argument(
            help="The collection folder (read recursively), a website's start URL"
            " (http or https: its pages under that path), or an export: a Confluence space's"
            " or a Notion workspace's .zip, Zendesk Help Center API .json pages"
            " (docs/sources.md).",
            show_default=True,
        ),
    ] = ".",
    index: IndexOpt = None,
    store: StoreOpt = None,
    chunker: Annotated[
        str, typer.Option(help="structure (one chunk per section), fixed, or overlap.")
    ] = "structure",
    max_words: Annotated[int, typer.Option(help="Words per chunk before a split.", min=20)] = 200,
    overlap_words: Annotated[
        int, typer.Option(help="Overlap for the overlap chunker.", min=0)
    ] = 50,
    rebuild: Annotated[
        bool, typer.Option(help="Start the index afresh (needed to change chunker or embedder).")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            help="Write nothing if any file has a problem; a file emptied since the last"
            " ingest is removed from the index (by default its previous version stays)."
        ),
    ] = False,
    embed: Annotated[bool, typer.Option(help="Compute embeddings for dense search.")] = True,
    follow_links: Annotated[
        bool,
        typer.Option(
            "--follow-links",
            help="Follow links that lead out of the folder (by default they are skipped and"
            " reported).",
        ),
    ] = False,
    default_access: Annotated[
        str | None,
        typer.Option(
            "--default-access",
            help="public or staff: what a document without an access label is indexed as;"
            " stored with the index, so later ingests keep it unless told otherwise."
            " Default: the stored value, else staff (fail-closed).",
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            help="Where parsing and embedding run: "
            + "; ".join(f"{name}, {what}" for name, what in EXECUTORS.items())
            + "; or an installed plugin's name. Default: TETHER_EXECUTOR, else process.",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="Worker processes or Ray actors (default: one per core)."
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="The Ray cluster for --executor ray (auto, ray://head:10001); default:"
            " TETHER_RAY_ADDRESS, else a local Ray.",
        ),
    ] = None,
    max_pages: Annotated[
        int | None,
        typer.Option(
            min=1,
            rich_help_panel=SITE_PANEL,
            help="Pages requested at most. Default: the value remembered for this URL, else 1000.",
        ),
    ] = None,
    max_depth: Annotated[
        int | None,
        typer.Option(
            min=0,
            rich_help_panel=SITE_PANEL,
            help="Links followed from the start URL at most. Default: remembered, else 10.",
        ),
    ] = None,
    max_page_bytes: Annotated[
        int | None,
        typer.Option(
            min=1,
            rich_help_panel=SITE_PANEL,
            help="Bytes read of one page at most (a larger page is a problem)."
            " Default: remembered, else 20000000.",
        ),
    ] = None,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            min=1,
            rich_help_panel=SITE_PANEL,
            help="Bytes downloaded in all before the crawl stops."
            " Default: remembered, else 500000000.",
        ),
    ] = None,
    delay: Annotated[
        float | None,
        typer.Option(
            min=0,
            rich_help_panel=SITE_PANEL,
            help="Seconds between two requests (robots.txt's Crawl-delay wins when"
            " longer). Default: remembered, else 0.5.",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            rich_help_panel=SITE_PANEL,
            help="Requests in flight at once. Default: remembered, else 4.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            rich_help_panel=SITE_PANEL,
            help="Seconds to wait for a connection or the next bytes."
            " Default: remembered, else 20.",
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            min=0,
            rich_help_panel=SITE_PANEL,
            help="Tries again after a timeout, a dropped connection, a 429 or a 5xx."
            " Default: remembered, else 2.",
        ),
    ] = None,
    sitemap: Annotated[
        bool | None,
        typer.Option(
            "--sitemap/--no-sitemap",
            rich_help_panel=SITE_PANEL,
            help="Crawl the pages the site's sitemap lists when it has one (else follow"
            " links). Default: remembered, else --sitemap.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read a folder of documents, a website, or an export into the index (incremental; atomic)."""
    from tether.places import DEFAULT_INDEX
    from tether.types import ChunkerConfig

    if chunker not in ("structure", "fixed", "overlap"):
        raise typer.BadParameter(
            f"{chunker!r} is not structure, fixed or overlap", param_hint="--chunker"
        )
    # chunk_document's rule, said once before any file is read (not as a problem per file)
    if chunker == "overlap" and overlap_words >= max_words:
        raise typer.BadParameter(
            f"must be below --max-words ({max_words}) (got {overlap_words})",
            param_hint="--overlap-words",
        )
    if default_access not in (None, "public", "staff"):
        raise typer.BadParameter(
            f"{default_access!r} is not public or staff", param_hint="--default-access"
        )
    if executor is not None:
        executor = executor.strip().lower()
        if executor not in executor_names(plugins=False) and executor not in executor_names():
            raise typer.BadParameter(
                f"{executor!r} is not {one_of(executor_names())}", param_hint="--executor"
            )
    from tether.cli.ingest_web import check_site_options, ingest_site
    from tether.ingest.sources import is_url

    site = {
        "max_pages": max_pages, "max_depth": max_depth, "max_page_bytes": max_page_bytes,
        "max_bytes": max_bytes, "delay": delay, "concurrency": concurrency, "timeout": timeout,
        "retries": retries, "sitemap": sitemap,
    }  # fmt: skip
    check_site_options(site, is_url(folder))
    if is_url(folder) and follow_links:
        raise typer.BadParameter("is for a folder, not a website", param_hint="--follow-links")
    if is_url(folder):
        with user_errors():
            config = ChunkerConfig(chunker, max_words, overlap_words)  # type: ignore[arg-type]
            report = ingest_site(
                folder, index=index, store=store, config=config, rebuild=rebuild,
                strict=strict, embed=embed, default_access=default_access, site=site,
                workspace_settings={"executor": executor, "workers": workers,
                                    "ray_address": ray_address},
                as_json=as_json,
            )  # fmt: skip
        if report.problems and strict:
            raise typer.Exit(1)
        return
    from tether.cli.ingest_export import ingest_export
    from tether.ingest.sources.exports import export_at

    with user_errors():
        export = export_at(Path(folder))  # a Zendesk, Confluence or Notion export, else None
    if export is not None:
        if follow_links:
            raise typer.BadParameter("is for a folder, not an export", param_hint="--follow-links")
        with user_errors():
            report = ingest_export(
                export, index=index, store=store, rebuild=rebuild, strict=strict, embed=embed,
                config=ChunkerConfig(chunker, max_words, overlap_words),  # type: ignore[arg-type]
                default_access=default_access, as_json=as_json,
                workspace_settings={"executor": executor, "workers": workers,
                                    "ray_address": ray_address},
            )  # fmt: skip
        if report.problems and strict:
            raise typer.Exit(1)
        return
    with user_errors():
        folder_path = Path(folder)
        if not folder_path.is_dir():
            raise TetherError(f"no such folder: {folder}")
        path = index or folder_path / DEFAULT_INDEX
        ws = writable_index(
            path, store, executor=executor, workers=workers, ray_address=ray_address
        )
        config = ChunkerConfig(chunker, max_words, overlap_words)  # type: ignore[arg-type]
        report = run_sync(
            ws, folder_path, config, rebuild, strict, embed, follow_links, default_access
        )
        where = ws.store.location  # a server store's URL without its password
        ws.close()
        if as_json:
            from tether.schemas import IngestReport

            print_json(IngestReport.from_report(report, where))
        elif verbosity().quiet:
            print_problems(report)
        else:
            print_report(report, where)
        if report.problems and strict:
            raise typer.Exit(1)


def announce_demo(report: SyncReport, path: Path) -> None:
    """What `Workspace.open` reports after ingesting the demo on its way: one line."""
    err.print(f"ingested the demo collection into {shown(path)}", highlight=False)


def ingest_for_eval(path: Path, folder: Path, store: str | None = None) -> Workspace:
    """`eval --collection`: ingest `folder` into `path` (or the server `store`; problems are
    printed, not fatal)."""
    from tether.types import ChunkerConfig

    ws = writable_index(path, store)
    print_problems(run_sync(ws, folder, ChunkerConfig(), False, False, True))
    return ws
