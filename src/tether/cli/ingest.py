"""`tether ingest`: read a collection folder into an index, with a progress bar and a report
(a website: `ingest_web`; an export: `ingest_export`); also the demo collection's ingest that
`demo`, `--demo` and `eval` use.

What it cannot do: it parses and chunks nothing itself (the Workspace's `ingest` does), and
the embedder loads only when embeddings are asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tether.catalog import EXECUTORS, executor_names, one_of
from tether.cli.app import (
    PHASE_LABELS,
    IndexOpt,
    JsonOpt,
    StoreOpt,
    announce_demo,
    ingest_progress,
    print_json,
    user_errors,
    verbosity,
)
from tether.cli.ingest_export import ingest_export
from tether.cli.ingest_shared import (
    NAMED_UNLABELLED,
    access_note,
    inventory_line,
    print_access_note,
    print_problems,
    print_report,
    print_unsupported,
    writable_index,
)
from tether.cli.ingest_web import SITE_PANEL, check_site_options, ingest_site
from tether.errors import TetherError
from tether.places import DEFAULT_INDEX

__all__ = [  # the shared pieces stay importable from here
    "NAMED_UNLABELLED",
    "PHASE_LABELS",
    "access_note",
    "announce_demo",
    "ingest_progress",
    "inventory_line",
    "print_access_note",
    "print_problems",
    "print_report",
    "print_unsupported",
    "writable_index",
]

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import ChunkerConfig, SyncReport


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


def ingest_for_eval(path: Path, folder: Path, store: str | None = None) -> Workspace:
    """`eval --collection`: ingest `folder` into `path` (or the server `store`; problems are
    printed, not fatal)."""
    from tether.types import ChunkerConfig

    ws = writable_index(path, store)
    print_problems(run_sync(ws, folder, ChunkerConfig(), False, False, True))
    return ws
