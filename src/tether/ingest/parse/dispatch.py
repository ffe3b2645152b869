"""Reading one file of a collection: the format from its suffix, the size limit, the parser of
that format (imported on first use), then the metadata (`build_meta`) and the `Document`.

Every problem a user can cause (empty, too large, binary, bad UTF-8, bad front matter, bad
dates, bad access value, unreadable PDF, a PDF without a text layer, no text at all) raises
`ParseError` with a one-line reason. A file that yields no block at all (only front matter,
only navigation) is refused: "no text found (...)". Only regular files are read, and files over
`max_bytes` (default 20 MB) are refused before being read (`discover.read_regular`).

What it cannot do: it reads the formats of `tether.ingest.parse.formats.FORMATS` only, and a
whole file at once.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from tether.errors import ParseError
from tether.ingest.discover import MAX_BYTES, SUFFIXES, read_regular
from tether.ingest.metadata import build_meta, has_access_label
from tether.ingest.parse.blocks import Parsed
from tether.ingest.parse.formats import FORMATS
from tether.types import DocMeta, Document, FileFormat

_SURROGATE = re.compile("[\ud800-\udfff]")


def _parser(fmt: FileFormat) -> Callable[[bytes], Parsed]:
    found = FORMATS.get(fmt)
    if found is None:
        raise ValueError(f"unknown format {fmt!r}; expected one of {sorted(FORMATS)}")
    return importlib.import_module(found.module).parse


def parse_file(
    path: Path,
    folder: Path,
    inventory: dict[str, dict[str, str]] | None = None,
    *,
    default_access: str = "staff",
    max_bytes: int = MAX_BYTES,
) -> Document:
    """Parse one file of the collection in `folder` (its source is the path relative to it).

    The file is refused before reading when it is over `max_bytes`. The inventory row for the
    file's relative path (if any) overrides the file's own metadata.
    """
    path = Path(path)
    fmt = format_of(path)
    data, _ = read_regular(path, max_bytes)
    source = _relative_source(path, Path(folder))
    row = (inventory or {}).get(source)
    return parse_bytes(data, source, fmt, row, default_access=default_access)


def parse_bytes(
    data: bytes,
    source: str,
    fmt: FileFormat,
    inventory_row: dict[str, str] | None = None,
    *,
    default_access: str = "staff",
) -> Document:
    """Parse `data` as a `fmt` file whose collection-relative path is `source`."""
    parser = _parser(fmt)
    if not data:
        raise ParseError("empty file")
    parsed = parser(data)
    if not parsed.blocks:
        raise ParseError(parsed.empty_reason or "no text found")
    text, blocks = parsed.text, parsed.blocks
    warnings: list[str] = []
    meta = build_meta(
        parsed.meta,
        inventory_row or {},
        source=source,
        fmt=fmt,
        first_heading=parsed.first_heading,
        text=text,
        default_access=default_access,
        warnings=warnings,
    )
    _check_unicode(meta, text)
    return Document(
        meta=meta,
        text=text,
        blocks=blocks,
        content_hash=hashlib.sha256(data).hexdigest(),
        warnings=tuple(warnings),
        access_labelled=has_access_label(parsed.meta, inventory_row),
    )


def _check_unicode(meta: DocMeta, text: str) -> None:
    """A lone surrogate (YAML's "\\ud800", a PDF's broken UTF-16) cannot be stored or hashed:
    the file is refused here rather than failing the whole sync when the index is written."""
    for name, value in (("text", text), *((f.name, getattr(meta, f.name)) for f in fields(meta))):
        if isinstance(value, str) and _SURROGATE.search(value):
            where = name.replace("_", " ")
            raise ParseError(f"the {where} holds a lone surrogate (not a Unicode character)")


def format_of(path: Path) -> FileFormat:
    """The format of a file from its suffix; `ParseError` for a suffix tether does not read."""
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(SUFFIXES)
        raise ParseError(f"unsupported file type '{path.suffix or path.name}' (known: {known})")
    return fmt


def _relative_source(path: Path, folder: Path) -> str:
    for p, f in ((path.absolute(), folder.absolute()), (path.resolve(), folder.resolve())):
        try:
            return p.relative_to(f).as_posix()
        except ValueError:
            continue
    return path.name
