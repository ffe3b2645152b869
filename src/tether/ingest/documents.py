"""Documents: find the files of a collection, read their metadata, parse them into blocks.

What it does
------------
- `discover(folder)` lists the files tether can read (.md/.markdown, .html/.htm, .pdf, .txt),
  recursively and sorted, skipping hidden files and folders and `inventory.csv`.
- `load_inventory(folder)` reads the optional `inventory.csv` (a `path` column plus metadata
  columns); its non-empty cells override what a file says about itself.
- `parse_file(path, folder, inventory)` reads a file once, hashes its bytes, reads its metadata
  (Markdown front matter, HTML `<meta>` tags, PDF info fields, the inventory row), validates it,
  and parses the content into `Block`s (heading, paragraph, list_item, table_row, code), each
  with its heading path, anchor, page (PDF) and character offsets into `Document.text`.
  `parse_bytes` does the same from bytes already in memory.

Guarantees: for every block, `doc.text[b.start:b.end] == b.text`; block texts are NFC-normalised
and whitespace-collapsed (code keeps its lines and indentation); `Document.text` is the block
texts joined by a blank line. Every problem a user can cause (empty, too large, binary, bad
UTF-8, bad front matter, bad dates, bad access value, unreadable PDF, a PDF without a text
layer, no text at all) raises `ParseError` with a one-line reason.

Decisions
---------
- Metadata precedence: inventory row (non-empty cells) > the file's own metadata > defaults
  (doc_id = file stem, version "1", title = first heading or the stem, doc_type "document",
  access = `default_access` ("staff": fail-closed), language detected with py3langid among
  en/fr/de/es/it/pt/nl). Keys are matched ignoring case and non-alphanumerics
  ("effective-from", "EffectiveFrom" and "effective_from" are the same key); a few aliases are
  accepted with lower priority (id, type, lang, author). Front matter is read as YAML with every
  scalar kept as a string (so `version: 2.10` stays "2.10" and `title: No` stays "No"); dates
  must be YYYY-MM-DD. Language codes are reduced to their primary subtag ("en-GB" -> "en").
  A file starting with a `---` line must close its front matter with `---` (or `...`).
- inventory.csv is strict: an unknown column (a typo such as "efective_from") is an error
  rather than silently ignored; values are validated when each document is parsed, and the
  error then starts with "inventory.csv: ".
- A file that yields no block at all (only front matter, only navigation) is refused:
  "no text found (...)".
- HTML: nav, script, style, svg, noscript, template, iframe/object/embed/canvas, form controls,
  elements with a `hidden` attribute, `aria-hidden="true"`, an inline `display:none` style or
  `role="navigation"` are dropped. Page-level `<header>`/`<footer>` (not inside article, main,
  section or aside) and `role="banner"`/`role="contentinfo"` are dropped too, unless they hold an
  `<h1>`. A heading's anchor is its `id`, else an `<a name|id>` inside it, else an `<a name|id>`
  (alone, or as the only content of an empty element) just before it, else the `id` of a
  `<section>`/`<article>` the heading opens. Text directly inside containers (div, blockquote,
  dd...) becomes a paragraph. A `<meta charset>` other than UTF-8 is honoured.
- Markdown: anchors come only from `{#id}` at the end of a heading or an `<a name|id>` inside
  it or in the paragraph just before it. Images are dropped (alt text is not kept); raw HTML
  blocks keep their text. A nested list is one block per item (the parent item's own text first).
- A block's anchor is the anchor of its innermost section that has one (inherited from an
  enclosing heading when the innermost heading has none).
- PDF (pypdf, layout extraction so vertical gaps become blank lines; plain extraction when the
  layout mode fails): per page, lines are grouped into paragraphs at blank lines and after a
  line that ends a sentence (. ! ? : ;) and is shorter than 70% of the page's longest line. A line
  that starts with a bullet (•, -, *, ...) starts a list item. A line is a heading when it is at
  most 80 characters and 12 words, has no final punctuation, starts with a capital letter or a
  section number ("2.1 Meals", "Section 3 Scope"), and is either alone between blank lines or
  short (under 70% of the longest line); an unnumbered one must also be Title-Cased or ALL CAPS
  unless it is both alone and short. Its level is the depth of its number ("2" -> 1,
  "2.1" -> 2); unnumbered headings are level 1. A page
  number alone on the first or last line of a page is dropped. Lines are joined with a space; a
  line ending in "-" is joined without one (the hyphen is kept).
- Plain text: paragraphs at blank lines; a short line underlined with === (level 1) or ---
  (level 2) is a heading; nothing else is.
- Size: files over `max_bytes` (default 20 MB) are refused before being read.

What it cannot do
-----------------
- No OCR: a scanned PDF without a text layer is refused. PDF tables come out as paragraphs, PDF
  reading order is pypdf's (multi-column pages may interleave), PDF headings are a guess.
- No rendering: CSS-hidden content other than inline `display:none`/`visibility:hidden` is
  kept, and JavaScript-built pages yield only their static HTML.
- Markdown extensions beyond CommonMark + tables + strikethrough (footnotes, definition lists,
  admonitions) are parsed as plain CommonMark.
- Markdown and plain text must be UTF-8 (or UTF-16 with a BOM); other encodings are refused.
  HTML may declare another charset with `<meta charset>`.
- Very large Markdown is slow (markdown-it-py parses about 0.5 MB a second).
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import html as html_lib
import io
import os
import re
import textwrap
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any, cast

import yaml

from tether.errors import ParseError, TetherError
from tether.text import DETECTABLE_LANGUAGES, detect_language
from tether.types import Access, Block, BlockKind, DocMeta, Document, FileFormat

__all__ = [
    "DETECTABLE_LANGUAGES",
    "INVENTORY_FILE",
    "META_FIELDS",
    "SUFFIXES",
    "detect_language",
    "discover",
    "load_inventory",
    "parse_bytes",
    "parse_file",
]

SUFFIXES: dict[str, FileFormat] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".txt": "text",
}
INVENTORY_FILE = "inventory.csv"
META_FIELDS: tuple[str, ...] = (
    "doc_id",
    "version",
    "title",
    "doc_type",
    "access",
    "language",
    "effective_from",
    "effective_to",
    "owner",
)
ACCESS_VALUES: tuple[str, ...] = ("public", "staff")

# Key spelling (lowercase, alphanumerics only) -> (field, priority); lower priority wins.
_KEY_ALIASES: dict[str, tuple[str, int]] = {
    **{f.replace("_", ""): (f, 0) for f in META_FIELDS},
    "documentid": ("doc_id", 1),
    "id": ("doc_id", 2),
    "documenttype": ("doc_type", 1),
    "type": ("doc_type", 2),
    "lang": ("language", 1),
    "contentlanguage": ("language", 2),
    "validfrom": ("effective_from", 1),
    "effectivedate": ("effective_from", 2),
    "validto": ("effective_to", 1),
    "effectiveuntil": ("effective_to", 1),
    "validuntil": ("effective_to", 1),
    "author": ("owner", 2),
}

_SNIFF_BYTES = 8192
_PARA_SEP = "\n\n"


# --------------------------------------------------------------------------- discovery


def discover(folder: Path) -> list[Path]:
    """The readable files under `folder`, recursively, sorted by relative path.

    Hidden files and folders (name starting with ".") and `inventory.csv` are skipped; the
    suffix match ignores case. Raises `TetherError` when `folder` is not a directory.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise TetherError(f"collection folder not found: {folder}")
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        base = Path(dirpath)
        for name in filenames:
            if name.startswith(".") or name.lower() == INVENTORY_FILE:
                continue
            if Path(name).suffix.lower() not in SUFFIXES:
                continue
            path = base / name
            found.append((path.relative_to(folder).as_posix(), path))
    found.sort(key=lambda item: item[0])
    return [path for _, path in found]


