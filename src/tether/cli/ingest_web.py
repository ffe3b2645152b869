"""`tether ingest URL`: a website into the index, with its crawl's progress and summary; and
`tether sync`: every source the index remembers, synced again with its remembered settings.

The options of a crawl (`SITE_OPTIONS`: caps, delay, concurrency, timeout, retries, sitemap)
are given to `tether ingest` and passed here; each left out is the value the index remembers
for this URL from its last sync, else `tether.ingest.sources.web.WebSettings`'s default.

What it cannot do: `tether sync` syncs the sources `tether ingest` remembered (websites, and
exports read again from their last path); a folder is not remembered yet, so it is not
synced. It crawls nothing itself (`tether.ingest.sources.web` does, through the Workspace's
`ingest`); the index is `--index`, else TETHER_INDEX, else the one found here or
in a parent folder, else `.tether/index.sqlite` here (a URL has no folder to keep it beside).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.cli.app import (
    IndexOpt,
    JsonOpt,
    StoreOpt,
    ingest_progress,
    out,
    print_json,
    shown,
    user_errors,
    verbosity,
)
from tether.cli.ingest_shared import print_problems, print_report, writable_index
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.ingest.sources.web import CrawlSummary
    from tether.types import ChunkerConfig, SyncReport

SITE_PANEL = "Website (FOLDER is an http(s) URL)"
# option name -> WebSettings field
SITE_OPTIONS = (
    "max_pages",
    "max_depth",
    "max_page_bytes",
    "max_bytes",
    "delay",
    "concurrency",
    "timeout",
    "retries",
    "sitemap",
)


def site_index(index: Path | None, store: str | None) -> Path:
    """Where a website is ingested (see the module docstring)."""
    from tether.app import locate_index
    from tether.errors import TetherError
    from tether.places import DEFAULT_INDEX

    if index is not None or store is not None:
        return index or DEFAULT_INDEX
    try:
        return locate_index()
    except TetherError:
        return DEFAULT_INDEX


def synced_index(index: Path | None, store: str | None) -> Path:
    """The index `tether sync` writes: --index, else (without --store or TETHER_STORE) the
    one found."""
    from tether.app import locate_index
    from tether.config import load_settings
    from tether.places import DEFAULT_INDEX

    if index is not None:
        return index
    if store is None and load_settings().store is None:
        return locate_index()
    return DEFAULT_INDEX


def sync(
    index: IndexOpt = None,
    store: StoreOpt = None,
    embed: Annotated[bool, typer.Option(help="Compute embeddings for dense search.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Sync every source the index remembers again (the websites and exports it read).

    Each with its remembered settings: what changed is read again, what is gone leaves. One
    command to run from a timer. Exit 1 when a source could not be synced (the others still
    are, each problem said in one line)."""
    from tether.ingest.sources.sync import remembered_sources
    from tether.ingest.sources.web_settings import CrawlSummary
    from tether.schemas import Crawl, IngestReport
    from tether.types import ChunkerConfig

    with user_errors():
        ws = writable_index(synced_index(index, store), store)
        where = ws.store.location
        entries = remembered_sources(ws.store)
        ws.close()
        if not entries:
            raise TetherError(
                f"{where} remembers no source to sync: `tether ingest URL` (or an export)"
                " remembers one"
            )
    reports, failed = [], 0
    for entry in entries.values():
        location = str(entry.get("location", "?"))
        try:
            with user_errors():
                report, summary = _sync_one(index, store, entry, ChunkerConfig(), embed, as_json)
        except typer.Exit:
            failed += 1
            continue
        crawl = Crawl(**summary.as_dict()) if isinstance(summary, CrawlSummary) else None
        reports.append(IngestReport.from_report(report, where, crawl))
        if not as_json:
            if not verbosity().quiet:  # -q: problems only, as `ingest -q`
                out.print(f"[bold]{shown(location, one_line=True)}[/bold]", highlight=False)
            _print(report, summary, where)
    if as_json:
        print_json(reports)
    if failed:
        raise typer.Exit(1)


def _sync_one(
    index: Path | None,
    store: str | None,
    entry: dict[str, Any],
    config: ChunkerConfig,
    embed: bool,
    quiet: bool,
) -> tuple[SyncReport, CrawlSummary | list[str]]:
    """One remembered source synced again, with its crawl's summary (an export: its summary
    lines); a failure is one `error:` line naming it."""
    from tether.ingest.sources import open_source
    from tether.ingest.sources.web import WebSource

    location = str(entry.get("location", "?"))
    settings = entry.get("settings") if isinstance(entry.get("settings"), dict) else {}
    try:
        source = open_source(str(entry.get("kind")), location, settings)
    except TetherError as exc:
        raise TetherError(f"{location}: {exc}") from None
    ws = writable_index(synced_index(index, store), store)
    try:
        with ingest_progress() as step:
            report = ws.ingest(source, chunker=config, embed=embed, progress=step)
    except TetherError as exc:
        raise TetherError(f"{location}: {exc}") from None
    finally:
        ws.close()
    if isinstance(source, WebSource):
        return report, source.summary
    lines = getattr(source, "summary_lines", None)  # an export's
    return report, lines() if callable(lines) else []


