"""A Notion workspace's Markdown & CSV export: `tether ingest Export-1a2b....zip`.

The zip Notion writes (Settings > Export all workspace content, or a page's ••• > Export,
"Markdown & CSV", with subpages) names every page `Title <32-hex id>.md`, puts a page's
sub-pages in a folder of the same name (`Title <id>/`), and writes a database as
`Name <id>.csv` (and `Name <id>_all.csv`, every row, which is read first) with its rows'
pages in the folder `Name <id>/`. A large export is a zip of zips (`...-Part-1.zip`...): the
parts are read one level deep, with the same bounds (`archive`).

Each page (`.md`) becomes one document, parsed as Markdown:
- `source`: `https://www.notion.so/ID`, the live page (Notion opens it for whoever may);
  doc_id `notion/ID` (the id: stable across renames and moves);
- the folders above it (the pages and databases it sits under, their titles) are its
  `trail`: its chunks' sections read "Handbook › Policies › <its own headings>";
- its title: its `# Title` line, else the file name without the id;
- a database row's page takes its row's properties (matched by title) where a document field
  fits: `Last edited time` is its version (and date); a column named like a metadata field
  (`Access` public/staff, `Owner` or `Author`, `Language`, `Type`, `Effective from`,
  `Effective to`, `Review by`, dates in Notion's "March 3, 2024" or ISO) gives that field;
  a value that does not fit a field is left out, with a warning.

Access: the export carries no sharing settings, so a page carries no access label unless its
database row has an `Access` column: the index's default access decides (staff unless
`--default-access public`).

Gone: an export removes only the pages under the top-level pages it holds (its `scope`): an
export of one page's subtree leaves the rest of the workspace as it was; a top-level page
deleted from the workspace stays until a `--rebuild`.

What it cannot do: the CSV itself (a database's table view) is not a document, and a
database row without a page file is not read; relations, rollups, formulas and people are
kept only as the text the page shows; comments, page icons and covers, sharing, the
creation time and the last edit time of a page outside a database are lost; images and
attached files are not read (counted in the summary); Notion's other date formats
(day/month/year) are not read.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from tether.errors import TetherError
from tether.ingest.metadata import collect_meta
from tether.ingest.sources.base import Sink
from tether.ingest.sources.exports.archive import Archive, TooLarge
from tether.ingest.sources.exports.common import (
    ExportSource,
    Page,
    constant,
    failing,
    one_line,
)

_ID = re.compile(r"^(?P<title>.*?)\s*(?P<id>[0-9a-f]{32})(?P<all>_all)?(?P<ext>\.md|\.csv)?$")
_DATES = ("%B %d, %Y %I:%M %p", "%B %d, %Y", "%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d %H:%M")
_FIELDS = ("access", "owner", "language", "doc_type", "effective_from", "effective_to", "review_by")
_EDITED = ("last edited time", "last edited", "last updated", "updated")


def notion_names(archive: Archive) -> bool:
    """Whether the archive (or, for a zip of zips, its first part) holds Notion's pages or
    databases (`Title <32-hex id>.md` / `.csv`)."""
    if _parts(archive):
        with archive.nested(_parts(archive)[0]) as part:
            return notion_names(part)
    return any(_match(n) for n in archive.names if n.lower().endswith((".md", ".csv")))


def _parts(archive: Archive) -> list[str]:
    """The nested zips when the archive holds nothing else (a large export's parts)."""
    names = archive.names
    return sorted(names) if names and all(n.lower().endswith(".zip") for n in names) else []


def _match(name: str) -> re.Match[str] | None:
    return _ID.match(PurePosixPath(name).name)


class NotionSource(ExportSource):
    """A Notion Markdown & CSV export (see the module docstring)."""

    kind: ClassVar[str] = "notion"
    label: ClassVar[str] = "the Notion"

    def __init__(self, path: Path, settings: Mapping[str, Any] | None = None) -> None:
        with Archive(path) as archive:
            if not notion_names(archive):
                raise TetherError(f"{path}: not a Notion Markdown & CSV export")
            self.count = sum(1 for n in archive.names if n.lower().endswith(".md"))
        super().__init__(path, "workspace")

    def expected(self) -> int:
        return self.count

    def pages(self, sink: Sink) -> Iterator[Page]:
        with ExitStack() as stack:
            outer = stack.enter_context(Archive(self.path))
            archives = [stack.enter_context(outer.nested(p)) for p in _parts(outer)] or [outer]
            pages = [(a, n) for a in archives for n in a.names if n.lower().endswith(".md")]
            self.count = len(pages)
            rows = _databases(archives, sink)
            others = sum(
                1 for a in archives for n in a.names if not n.lower().endswith((".md", ".csv"))
            )
            for archive, name in pages:
                page = self._page(archive, name, rows, sink)
                if page is not None:
                    yield page
        if others:
            self.notes.append(f"images and attached files not read: {others}")

    def _page(
        self, archive: Archive, name: str, rows: dict[str, dict[str, dict[str, str]]], sink: Sink
    ) -> Page | None:
        found = _match(name)
        if found is None:
            sink.warning(f"{name}: a page without Notion's id in its name; not read")
            return None
        ident = found.group("id")
        folders = [
            (m.group("title"), m.group("id"), m.group("ext"))
            for part in PurePosixPath(name).parts[:-1]
            if (m := _ID.match(part))
        ]
        scope = folders[0][1] if folders else ident
        source = f"https://www.notion.so/{ident}"
        trail = tuple(one_line(title) for title, _, _ in folders if one_line(title))
        try:
            data = archive.read(name)
        except TooLarge as exc:
            return Page(source, scope, failing(exc), "markdown", {}, trail)
        text = data.decode("utf-8-sig", "replace")
        heading = next((ln[2:].strip() for ln in text.splitlines()[:5] if ln.startswith("# ")), "")
        row: dict[str, str] = {"doc_id": f"notion/{ident}"}
        if not heading and one_line(found.group("title")):
            row["title"] = one_line(found.group("title"))
        modified = 0
        database = rows.get(folders[-1][1]) if folders else None
        if database is not None:
            props = database.get(_key(heading or found.group("title")), {})
            fields, modified = _fields(props, source, sink)
            row.update(fields)
        return Page(source, scope, constant(data), "markdown", row, trail, modified)


def _key(title: str) -> str:
    """A title as rows and pages are matched: case, spaces and punctuation aside (Notion
    drops some characters from file names)."""
    return re.sub(r"\W+", "", title.casefold())


def _databases(archives: list[Archive], sink: Sink) -> dict[str, dict[str, dict[str, str]]]:
    """Each database's rows by title: {database id: {title key: {column: value}}}; the
    `_all.csv` (every row) is read over the view's `.csv`."""
    chosen: dict[str, tuple[Archive, str, bool]] = {}
    for archive in archives:
        for name in archive.names:
            found = _match(name)
            if found is None or found.group("ext") != ".csv":
                continue
            ident, every = found.group("id"), bool(found.group("all"))
            if ident not in chosen or (every and not chosen[ident][2]):
                chosen[ident] = (archive, name, every)
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for ident, (archive, name, _) in chosen.items():
        try:
            text = archive.read(name).decode("utf-8-sig", "replace")
            reader = csv.reader(io.StringIO(text, newline=""))
            header = [one_line(h) for h in next(reader, [])]
            table: dict[str, dict[str, str]] = {}
            for cells in reader:
                if cells and cells[0].strip():
                    table.setdefault(_key(cells[0]), dict(zip(header, cells, strict=False)))
        except (TooLarge, csv.Error) as exc:
            sink.warning(f"{name}: its rows' properties are not read ({exc})")
            continue
        tables[ident] = table
    return tables


def _fields(props: Mapping[str, str], source: str, sink: Sink) -> tuple[dict[str, str], int]:
    """The document fields a row's properties give, and its last edit (ns; 0: unknown)."""
    fields: dict[str, str] = {}
    modified = 0
    for column, value in props.items():
        if column.strip().lower() in _EDITED and (when := _date(value)):
            fields["version"] = when.isoformat(timespec="minutes").replace("+00:00", "Z")
            modified = int(when.timestamp()) * 1_000_000_000
    for name, value in collect_meta(list(props.items())).items():
        if name not in _FIELDS:
            continue
        text = one_line(value)
        if name == "access":
            ok = text.lower() in ("public", "staff")
            text = text.lower()
        elif name == "language":
            ok = bool(re.fullmatch(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*", text))
        elif name in ("effective_from", "effective_to", "review_by"):
            when = _date(text)
            ok, text = when is not None, when.date().isoformat() if when else text
        else:
            ok = bool(text)
        if ok:
            fields[name] = text
        elif text:
            sink.warning(f"{source}: its {name.replace('_', ' ')} {text!r} is not one; left out")
    return fields, modified


def _date(value: str) -> datetime | None:
    text = one_line(value)
    for fmt in _DATES:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