# --------------------------------------------------------------------------- inventory


def load_inventory(folder: Path) -> dict[str, dict[str, str]]:
    """Read `folder/inventory.csv`: {relative path: {field: value}}, empty cells dropped.

    Columns: `path` plus metadata fields (doc_id, version, title, doc_type, access, language,
    effective_from, effective_to, owner; spelled with any case, dashes or spaces). A missing
    file gives {}. Raises `ParseError` for a file without a `path` column, an unknown column,
    an empty or repeated path, or a file that is not UTF-8 CSV. Values are validated when the
    document is parsed.
    """
    path = Path(folder) / INVENTORY_FILE
    if not path.is_file():
        return {}
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ParseError(f"{INVENTORY_FILE}: cannot read file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{INVENTORY_FILE}: {_utf8_problem(raw, exc)}") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise ParseError(
                f"{INVENTORY_FILE}: empty file (expected a header with a 'path' column)"
            )
        if "path" not in {_squash(name) for name in header}:
            raise ParseError(f"{INVENTORY_FILE}: no 'path' column in the header")
        columns: list[str | None] = []
        for name in header:
            key = _squash(name)
            if key == "path":
                columns.append("path")
            elif key in _KEY_ALIASES and _KEY_ALIASES[key][1] == 0:
                columns.append(_KEY_ALIASES[key][0])
            elif not name.strip():
                columns.append(None)  # an unnamed (usually empty trailing) column
            else:
                known = ", ".join(("path", *META_FIELDS))
                raise ParseError(
                    f"{INVENTORY_FILE}: unknown column '{name.strip()}' (known: {known})"
                )
        named = [c for c in columns if c]
        if len(set(named)) != len(named):
            raise ParseError(f"{INVENTORY_FILE}: a column appears twice in the header")
        result: dict[str, dict[str, str]] = {}
        first_line: dict[str, int] = {}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            cells = {col: cell.strip() for col, cell in zip(columns, row, strict=False) if col}
            rel = _clean_rel_path(cells.pop("path", ""))
            if not rel:
                raise ParseError(f"{INVENTORY_FILE}: line {line} has an empty path")
            if rel in result:
                raise ParseError(
                    f"{INVENTORY_FILE}: path '{rel}' appears twice (lines {first_line[rel]} "
                    f"and {line})"
                )
            first_line[rel] = line
            result[rel] = {k: v for k, v in cells.items() if v}
    except csv.Error as exc:
        raise ParseError(
            f"{INVENTORY_FILE}: not valid CSV ({exc}, line {reader.line_num})"
        ) from None
    return result


