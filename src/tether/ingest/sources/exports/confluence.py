"""A Confluence space's HTML export: `tether ingest Confluence-space-export-123.html.zip`.

The zip Confluence writes (Space tools > Content tools > Export > HTML, Cloud or Data
Center) holds a folder named by the space key with `index.html` (the space's details: key,
name, and its page tree under "Available Pages"), one `Title_12345.html` per page (a page
whose title makes no file name is `12345.html`), `attachments/`, `images/` and `styles/`.
Each page file is the page as Confluence shows it: `#breadcrumbs` (the space, then the pages
above this one), `#title-text` ("Space : Title"), `.page-metadata` ("Created by A, last
modified by B on Jun 12, 2024"), `#main-content` (the body), then its attachments, comments
and a footer.

Each page becomes one document:
- its `#main-content` under its title goes through the HTML parser (hidden text dropped; the
  table of contents macro is left out: it repeats the headings; so are `<meta>` tags an HTML
  macro put in the body: a page cannot label its own access);
- the pages above it (the breadcrumbs after the space) are its `trail`: its chunks' sections
  read "Home › Setup › <its own headings>";
- `source`: `BASE/pages/viewpage.action?pageId=ID`, the live page, where BASE is the site's
  address that a Cloud export writes into its pages (`data-base-url`; found once, it is
  remembered), else `confluence://KEY/pages/ID`;
- doc_id: `confluence/KEY/ID` (the page id: stable across renames and moves);
- owner: the page's creator; version: the date it was last modified (YYYY-MM-DD);
  language: detected from the text.

Access: the export carries no page restrictions (Confluence leaves out the pages the user
who exported cannot see, and marks none of the others), so a page carries no access label:
the index's default access decides, staff (fail-closed) unless `--default-access public` is
given, which then makes every page of the space public. A space with restricted pages must
be exported by someone who cannot see them, or ingested as staff.

What it cannot do: attachments (PDF, Word, images) are not read (counted in the summary);
comments, labels, page history, blog posts, the time of day and the page's last editor are
lost; the date is read in Confluence's English format only ("Jun 12, 2024"); a custom export
of some pages removes the pages it leaves out, like a page deleted from the space.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from tether.errors import TetherError
from tether.ingest.sources.base import Sink
from tether.ingest.sources.exports.archive import Archive, TooLarge
from tether.ingest.sources.exports.common import (
    ExportSource,
    Page,
    constant,
    failing,
    html_page,
    one_line,
)

_PAGE = re.compile(r"^(?:.*_)?(\d+)\.html?$")
_BASE = re.compile(rb'data-base-url="(https?://[^"<>\s]+)"')
_WHO = re.compile(r"Created by\s+(?P<author>.+?)(?:,|\s+on\s+|$)")
_WHEN = re.compile(r"([A-Z][a-z]{2})\s+(\d{1,2}),\s+(\d{4})")
BASE_SCAN = 200  # pages read at most to find the site's address


def confluence_layout(archive: Archive) -> tuple[str, list[str]] | None:
    """(the space's folder, its page members) when the archive is a space's HTML export: an
    `index.html` at the top or one folder down, and page files beside it, one of the first
    five with a `#main-content`; None otherwise."""
    for index in (n for n in archive.names if PurePosixPath(n).name == "index.html"):
        folder = PurePosixPath(index).parent
        if len(folder.parts) > 1:
            continue
        pages = [
            n
            for n in archive.names
            if PurePosixPath(n).parent == folder and _PAGE.match(PurePosixPath(n).name)
        ]
        if any(_has_main(archive, name) for name in pages[:5]):
            return str(folder), sorted(pages, key=_page_id)
    return None


def _has_main(archive: Archive, name: str) -> bool:
    try:
        return b'id="main-content"' in archive.read(name)
    except TooLarge:
        return False


def _page_id(name: str) -> int:
    match = _PAGE.match(PurePosixPath(name).name)
    return int(match.group(1)) if match else 0


class ConfluenceSource(ExportSource):
    """A Confluence space's HTML export (see the module docstring)."""

    kind: ClassVar[str] = "confluence"
    label: ClassVar[str] = "the Confluence space"

    def __init__(self, path: Path, settings: Mapping[str, Any] | None = None) -> None:
        with Archive(path) as archive:
            layout = confluence_layout(archive)
            if layout is None:
                raise TetherError(f"{path}: not a Confluence space's HTML export")
            self.folder, self.page_names = layout
            index = "index.html" if self.folder in ("", ".") else f"{self.folder}/index.html"
            key, self.space_name = _space_details(archive.read(index), self.folder)
            self.attachments = sum(1 for n in archive.names if "/attachments/" in f"/{n}")
        extra = {"base_url": (settings or {}).get("base_url")}
        super().__init__(path, key, {k: v for k, v in extra.items() if v})

    def expected(self) -> int:
        return len(self.page_names)

    def pages(self, sink: Sink) -> Iterator[Page]:
        with Archive(self.path) as archive:
            base = self.extra.get("base_url") or _find_base(archive, self.page_names)
            if base:
                self.extra["base_url"] = base
            skipped = 0
            for name in self.page_names:
                ident = str(_page_id(name))
                source = (
                    f"{base}/pages/viewpage.action?pageId={ident}"
                    if base
                    else f"confluence://{self.identity}/pages/{ident}"
                )
                try:
                    raw = archive.read(name)
                except TooLarge as exc:
                    yield Page(source, self.identity, failing(exc), "html")
                    continue
                page = _read_page(raw, self.space_name)
                if page is None:
                    skipped += 1
                    continue
                title, trail, body, row = page
                row = {"doc_id": f"confluence/{self.identity}/{ident}", "title": title, **row}
                data = html_page(title, body)
                yield Page(
                    source,
                    self.identity,
                    constant(data),
                    "html",
                    row,
                    trail,
                    archive.modified_ns(name),
                )
        if skipped:
            self.notes.append(f"{skipped} page file(s) without a #main-content: not read")
        if self.attachments:
            self.notes.append(f"attachments not read: {self.attachments} files")


def _find_base(archive: Archive, names: list[str]) -> str | None:
    """The site's address a Cloud export writes into its pages (`data-base-url`), if any."""
    for name in names[:BASE_SCAN]:
        try:
            found = _BASE.search(archive.read(name))
        except TooLarge:
            continue
        if found:
            return found.group(1).decode("ascii", "replace").rstrip("/")
    return None


def _tree(raw: bytes) -> Any | None:
    import lxml.etree
    import lxml.html

    try:
        return lxml.html.document_fromstring(raw, parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (lxml.etree.ParserError, ValueError):
        return None


def _space_details(raw: bytes, folder: str) -> tuple[str, str]:
    """(key, name) from index.html's "Space Details" table, else the folder's name."""
    root, details = _tree(raw), dict[str, str]()
    if root is not None:
        for tr in root.iter("tr"):
            cells = [one_line(c.text_content()) for c in tr if c.tag in ("th", "td")]
            if len(cells) == 2:
                details.setdefault(cells[0].rstrip(":").lower(), cells[1])
    key = details.get("key") or (folder if folder not in ("", ".") else "")
    if not key or not re.fullmatch(r"[~\w.-]{1,255}", key):
        raise TetherError(f"a Confluence export whose space key cannot be read ({key!r})")
    title = root.find(".//title") if root is not None else None
    name = details.get("name") or (one_line(title.text_content()) if title is not None else key)
    return key, name


def _read_page(raw: bytes, space: str) -> tuple[str, tuple[str, ...], str, dict[str, str]] | None:
    """(title, the pages above it, its body's HTML, metadata) of a page file; None when it
    has no `#main-content`."""
    import lxml.html

    root = _tree(raw)
    main = root.get_element_by_id("main-content", None) if root is not None else None
    if root is None or main is None:
        return None
    shown = root.get_element_by_id("title-text", None)
    title_el = root.find(".//title")
    title = one_line(
        (shown if shown is not None else title_el).text_content()
        if shown is not None or title_el is not None
        else ""
    )
    if space and title.startswith(f"{space} : "):
        title = title[len(space) + 3 :].strip()
    crumbs = root.get_element_by_id("breadcrumbs", None)
    trail = tuple(
        one_line(a.text_content())
        for a in (crumbs.iter("a") if crumbs is not None else ())
        if (a.get("href") or "") != "index.html" and one_line(a.text_content())
    )
    toc = './/*[contains(concat(" ", normalize-space(@class), " "), " toc-macro ")]'
    for el in [*main.xpath(toc), *main.iter("meta", "title", "base")]:
        el.drop_tree()  # the headings again; labels a page may not give itself (HTML macro)
    body = (main.text or "") + "".join(
        lxml.html.tostring(child, encoding="unicode") for child in main
    )
    row: dict[str, str] = {}
    meta = root.find_class("page-metadata")
    if meta:
        said = one_line(meta[0].text_content())
        if (who := _WHO.search(said)) and one_line(who.group("author")):
            row["owner"] = one_line(who.group("author"))
        if dates := _WHEN.findall(said):
            with contextlib.suppress(ValueError):  # another language's month: no version
                when = datetime.strptime(" ".join(dates[-1]), "%b %d %Y")
                row["version"] = when.date().isoformat()
    return title or "Untitled", trail, body, row
