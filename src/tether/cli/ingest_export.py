"""`tether ingest EXPORT`: a Zendesk, Confluence or Notion export into the index, with a
summary of what it read (`tether.ingest.sources.exports` says which export a path is).

The index is `--index`, else TETHER_INDEX, else the one found here or in a parent folder,
else `.tether/index.sqlite` here (as for a website: an export's folder is a download folder,
not a collection's home).

What it cannot do: it reads nothing itself (the export's source does, through the
Workspace's `ingest`); the website's options (`--max-pages`...) and `--follow-links` are
refused for an export.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli.app import ingest_progress, out, print_json, shown, verbosity
from tether.cli.ingest_shared import print_problems, print_report, writable_index
from tether.cli.ingest_web import site_index

if TYPE_CHECKING:
    from tether.ingest.sources.exports.common import ExportSource
    from tether.types import ChunkerConfig, SyncReport


def ingest_export(
    source: ExportSource,
    *,
    index: Path | None,
    store: str | None,
    config: ChunkerConfig,
    rebuild: bool,
    strict: bool,
    embed: bool,
    default_access: str | None,
    workspace_settings: dict[str, Any],
    as_json: bool,
) -> SyncReport:
    """Sync the export `source` (`export_at` found it) into the index and print what
    happened; the report (the caller exits 1 on problems with --strict)."""
    from tether.ingest.sources.exports import remembered

    ws = writable_index(site_index(index, store), store, **workspace_settings)
    try:
        remembered(source, ws.store)
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
    if as_json:
        from tether.schemas import IngestReport

        print_json(IngestReport.from_report(report, where))
    elif verbosity().quiet:
        print_problems(report)
    else:
        print_report(report, where)
        for line in source.summary_lines():
            out.print(f"  {shown(line, one_line=True)}", highlight=False)
    return report