def _clean_rel_path(value: str) -> str:
    value = value.strip().replace("\\", "/")
    while value.startswith("./"):
        value = value[2:]
    return value


# --------------------------------------------------------------------------- entry points


def parse_file(
    path: Path,
    folder: Path,
    inventory: dict[str, dict[str, str]] | None = None,
    *,
    default_access: str = "staff",
    max_bytes: int = 20_000_000,
) -> Document:
    """Parse one file of the collection in `folder` (its source is the path relative to it).

    The file is refused before reading when it is over `max_bytes`. The inventory row for the
    file's relative path (if any) overrides the file's own metadata.
    """
    path = Path(path)
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(SUFFIXES)
        raise ParseError(f"unsupported file type '{path.suffix or path.name}' (known: {known})")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ParseError(_too_big(size, max_bytes))
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ParseError(_too_big(len(data), max_bytes))
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
    parser = _PARSERS.get(fmt)
    if parser is None:
        raise ValueError(f"unknown format {fmt!r}; expected one of {sorted(_PARSERS)}")
    if not data:
        raise ParseError("empty file")
    parsed = parser(data)
    if not parsed.blocks:
        raise ParseError(parsed.empty_reason or "no text found")
    text, blocks = parsed.text, parsed.blocks
    meta = _build_meta(
        parsed.meta,
        inventory_row or {},
        source=source,
        fmt=fmt,
        first_heading=parsed.first_heading,
        text=text,
        default_access=default_access,
    )
    return Document(
        meta=meta, text=text, blocks=blocks, content_hash=hashlib.sha256(data).hexdigest()
    )


def _too_big(size: int, limit: int) -> str:
    if limit >= 1_000_000:
        return f"file is {size / 1e6:.1f} MB, over the {limit / 1e6:g} MB limit"
    return f"file is {size:,} bytes, over the {limit:,} bytes limit"


def _relative_source(path: Path, folder: Path) -> str:
    for p, f in ((path.absolute(), folder.absolute()), (path.resolve(), folder.resolve())):
        try:
            return p.relative_to(f).as_posix()
        except ValueError:
            continue
    return path.name


# --------------------------------------------------------------------------- building blocks


@dataclass
class _Section:
    level: int
    text: str
    anchor: str | None


@dataclass
class _Parsed:
    """What a format parser returns: raw metadata (field -> value) and the built blocks."""

    meta: dict[str, Any]
    text: str
    blocks: tuple[Block, ...]
    first_heading: str | None
    empty_reason: str | None = None


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")


def _clean(text: str) -> str:
    """NFC, control characters removed, whitespace runs collapsed to one space, stripped."""
    text = unicodedata.normalize("NFC", text)
    return " ".join(_CONTROL.sub("", text).split())


def _clean_code(text: str) -> str:
    """NFC, common indentation removed (relative indentation kept), trailing spaces and
    surrounding blank lines removed."""
    text = _CONTROL.sub("", unicodedata.normalize("NFC", text))
    text = (
        text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    )
    lines = [line.rstrip() for line in textwrap.dedent(text).split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


@dataclass
class _Builder:
    """Accumulates blocks, keeps the heading stack and the character offsets."""

    parts: list[str] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    stack: list[_Section] = field(default_factory=list)
    pos: int = 0
    first_heading: str | None = None

    def _anchor(self) -> str | None:
        for section in reversed(self.stack):
            if section.anchor:
                return section.anchor
        return None

    def _append(self, text: str) -> tuple[int, int]:
        if self.parts:
            self.parts.append(_PARA_SEP)
            self.pos += len(_PARA_SEP)
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start, self.pos

    def heading(
        self, text: str, level: int, anchor: str | None = None, page: int | None = None
    ) -> bool:
        text = _clean(text)
        if not text:
            return False
        level = max(1, min(6, level))
        while self.stack and self.stack[-1].level >= level:
            self.stack.pop()
        anchor = (anchor or "").strip() or None
        self.stack.append(_Section(level, text, anchor))
        if self.first_heading is None:
            self.first_heading = text
        start, end = self._append(text)
        self.blocks.append(
            Block(
                kind="heading",
                text=text,
                heading_path=tuple(s.text for s in self.stack),
                start=start,
                end=end,
                anchor=self._anchor(),
                page=page,
                level=level,
            )
        )
        return True

    def add(
        self,
        kind: BlockKind,
        text: str,
        *,
        page: int | None = None,
        header_row: bool = False,
        table: int | None = None,
    ) -> bool:
        text = _clean_code(text) if kind == "code" else _clean(text)
        if not text:
            return False
        start, end = self._append(text)
        self.blocks.append(
            Block(
                kind=kind,
                text=text,
                heading_path=tuple(s.text for s in self.stack),
                start=start,
                end=end,
                anchor=self._anchor(),
                page=page,
                header_row=header_row,
                table=table,
            )
        )
        return True

    def result(self, meta: dict[str, Any], empty_reason: str | None = None) -> _Parsed:
        return _Parsed(
            meta=meta,
            text="".join(self.parts),
            blocks=tuple(self.blocks),
            first_heading=self.first_heading,
            empty_reason=empty_reason,
        )


# --------------------------------------------------------------------------- decoding


def _utf8_problem(data: bytes, exc: UnicodeDecodeError) -> str:
    return f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at position {exc.start})"