def _print(report: SyncReport, summary: CrawlSummary | list[str], where: str) -> None:
    from dataclasses import replace

    if verbosity().quiet:
        print_problems(report)
        return
    if isinstance(summary, list):  # an export's
        print_report(report, where)
        for line in summary:
            out.print(f"  {shown(line, one_line=True)}", highlight=False)
        return
    print_report(replace(report, unsupported=()), where)
    for line in crawl_lines(summary, report):
        out.print(f"  {shown(line, one_line=True)}", highlight=False)


def ingest_site(
    url: str,
    *,
    index: Path | None,
    store: str | None,
    config: ChunkerConfig,
    rebuild: bool,
    strict: bool,
    embed: bool,
    default_access: str | None,
    workspace_settings: dict[str, Any],
    site: dict[str, Any],
    as_json: bool,
) -> SyncReport:
    """Crawl `url` into the index and print what happened; the report (the caller exits 1
    on problems with --strict). `site`: the crawl options given (None: remembered)."""
    from tether.ingest.sources import source_at
    from tether.ingest.sources.web import WebSource

    ws = writable_index(site_index(index, store), store, **workspace_settings)
    try:
        source = source_at(ws.store, url, **site)
        assert isinstance(source, WebSource)
        with ingest_progress() as step:
            report = ws.ingest(
                source,
                chunker=config,
                embed=embed,
                rebuild=rebuild,
                strict=strict,
                progress=step,
                default_access=default_access,
            )
        where = ws.store.location
    finally:
        ws.close()
    summary = source.summary
    if as_json:
        from tether.schemas import Crawl, IngestReport

        print_json(IngestReport.from_report(report, where, Crawl(**summary.as_dict())))
    else:
        _print(report, summary, where)
    return report


def crawl_lines(s: CrawlSummary, report: SyncReport) -> list[str]:
    """The crawl's summary in a few lines (under the ingest table)."""
    how = "from its sitemap" if s.mode == "sitemap" else "following links"
    lines = [
        f"crawled {s.start} {how}: {s.pages_requested} pages requested, {s.fetched} fetched,"
        f" {s.not_modified} unchanged (304), {s.gone} gone (404/410), {s.failed} failed;"
        f" {s.requests} requests, {s.bytes / 1e6:.1f} MB in {s.seconds:.1f} s"
        f" ({s.pages_per_s:g} pages/s, {s.delay_s:g} s between requests)"
    ]
    left = [
        (s.disallowed_count, "disallowed by robots.txt"),
        (s.other_hosts, "links to other hosts"),
        (s.outside_path, "links outside the start path"),
        (s.too_deep, "links past --max-depth"),
        (s.noindex, "pages marked noindex"),
        (s.copies, "copies of a page read at another URL"),
    ]
    said = [f"{n} {what}" for n, what in left if n]
    if said:
        lines.append("not read: " + ", ".join(said))
    if s.disallowed:
        lines.append("disallowed: " + " ".join(s.disallowed))
    if report.unsupported:
        kinds = ", ".join(f"{kind} {n}" for kind, n in report.unsupported)
        lines.append(f"not read: pages of a type tether does not read ({kinds})")
    if s.redirects:
        first = ", ".join(f"{a} -> {b}" for a, b in s.redirects[:3])
        more = f" and {len(s.redirects) - 3} more" if len(s.redirects) > 3 else ""
        lines.append(f"redirects followed: {first}{more}")
    lines += s.notes
    return lines


def source_lines(rest: dict[str, Any]) -> list[tuple[str, str]]:
    """`tether info`'s lines for the sources the index remembers (taken out of `rest`, the
    index meta not shown yet): one per source, with its last sync; the crawl states
    (`source:...`, each page's validators) are not shown."""
    import json

    for key in [k for k in rest if k.startswith("source:")]:
        rest.pop(key)
    raw = rest.pop("sources", None)
    try:
        entries = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return [("sources", "(a damaged record)")]
    if not isinstance(entries, dict):
        return []
    lines = []
    for entry in entries.values():
        if not isinstance(entry, dict):
            continue
        last = entry.get("last")
        counts = (
            ", ".join(f"{n} {what}" for what, n in last.items()) if isinstance(last, dict) else ""
        )
        when = str(entry.get("synced_at", "?"))[:19].replace("T", " ")
        lines.append(
            (
                "source",
                f"{entry.get('kind', '?')} {entry.get('location', '?')} · last synced {when} UTC"
                + (f" ({counts})" if counts else ""),
            )
        )
    return lines


def check_site_options(values: dict[str, Any], is_site: bool) -> None:
    """The website's options are refused for a folder (one usage line)."""
    import typer

    if not is_site:
        given = [name for name, value in values.items() if value is not None]
        if given:
            flag = "--" + given[0].replace("_", "-")
            if given[0] == "sitemap":
                flag = "--sitemap/--no-sitemap"
            raise typer.BadParameter(
                "is for a website (an http(s) URL), not a folder", param_hint=flag
            )
