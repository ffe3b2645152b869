"""Exports from the tools teams keep documents in, each read from the tool's own export or
API shape, each a `tether.ingest.sources.base.Source` (`common.ExportSource`):
- `zendesk`: Zendesk Guide articles as the Help Center API returns them (a `.json` page, or
  a folder of them);
- `confluence`: a Confluence space's HTML export (its `.zip`);
- `notion`: a Notion workspace's Markdown & CSV export (its `.zip`, or a zip of part zips).

`export_at(path)` says which one `path` is, unambiguously: a folder is a Zendesk export only
when its top level holds saved articles pages and no document tether reads (else it is a
collection folder: None); a `.json` file must be an articles page; a `.zip` must be a
Confluence space export or a Notion export, not both and not neither, each refused in one
line. Every zip is opened through `archive.Archive`'s bounds (zip bombs, `..` members,
encrypted members refused); `remembered(source, store)` adds the settings the index
remembers for it. `open_export(kind, location, settings)` opens a remembered
export again (`tether sync`): the file its settings name, which must still be an export of
the same help center, space or workspace.

What it cannot do: it reads what the tools wrote, as they wrote it, and calls no API; which
fields each export's documents keep, and what is lost, is in each module's docstring and
docs/sources.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.ingest.sources.base import source_key
from tether.ingest.sources.exports.archive import Archive
from tether.ingest.sources.exports.common import ExportSource
from tether.ingest.sources.exports.confluence import ConfluenceSource, confluence_layout
from tether.ingest.sources.exports.notion import NotionSource, notion_names
from tether.ingest.sources.exports.zendesk import ZendeskSource, zendesk_file, zendesk_folder
from tether.ingest.sources.sync import remembered_sources
from tether.protocols import StoreReader

KINDS = ("zendesk", "confluence", "notion")


def export_at(path: Path, settings: Mapping[str, Any] | None = None) -> ExportSource | None:
    """The export at `path`, or None when `path` is a folder of documents (or nothing);
    a `TetherError` for a file that is no export tether reads (see the module docstring)."""
    if path.is_dir():
        pages = zendesk_folder(path)
        return ZendeskSource(path, pages) if pages else None
    if not path.exists():
        return None
    if path.suffix.lower() == ".json":
        return ZendeskSource(path, zendesk_file(path))
    if path.suffix.lower() == ".zip":
        return _zip_export(path, settings)
    raise TetherError(
        f"{path} is a file: tether ingest reads a folder, a website's URL, or an export (a"
        " Confluence space's or a Notion workspace's .zip, Zendesk Help Center API .json pages)"
    )


def _zip_export(path: Path, settings: Mapping[str, Any] | None) -> ExportSource:
    with Archive(path) as archive:
        confluence = confluence_layout(archive) is not None
        notion = notion_names(archive)
    if confluence and notion:
        raise TetherError(
            f"{path}: holds both a Confluence space's pages and Notion pages; export them apart"
        )
    if confluence:
        return ConfluenceSource(path, settings)
    if notion:
        return NotionSource(path, settings)
    raise TetherError(
        f"{path}: a zip that is neither a Confluence space's HTML export (SPACEKEY/index.html"
        " beside Title_123.html pages) nor a Notion Markdown & CSV export (pages named"
        " 'Title <32-hex id>.md')"
    )


def remembered(source: ExportSource, store: StoreReader) -> ExportSource:
    """`source` with the settings `store` remembers for its export (a Confluence site's
    address found in an earlier export) where it has none of its own."""
    entry = remembered_sources(store).get(source_key(source), {})
    recorded = entry.get("settings") if isinstance(entry.get("settings"), dict) else {}
    for key, value in (recorded or {}).items():
        if key != "path" and value and key not in source.extra:
            source.extra[key] = value
    return source


def open_export(kind: str, location: str, settings: Mapping[str, Any]) -> ExportSource:
    """A remembered export opened again from the file its settings name."""
    where = settings.get("path")
    if not isinstance(where, str) or not where:
        raise TetherError(f"the remembered {kind} export {location} names no file")
    path = Path(where)
    if not path.exists():
        raise TetherError(f"{path}: the {kind} export is gone (ingest the newer one by its path)")
    source = export_at(path, settings)
    if source is None or source.kind != kind or source.location != location:
        what = f"{source.kind} {source.location}" if source else "no export"
        raise TetherError(f"{path} now holds {what}, not the {kind} export of {location}")
    for key, value in settings.items():
        if key != "path" and value and key not in source.extra:
            source.extra[key] = value
    return source