def _check_not_binary(data: bytes) -> None:
    sample = data[:_SNIFF_BYTES]
    if b"\x00" in sample:
        raise ParseError("not a text file (binary content)")
    control = sum(1 for b in sample if (b < 32 and b not in (9, 10, 12, 13)) or b == 127)
    if sample and control / len(sample) > 0.1:
        raise ParseError("not a text file (binary content)")


def _decode(data: bytes, encoding: str = "utf-8") -> str:
    """Bytes to text: UTF-16 with a BOM, else `encoding` (UTF-8 by default, BOM dropped).

    Newlines become "\\n". Raises ParseError for binary content, bad bytes or only whitespace.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise ParseError("not valid UTF-16 (the file starts with a UTF-16 BOM)") from None
    else:
        _check_not_binary(data)
        if codecs.lookup(encoding).name == "utf-8":
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ParseError(_utf8_problem(data, exc)) from None
            text = text.removeprefix("\ufeff")
        else:
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ParseError(
                    f"not valid {encoding} (byte 0x{data[exc.start]:02x} at position {exc.start})"
                ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ParseError("empty file (only whitespace)")
    return text


# --------------------------------------------------------------------------- metadata


def _squash(key: str) -> str:
    return re.sub(r"[^0-9a-z]", "", str(key).lower())


def _collect_meta(pairs: Iterator[tuple[str, Any]] | list[tuple[str, Any]]) -> dict[str, Any]:
    """Known fields from (key, value) pairs; canonical spellings beat aliases; empty skipped."""
    best: dict[str, tuple[int, Any]] = {}
    for key, value in pairs:
        alias = _KEY_ALIASES.get(_squash(key))
        if alias is None or value is None or (isinstance(value, str) and not value.strip()):
            continue
        name, priority = alias
        if name not in best or priority < best[name][0]:
            best[name] = (priority, value)
    return {name: value for name, (_, value) in best.items()}


def _build_meta(
    file_meta: dict[str, Any],
    inventory_row: Mapping[str, str],
    *,
    source: str,
    fmt: FileFormat,
    first_heading: str | None,
    text: str,
    default_access: str,
) -> DocMeta:
    row = _collect_meta(list(inventory_row.items()))
    merged: dict[str, tuple[Any, str]] = {k: (v, "") for k, v in file_meta.items()}
    merged.update({k: (v, f"{INVENTORY_FILE}: ") for k, v in row.items()})

    def scalar(name: str) -> tuple[str | None, str]:
        if name not in merged:
            return None, ""
        value, origin = merged[name]
        if isinstance(value, list | tuple | dict | set):
            kind = "mapping" if isinstance(value, dict) else "list"
            raise ParseError(f"{origin}{name} must be a single value, not a {kind}")
        if isinstance(value, datetime):
            value = value.date().isoformat()
        out = unicodedata.normalize("NFC", str(value)).strip()
        if "\n" in out and name != "title":
            raise ParseError(f"{origin}{name} must be one line")
        return (out or None), origin

    stem = PurePosixPath(source).stem or PurePosixPath(source).name or "document"
    doc_id = scalar("doc_id")[0] or stem
    if not doc_id.strip():
        raise ParseError("doc_id is empty")
    version = scalar("version")[0] or "1"
    title = _clean(scalar("title")[0] or "") or first_heading or stem
    doc_type = scalar("doc_type")[0] or "document"
    owner = scalar("owner")[0]

    access_value, origin = scalar("access")
    access = (access_value or default_access).strip().lower()
    if access not in ACCESS_VALUES:
        shown = access_value if access_value is not None else default_access
        raise ParseError(f"{origin}access '{shown}' is not public or staff")

    language_value, origin = scalar("language")
    if language_value:
        language = re.split(r"[-_]", language_value.strip().lower())[0]
        if not re.fullmatch(r"[a-z]{2,3}", language):
            raise ParseError(
                f"{origin}language '{language_value}' is not a language code (use e.g. en or fr)"
            )
    else:
        language = detect_language(text)

    effective_from = _date_field("effective_from", merged)
    effective_to = _date_field("effective_to", merged)
    if effective_from and effective_to and effective_to < effective_from:
        raise ParseError(
            f"effective_to {effective_to.isoformat()} is before effective_from "
            f"{effective_from.isoformat()}"
        )
    return DocMeta(
        doc_id=doc_id,
        version=version,
        title=title,
        doc_type=doc_type,
        access=cast(Access, access),
        language=language,
        effective_from=effective_from,
        effective_to=effective_to,
        owner=owner,
        source=source,
        format=fmt,
    )


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _date_field(name: str, merged: dict[str, tuple[Any, str]]) -> date | None:
    if name not in merged:
        return None
    value, origin = merged[name]
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = str(value).strip()
    if _DATE.fullmatch(text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass
    shown = text if len(text) <= 40 else text[:37] + "..."
    raise ParseError(f"{origin}{name} '{shown}' is not a date (use YYYY-MM-DD)")


# --------------------------------------------------------------------------- Markdown


class _FrontMatterLoader(yaml.SafeLoader):
    """SafeLoader that keeps every scalar as a string (only null is resolved)."""


def _init_front_matter_loader() -> None:
    dropped = {
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp",
    }
    base = _FrontMatterLoader.yaml_implicit_resolvers
    _FrontMatterLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in dropped]
        for first, resolvers in base.items()
    }


_init_front_matter_loader()

_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_HEADING_ID = re.compile(r"\s*\{#([^\s{}]+)\}\s*$")
_A_ANCHOR = re.compile(r"<a\s[^>]*?\b(?:name|id)\s*=\s*[\"']?([^\"'\s>]+)", re.IGNORECASE)


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    first_line, _, rest = text.partition("\n")
    if first_line.rstrip() != "---":
        return {}, text
    close = _FM_CLOSE.search(rest)
    if close is None:
        raise ParseError("front matter starts with '---' but has no closing '---' line")
    block = rest[: close.start()]
    body_start = close.end() + 1 if close.end() < len(rest) else close.end()
    body = "\n" * (block.count("\n") + 2) + rest[body_start:]  # keeps line numbers
    try:
        data = yaml.load(block, Loader=_FrontMatterLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 2}" if mark is not None else ""
        raise ParseError(f"front matter is not valid YAML: {problem}{where}") from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        raise ParseError(f"front matter must be a mapping of 'key: value' lines, not {kind}")
    return _collect_meta((str(k), v) for k, v in data.items()), body


def _inline_text(token: Any) -> tuple[str, str | None]:
    """Plain text of a markdown-it inline token, and an `<a name|id>` anchor found in it."""
    parts: list[str] = []
    anchor: str | None = None
    for child in token.children or []:
        kind = child.type
        if kind in ("text", "text_special", "code_inline"):
            parts.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif kind == "html_inline":
            match = _A_ANCHOR.search(child.content)
            if match and anchor is None:
                anchor = html_lib.unescape(match.group(1))
            elif child.content.lower().startswith("<br"):
                parts.append(" ")
    return "".join(parts), anchor


def _html_fragment_text(fragment: str) -> str:
    fragment = re.sub(r"<!--.*?(-->|$)", " ", fragment, flags=re.DOTALL)
    fragment = re.sub(
        r"<(script|style|svg|template)\b.*?(</\1\s*>|$)", " ", fragment, flags=re.DOTALL | re.I
    )
    return html_lib.unescape(re.sub(r"<[^>]*>", " ", fragment))


def _parse_markdown(data: bytes) -> _Parsed:
    text = _decode(data)
    meta, body = _split_front_matter(text)
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(body)
    b = _Builder()
    heading_level: int | None = None
    pending_anchor: str | None = None
    items: list[list[str]] = []  # open list items: their text parts not yet emitted
    cells: list[str] | None = None  # the current table row
    cell: list[str] | None = None
    in_thead = False
    table = -1

    def flush_item() -> None:
        nonlocal pending_anchor
        if items and items[-1]:
            if b.add("list_item", " ".join(items[-1])):
                pending_anchor = None
            items[-1].clear()

    for tok in tokens:
        kind = tok.type
        if kind == "heading_open":
            flush_item()
            heading_level = int(tok.tag[1])
        elif kind == "heading_close":
            heading_level = None
        elif kind == "inline":
            content, anchor = _inline_text(tok)
            if heading_level is not None:
                match = _HEADING_ID.search(content)
                if match:
                    anchor, content = match.group(1), content[: match.start()]
                if b.heading(content, heading_level, anchor or pending_anchor):
                    pending_anchor = None
            elif cell is not None:
                cell.append(content)
            elif items:
                items[-1].append(content)
            elif content.strip():
                if b.add("paragraph", content):
                    pending_anchor = None
            elif anchor:
                pending_anchor = anchor  # a paragraph holding only <a name="...">
        elif kind in ("bullet_list_open", "ordered_list_open"):
            flush_item()
        elif kind == "list_item_open":
            items.append([])
        elif kind == "list_item_close":
            flush_item()
            items.pop()
        elif kind in ("fence", "code_block"):
            flush_item()
            if b.add("code", tok.content):
                pending_anchor = None
        elif kind == "html_block":
            flush_item()
            match = _A_ANCHOR.search(tok.content)
            fragment = _html_fragment_text(tok.content)
            if fragment.strip():
                if items:
                    items[-1].append(fragment)
                elif b.add("paragraph", fragment):
                    pending_anchor = None
            elif match:
                pending_anchor = html_lib.unescape(match.group(1))
        elif kind == "table_open":
            flush_item()
            table += 1
        elif kind == "thead_open":
            in_thead = True
        elif kind == "thead_close":
            in_thead = False
        elif kind == "tr_open":
            cells = []
        elif kind in ("th_open", "td_open"):
            cell = []
        elif kind in ("th_close", "td_close"):
            if cells is not None and cell is not None:
                cells.append(_clean(" ".join(cell)))
            cell = None
        elif kind == "tr_close":
            if (
                cells
                and any(cells)
                and b.add("table_row", " | ".join(cells), header_row=in_thead, table=table)
            ):
                pending_anchor = None
            cells = None
    reason = "no text found (the file has front matter but no content)" if meta else None
    return b.result(meta, reason)


# --------------------------------------------------------------------------- plain text

_UNDERLINE = re.compile(r"^\s*(={3,}|-{3,})\s*$")
_RULE = re.compile(r"^\s*([=\-_*~#])\1{2,}\s*$")


def _parse_text(data: bytes) -> _Parsed:
    lines = _decode(data).split("\n")
    b = _Builder()
    para: list[str] = []

    def flush() -> None:
        if para:
            b.add("paragraph", " ".join(para))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not line.strip():
            flush()
        elif _UNDERLINE.match(nxt) and len(line.strip()) <= 100 and not _RULE.match(line):
            flush()
            b.heading(line, 1 if "=" in nxt else 2)
            i += 1
        elif _RULE.match(line):
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return b.result({})


# --------------------------------------------------------------------------- HTML

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_DROP_TAGS = frozenset(
    {
        "nav", "script", "style", "svg", "noscript", "template", "iframe", "object", "embed",
        "canvas", "button", "select", "textarea", "input", "audio", "video", "head", "math",
    }
)  # fmt: skip
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hgroup", "hr", "li", "main", "menu", "ol", "p", "pre", "section", "summary",
        "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "center", "html",
        *_HEADINGS,
    }
)  # fmt: skip
_NESTED_IN_LI = frozenset({"ul", "ol", "dl", "table", "pre"})
_SECTIONING = frozenset({"article", "main", "section", "aside"})
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _tag(el: Any) -> str:
    tag = el.tag
    return tag.lower() if isinstance(tag, str) else ""


def _is_hidden(el: Any) -> bool:
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = re.sub(r"\s", "", (el.get("style") or "").lower())
    return "display:none" in style or "visibility:hidden" in style


def _is_page_chrome(el: Any) -> bool:
    """A page-level header/footer/banner: dropped unless it holds the page's <h1>."""
    tag, role = _tag(el), (el.get("role") or "").strip().lower()
    if role in ("banner", "contentinfo"):
        chrome = True
    elif tag in ("header", "footer"):
        chrome = not any(_tag(a) in _SECTIONING for a in el.iterancestors())
    else:
        return False
    return chrome and next(el.iter("h1"), None) is None


def _text_of(el: Any, skip: frozenset[str] = frozenset(), br: str = " ") -> str:
    """Text of `el`, with spaces around block elements and `br`, skipping `skip` subtrees."""
    parts: list[str] = []

    def walk(e: Any) -> None:
        tag = _tag(e)
        if tag == "br":
            parts.append(br)
            return
        block = tag in _BLOCK_TAGS
        if block:
            parts.append(" ")
        if e.text and tag:
            parts.append(e.text)
        for child in e:
            if _tag(child) and _tag(child) not in skip:
                walk(child)
            if child.tail:
                parts.append(child.tail)
        if block:
            parts.append(" ")

    walk(el)
    return "".join(parts)


def _pre_text(el: Any) -> str:
    """Text of a <pre>, verbatim, with <br> as a newline."""
    parts: list[str] = [el.text or ""]
    for child in el:
        if _tag(child) == "br":
            parts.append("\n")
        elif _tag(child):
            parts.append(_pre_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _anchor_in(el: Any) -> str | None:
    for a in el.iter("a"):
        value = a.get("name") or a.get("id")
        if value and value.strip():
            return value.strip()
    return None


def _previous_element(el: Any) -> Any | None:
    prev = el.getprevious()
    while prev is not None and not _tag(prev):
        prev = prev.getprevious()
    return prev


def _heading_anchor(el: Any) -> str | None:
    own = (el.get("id") or "").strip()
    if own:
        return own
    inner = _anchor_in(el)
    if inner:
        return inner
    prev = _previous_element(el)
    if prev is not None and not _text_of(prev).strip():
        if _tag(prev) == "a":
            value = (prev.get("name") or prev.get("id") or "").strip()
            if value:
                return value
        else:
            inner = _anchor_in(prev)
            if inner:
                return inner
    parent = el.getparent()
    if prev is None and parent is not None and _tag(parent) in ("section", "article"):
        value = (parent.get("id") or "").strip()
        if value:
            return value
    return None


def _has_block(el: Any) -> bool:
    return any(_tag(d) in _BLOCK_TAGS for d in el.iter())


class _HtmlWalker:
    def __init__(self, builder: _Builder) -> None:
        self.b = builder
        self.tables = 0

    def walk(self, el: Any, table: int | None = None, in_thead: bool = False) -> None:
        tag = _tag(el)
        if tag in _HEADINGS:
            self.b.heading(_text_of(el), int(tag[1]), _heading_anchor(el))
        elif tag == "p":
            self.b.add("paragraph", _text_of(el))
        elif tag == "pre":
            self.b.add("code", _pre_text(el))
        elif tag == "li":
            self.b.add("list_item", _text_of(el, skip=_NESTED_IN_LI))
            for nested in self._outermost(el, _NESTED_IN_LI):
                self.walk(nested)
        elif tag == "tr":
            row = [c for c in el if _tag(c) in ("td", "th")]
            texts = [_clean(_text_of(c)) for c in row]
            if any(texts):
                header = in_thead or all(_tag(c) == "th" for c in row)
                self.b.add("table_row", " | ".join(texts), header_row=header, table=table)
        elif tag == "table":
            index = self.tables
            self.tables += 1
            self._container(el, index, False)
        elif tag in ("thead", "tbody", "tfoot"):
            self._container(el, table, tag == "thead")
        else:
            self._container(el, table, in_thead)

    def _outermost(self, el: Any, tags: frozenset[str]) -> Iterator[Any]:
        for child in el:
            if _tag(child) in tags:
                yield child
            elif _tag(child):
                yield from self._outermost(child, tags)

    def _container(self, el: Any, table: int | None, in_thead: bool) -> None:
        loose: list[str] = [el.text or ""]

        def flush() -> None:
            self.b.add("paragraph", "".join(loose))
            loose.clear()

        for child in el:
            tag = _tag(child)
            if tag and (tag in _BLOCK_TAGS or _has_block(child)):
                flush()
                self.walk(child, table, in_thead)
            elif tag:
                loose.append(_text_of(child))
            loose.append(child.tail or "")
        flush()


def _html_encoding(data: bytes) -> str:
    match = _CHARSET.search(data[:4096])
    if match:
        try:
            return codecs.lookup(match.group(1).decode("ascii")).name
        except (LookupError, UnicodeDecodeError):
            pass
    return "utf-8"


def _parse_html(data: bytes) -> _Parsed:
    text = _decode(data, _html_encoding(data))
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", " ", text)  # lxml refuses them
    import lxml.etree
    import lxml.html

    try:
        root = lxml.html.document_fromstring(text)
    except (lxml.etree.ParserError, ValueError) as exc:
        if "empty" in str(exc).lower():
            raise ParseError("no text found (the page has no visible text)") from None
        raise ParseError(f"HTML cannot be read: {_short(exc)}") from None

    pairs: list[tuple[str, Any]] = []
    lang = (
        root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang") or ""
    ).strip()
    if lang:
        pairs.append(("contentlanguage", lang))
    for meta_el in root.iter("meta"):
        key = meta_el.get("name") or meta_el.get("property") or meta_el.get("http-equiv")
        content = meta_el.get("content")
        if key and content is not None:
            pairs.append((key, content))
    meta = _collect_meta(pairs)
    title_el = root.find(".//title")
    if "title" not in meta and title_el is not None and _clean(title_el.text_content()):
        meta["title"] = _clean(title_el.text_content())

    body = root.find("body")
    if body is None:
        body = root
    doomed = [
        el
        for el in body.iter()
        if not _tag(el)
        or _tag(el) in _DROP_TAGS
        or _is_hidden(el)
        or (el.get("role") or "").strip().lower() == "navigation"
        or _is_page_chrome(el)
    ]
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()
    b = _Builder()
    try:
        _HtmlWalker(b).walk(body)
    except RecursionError:
        raise ParseError("HTML cannot be read: elements are nested too deeply") from None
    return b.result(meta, "no text found (the page has no visible text)")


# --------------------------------------------------------------------------- PDF

_PAGE_NUMBER = re.compile(
    r"^[-–—(\s]*(?:page\s+)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?[-–—)\s]*$", re.IGNORECASE
)
_BULLET = re.compile(r"^(?:[•●○◦▪▫■□‣⁃∙·*\-–—]|\(?[a-z0-9]{1,2}\))\s+(?=\S)", re.IGNORECASE)
_NUMBERED = re.compile(
    r"^(?:(?:section|chapter|article|part|annex|appendix)\s+)?(\d{1,3}(?:\.\d{1,3})*)\.?\s+(?=\S)",
    re.IGNORECASE,
)
_SENTENCE_END = ".!?:;…"
_SHORT = 0.7


def _pdf_heading_level(line: str, longest: int, alone: bool) -> int | None:
    """The heading level of a PDF line, or None when it does not look like a heading."""
    if not 2 <= len(line) <= 80 or len(line.split()) > 12 or line[-1] in _SENTENCE_END + ",":
        return None
    if _PAGE_NUMBER.match(line) or sum(ch.isalpha() for ch in line) < 2:
        return None
    short = len(line) < _SHORT * longest
    numbered = _NUMBERED.match(line)
    if numbered:
        rest = line[numbered.end() :]
        if not rest[:1].isupper() or not (short or alone):
            return None
        return min(numbered.group(1).count(".") + 1, 6)
    if _BULLET.match(line) or not line[0].isupper():
        return None
    words = [w for w in line.split() if w[:1].isalpha() and len(w) > 3]
    titled = line.isupper() or (
        bool(words) and sum(w[0].isupper() for w in words) >= 0.5 * len(words)
    )
    return 1 if (alone and (short or titled)) or (short and titled) else None


def _join_lines(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha():
            out += line
        else:
            out += " " + line
    return out


def _pdf_page_blocks(page_text: str) -> list[tuple[BlockKind, str, int | None]]:
    """(kind, text, heading level) for one page's extracted text."""
    lines = [" ".join(line.split()) for line in page_text.split("\n")]
    filled = [i for i, line in enumerate(lines) if line]
    for i in {filled[0], filled[-1]} if filled else set():
        if _PAGE_NUMBER.match(lines[i]):
            lines[i] = ""
    longest = max((len(line) for line in lines), default=0)
    chunks: list[list[str]] = [[]]
    for line in lines:
        if line:
            chunks[-1].append(line)
        elif chunks[-1]:
            chunks.append([])
    out: list[tuple[BlockKind, str, int | None]] = []
    for chunk in chunks:
        para: list[str] = []
        kind: BlockKind = "paragraph"
        for line in chunk:
            level = _pdf_heading_level(line, longest, alone=len(chunk) == 1)
            if level is not None:
                if para:
                    out.append((kind, _join_lines(para), None))
                para, kind = [], "paragraph"
                out.append(("heading", line, level))
                continue
            bullet = _BULLET.match(line)
            if bullet:
                if para:
                    out.append((kind, _join_lines(para), None))
                para, kind = [line[bullet.end() :]], "list_item"
            else:
                para.append(line)
            if line[-1] in _SENTENCE_END and len(line) < _SHORT * longest:
                out.append((kind, _join_lines(para), None))
                para, kind = [], "paragraph"
        if para:
            out.append((kind, _join_lines(para), None))
    return out


def _pdf_info_meta(info: Mapping[str, Any] | None) -> dict[str, Any]:
    if not info:
        return {}
    values: dict[str, str] = {}
    for key in list(info.keys()):
        try:
            value = info[key]
            value = value.get_object() if hasattr(value, "get_object") else value
        except Exception:
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if isinstance(value, str) and value.strip():
            values[str(key).lstrip("/")] = value.strip()
    pairs: list[tuple[str, Any]] = []
    title = values.get("Title", "")
    if title and not re.search(r"^microsoft \w+ - |\.(docx?|pdf|odt|rtf)$|^untitled$", title, re.I):
        pairs.append(("title", title))
    if values.get("Author"):
        pairs.append(("author", values["Author"]))
    for part in re.split(r"[;\n]", values.get("Keywords", "")):
        key, sep, value = part.partition("=")
        if sep and key.strip() and _squash(key) not in ("author", "title"):
            pairs.append((key.strip(), value.strip()))
    meta = _collect_meta(pairs)
    custom = _collect_meta(
        (k, v) for k, v in values.items() if _squash(k) not in ("title", "author", "keywords")
    )
    meta.update(custom)  # explicit info keys (/DocId, /Version...) beat /Keywords pairs
    return meta


def _parse_pdf(data: bytes) -> _Parsed:
    if b"%PDF-" not in data[:1024]:
        raise ParseError("PDF cannot be read: no %PDF header (not a PDF file)")
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:
                ok = 0
            if not ok:
                raise ParseError("PDF cannot be read: it is encrypted (password protected)")
        pages = list(reader.pages)
        try:
            info = reader.metadata
        except Exception:
            info = None
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("PDF cannot be read: its structure is nested too deeply") from None
    except Exception as exc:  # pypdf raises many types on malformed files; all mean "bad file"
        raise ParseError(f"PDF cannot be read: {_short(exc)}") from None
    if not pages:
        raise ParseError("PDF cannot be read: it has no pages")

    b = _Builder()
    for number, page in enumerate(pages, start=1):
        for kind, text, level in _pdf_page_blocks(_page_text(page)):
            if kind == "heading":
                b.heading(text, level or 1, page=number)
            else:
                b.add(kind, text, page=number)
    return b.result(_pdf_info_meta(info), "PDF has no text layer (a scanned image?)")


def _page_text(page: Any) -> str:
    try:
        return str(page.extract_text(extraction_mode="layout") or "")
    except Exception:
        pass
    try:
        return str(page.extract_text() or "")
    except Exception as exc:
        raise ParseError(f"PDF cannot be read: {_short(exc)}") from None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


_PARSERS: dict[str, Callable[[bytes], _Parsed]] = {
    "markdown": _parse_markdown,
    "html": _parse_html,
    "pdf": _parse_pdf,
    "text": _parse_text,
}
