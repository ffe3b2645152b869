"""Metadata: the optional inventory.csv, metadata keys and their aliases, building a DocMeta.

- `load_inventory(folder)` reads the optional `inventory.csv` (a `path` column plus metadata
  columns); its non-empty cells override what a file says about itself. It is strict: an
  unknown column (a typo such as "efective_from") is an error rather than silently ignored;
  values are validated when each document is parsed, and the error then starts with
  "inventory.csv: ".
- `collect_meta(pairs)` keeps the known fields of (key, value) pairs: keys are matched ignoring
  case and non-alphanumerics ("effective-from", "EffectiveFrom" and "effective_from" are the
  same key); a few aliases are accepted with lower priority (id, type, lang, author,
  review_date, next_review).
- `build_meta(...)` merges and validates: inventory row (non-empty cells) > the file's own
  metadata > defaults (doc_id = the path relative to the collection root without its
  extension, `guides/setup/README`, see `path_doc_id`; version "1", title = first heading or
  the file stem, doc_type "document", access = `default_access` ("staff": fail-closed),
  language detected with py3langid among en/fr/de/es/it/pt/nl; no review date). Dates
  (effective_from, effective_to, review_by) must be YYYY-MM-DD;
  language codes are reduced to their primary subtag ("en-GB" -> "en").
- doc_ids (`clean_doc_id`), wherever they come from: NFKC (a fullwidth "ｐolicy" is "policy"),
  surrounding whitespace stripped ("policy " is "policy"); one that holds a format character
  (category Cf: a zero-width space or joiner, a bidi mark, a soft hyphen) is refused.
  `lookalike_doc_ids` names the different doc_ids that look alike (a Cyrillic "о" for a Latin
  "o": one UTS #39 skeleton, `doc_id_skeleton`), for a warning.

Access labels fail closed: labels that disagree within one file (two `access` keys, `Access:`
beside `access:`, two meta tags, an alias beside the key) make it staff, with a warning
(`AccessConflict`); `inventory_warnings` names the inventory rows that match no file, or match
one only in another case (those rows are not applied).

What it cannot do: it knows the fields of `META_FIELDS` only (other keys are ignored in files
and refused in inventory.csv); other fields given twice keep the first canonical spelling; two
doc_ids that differ only by plain ASCII characters ("doc-I" and "doc-l") are not called
look-alikes, nor are two that differ by an accent or a letter case; a look-alike is a warning,
not a refusal (a French doc_id beside an English one is legitimate).
"""

from __future__ import annotations

import csv
import io
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from tether.errors import ParseError
from tether.ingest.discover import INVENTORY_FILE, read_regular
from tether.ingest.parse.blocks import clean, utf8_problem
from tether.text import detect_language
from tether.types import Access, DocMeta, FileFormat

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
    "review_by",
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
    "reviewdate": ("review_by", 1),
    "nextreview": ("review_by", 1),
    "nextreviewdate": ("review_by", 1),
    "reviewdue": ("review_by", 1),
}


def load_inventory(folder: Path) -> dict[str, dict[str, str]]:
    """Read `folder/inventory.csv`: {relative path: {field: value}}, empty cells dropped.

    Columns: `path` plus metadata fields (doc_id, version, title, doc_type, access, language,
    effective_from, effective_to, owner, review_by; spelled with any case, dashes or spaces).
    A missing file gives {}. Raises `ParseError` for a file without a `path` column, an
    unknown column, an empty or repeated path, or a file that is not UTF-8 CSV. Values are
    validated when the document is parsed.
    """
    path = Path(folder) / INVENTORY_FILE
    if not os.path.lexists(path):
        return {}
    try:
        raw, _ = read_regular(path)  # a FIFO or a device is refused, the size checked first
    except ParseError as exc:
        raise ParseError(f"{INVENTORY_FILE}: {exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{INVENTORY_FILE}: {utf8_problem(raw, exc)}") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise ParseError(
                f"{INVENTORY_FILE}: empty file (expected a header with a 'path' column)"
            )
        if "path" not in {squash(name) for name in header}:
            raise ParseError(f"{INVENTORY_FILE}: no 'path' column in the header")
        columns: list[str | None] = []
        for name in header:
            key = squash(name)
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


def squash(key: str) -> str:
    return re.sub(r"[^0-9a-z]", "", str(key).lower())


class AccessConflict(tuple):
    """The different access labels one file gives itself (`access: public` and `Access:
    staff`, two `access` keys, two meta tags): `build_meta` indexes such a file as staff and
    says why."""

    def describe(self) -> str:
        return f"conflicting access labels ({', '.join(map(str, self))}): indexed as staff"


def collect_meta(pairs: Iterator[tuple[str, Any]] | list[tuple[str, Any]]) -> dict[str, Any]:
    """Known fields from (key, value) pairs; canonical spellings beat aliases; empty skipped.
    Access labels that differ (compared without case and spaces; aliases count too) give an
    `AccessConflict` instead of one of them."""
    best: dict[str, tuple[int, Any]] = {}
    access: dict[str, str] = {}
    for key, value in pairs:
        alias = _KEY_ALIASES.get(squash(key))
        if alias is None or value is None or (isinstance(value, str) and not value.strip()):
            continue
        name, priority = alias
        if name == "access":
            access.setdefault(str(value).strip().lower(), str(value).strip())
        if name not in best or priority < best[name][0]:
            best[name] = (priority, value)
    found = {name: value for name, (_, value) in best.items()}
    if len(access) > 1:
        found["access"] = AccessConflict(access.values())
    return found


def properties_meta(
    fields: list[tuple[str, Any]], keywords: str, explicit: list[tuple[str, Any]]
) -> dict[str, Any]:
    """Metadata of an office document or PDF: its standard `fields` (title, author...),
    `key=value` pairs in its `keywords` (separated by ";" or newlines), then its `explicit`
    custom properties (/DocId, a DOCX custom property), which win over the keywords. Access
    labels that disagree anywhere among them stay an `AccessConflict` (fail closed)."""
    pairs = list(fields)
    for part in re.split(r"[;\n]", keywords):
        key, sep, value = part.partition("=")
        if sep and key.strip() and squash(key) not in ("author", "title"):
            pairs.append((key.strip(), value.strip()))
    meta = collect_meta(pairs)
    meta.update(collect_meta(explicit))
    access = collect_meta([*pairs, *explicit]).get("access")
    if isinstance(access, AccessConflict):
        meta["access"] = access
    return meta


def inventory_warnings(inventory: Mapping[str, Mapping[str, str]], sources: set[str]) -> list[str]:
    """Warnings for inventory rows that apply to no file: a path that matches no file, or
    one that matches a file only in another case (such a row is not applied)."""
    by_fold: dict[str, list[str]] = {}
    for source in sources:
        by_fold.setdefault(source.casefold(), []).append(source)
    warnings: list[str] = []
    for rel in inventory:
        if rel in sources:
            continue
        other = sorted(by_fold.get(rel.casefold(), ()))
        if other:
            warnings.append(
                f"{INVENTORY_FILE}: path '{rel}' matches {', '.join(other)} only in another"
                " case: its row is not applied (write the path as the file is named)"
            )
        else:
            warnings.append(f"{INVENTORY_FILE}: path '{rel}' matches no file")
    return warnings


def build_meta(
    file_meta: dict[str, Any],
    inventory_row: Mapping[str, str],
    *,
    source: str,
    fmt: FileFormat,
    first_heading: str | None,
    text: str,
    default_access: str,
    warnings: list[str] | None = None,
) -> DocMeta:
    """The DocMeta of a file (see the module docstring); a file whose access labels conflict
    (`AccessConflict`) fails closed to staff, and why is added to `warnings`."""
    row = collect_meta(list(inventory_row.items()))
    merged: dict[str, tuple[Any, str]] = {k: (v, "") for k, v in file_meta.items()}
    merged.update({k: (v, f"{INVENTORY_FILE}: ") for k, v in row.items()})
    own, listed = file_meta.get("access"), row.get("access")
    if (  # the inventory may add a label, never turn a file's own label into another one
        own is not None
        and listed is not None
        and not isinstance(own, AccessConflict)
        and str(own).strip().lower() != str(listed).strip().lower()
    ):
        merged["access"] = (AccessConflict((f"{own} in the file", f"{listed} in {INVENTORY_FILE}")), "")

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
    given, origin = scalar("doc_id")
    doc_id = clean_doc_id(given, origin) if given else clean_doc_id(path_doc_id(source), None)
    version = scalar("version")[0] or "1"
    title = clean(scalar("title")[0] or "") or first_heading or stem
    doc_type = scalar("doc_type")[0] or "document"
    owner = scalar("owner")[0]

    conflict = merged.get("access", (None, ""))[0]
    if isinstance(conflict, AccessConflict):
        merged["access"] = ("staff", "")
        if warnings is not None:
            warnings.append(conflict.describe())
    access_value, origin = scalar("access")
    access = (access_value or default_access).strip().lower()
    if access not in ACCESS_VALUES:
        shown = access_value if access_value is not None else default_access
        raise ParseError(f"{origin}access '{shown}' is not public or staff")

    language = _language(*scalar("language"), text)

    effective_from = _date_field("effective_from", merged)
    effective_to = _date_field("effective_to", merged)
    if effective_from and effective_to and effective_to < effective_from:
        raise ParseError(
            f"effective_to {effective_to.isoformat()} is before effective_from "
            f"{effective_from.isoformat()}"
        )
    review_by = _date_field("review_by", merged)
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
        review_by=review_by,
        source=source,
        format=fmt,
    )


def has_access_label(file_meta: Mapping[str, Any], inventory_row: Mapping[str, str] | None) -> bool:
    """Whether a file or its inventory row gives it an access label (else `default_access`
    decides)."""
    row = collect_meta(list((inventory_row or {}).items()))
    return any(
        value is not None and str(value).strip()
        for value in (file_meta.get("access"), row.get("access"))
    )


MAX_DOC_ID = 512  # characters: a path-like ID, never a paragraph


def clean_doc_id(value: str, origin: str | None) -> str:
    """A doc_id as it is stored: NFKC (a fullwidth or compatibility form is the letter it
    stands for: "ｐolicy" is "policy"), surrounding whitespace stripped. `ParseError` when it is
    empty or holds a format character (category Cf: zero-width space and joiners, bidi marks,
    soft hyphen, word joiner, tags) or a filler (`_FILLERS`: Hangul fillers, the combining
    grapheme joiner; a variation selector is only warned of, as emoji use them), or a control
    character (NUL, a line break: category Cc), or has an empty, "." or ".." part between
    slashes ("../staff", "x/"), or is longer than `MAX_DOC_ID` characters; `origin` is where
    the value came from ("" the file, "inventory.csv: " its row, None the file's path)."""
    doc_id = unicodedata.normalize("NFKC", value).strip()
    where = "the doc_id that the file's path gives" if origin is None else f"{origin}doc_id"
    if not doc_id:
        raise ParseError(f"{where} is empty")
    if len(doc_id) > MAX_DOC_ID:
        raise ParseError(f"{where} is {len(doc_id):,} characters long; at most {MAX_DOC_ID}")
    control = [ch for ch in dict.fromkeys(doc_id) if unicodedata.category(ch) == "Cc"]
    if control:
        names = ", ".join(f"U+{ord(ch):04X}" for ch in control)
        raise ParseError(f"{where} holds a control character ({names}); doc_ids are one line of text")
    hidden = [
        ch
        for ch in dict.fromkeys(doc_id)
        if unicodedata.category(ch) == "Cf" or ord(ch) in _FILLERS
    ]
    if hidden:
        shown = "".join(f"\\u{ord(ch):04x}" if ch in hidden else ch for ch in doc_id)
        names = ", ".join(_character(ch) for ch in hidden)
        fix = "rename the file or give it a doc_id" if origin is None else "write it without one"
        raise ParseError(f"{where} '{shown}' holds an invisible character ({names}); {fix}")
    if any(part in ("", ".", "..") for part in doc_id.split("/")):
        raise ParseError(
            f"{where} '{doc_id}' reads as a path with an empty, '.' or '..' part; a doc_id"
            " names one document (slashes only between names: 'guides/returns')"
        )
    return doc_id


def _character(ch: str) -> str:
    """`U+200B ZERO WIDTH SPACE`."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"


# Default-ignorable code points that are not format characters: invisible, left out of a
# doc_id's skeleton (the combining grapheme joiner, Hangul fillers, variation selectors...)
_IGNORABLE = frozenset(
    (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810))
).union(range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0))
# Of those, the ones that are nothing but blank space: refused in a doc_id like format characters
_FILLERS = frozenset((0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0))
# ASCII characters that look alike in common fonts (UTS #39 maps them so too)
_ASCII_ALIKE = str.maketrans({"I": "l", "1": "l", "|": "l", "0": "O"})
# letters that look Latin but whose UTS #39 prototype is not ASCII
_LOOKALIKES = {"к": "k", "κ": "k", "ĸ": "k", "ᴋ": "k"}


def doc_id_skeleton(doc_id: str) -> str:
    """What a doc_id looks like (after UTS #39's skeleton): NFKC, invisible characters left
    out, each letter of another script that imitates an ASCII one (Cyrillic "о", Greek "ο")
    replaced by it, from the Unicode confusables data of `confusable_homoglyphs`. Two doc_ids
    with one skeleton are look-alikes."""
    text = unicodedata.normalize("NFKC", doc_id)
    if not text.isascii():
        from confusable_homoglyphs.confusables import confusables_data

        out: list[str] = []
        for ch in text:
            if ch.isascii():
                out.append(ch)
            elif unicodedata.category(ch) == "Cf" or ord(ch) in _IGNORABLE:
                continue
            elif ch in _LOOKALIKES:
                out.append(_LOOKALIKES[ch])
            else:
                like = (g["c"] for g in confusables_data.get(ch, ()) if str(g["c"]).isascii())
                out.append(next(like, ch))
        text = "".join(out)
    return text.translate(_ASCII_ALIKE)


def lookalike_doc_ids(doc_ids: Mapping[str, str]) -> list[str]:
    """A warning for each set of different doc_ids that look alike (one skeleton, at least one
    of them not plain ASCII), naming each with its source; `doc_ids` maps a source to its
    doc_id."""
    groups: dict[str, dict[str, list[str]]] = {}
    for source, doc_id in doc_ids.items():
        if doc_id.isascii() and doc_id.translate(_ASCII_ALIKE) == doc_id:
            key = doc_id  # the common case, without the confusables table
        else:
            key = doc_id_skeleton(doc_id)
        groups.setdefault(key, {}).setdefault(doc_id, []).append(source)
    warnings: list[str] = []
    for group in groups.values():
        if len(group) < 2 or all(doc_id.isascii() for doc_id in group):
            continue
        ordered = sorted(group, key=lambda d: (not d.isascii(), d))
        named = [
            f"'{doc_id}' ({', '.join(sorted(group[doc_id]))}"
            + "".join(f", {_character(ch)}" for ch in dict.fromkeys(doc_id) if not ch.isascii())
            + ")"
            for doc_id in ordered
        ]
        warnings.append(
            f"doc_ids that look alike: {' and '.join(named)}; a reader cannot tell them apart"
            " (give one another doc_id)"
        )
    return sorted(warnings)


def path_doc_id(source: str) -> str:
    """The doc_id of a file without one: its collection-relative path without the extension
    (`guides/setup/README.md` -> `guides/setup/README`), so files that share a name in
    different folders are different documents. A web page's source is its URL
    (`tether.ingest.sources`): its path is read the same way, a folder's page named `index`
    and the query kept (`https://h/guide/setup/intro.html` -> `guide/setup/intro`,
    `https://h/guide/` -> `guide/index`, `https://h/cal.html?m=2` -> `cal?m=2`)."""
    query = ""
    if "://" in source:  # no collection-relative path holds "//"
        parts = urlsplit(source)
        source = unquote(parts.path).lstrip("/")
        source += "index" if not source or source.endswith("/") else ""
        query = f"?{parts.query}" if parts.query else ""
    path = PurePosixPath(source)
    name = path.stem or path.name or "document"
    return str(path.with_name(name)) + query


def _language(value: str | None, origin: str, text: str) -> str:
    """The language code a file states (en, fr-CA → fr), else the one detected in `text`."""
    if not value:
        return detect_language(text)
    language = re.split(r"[-_]", value.strip().lower())[0]
    if not re.fullmatch(r"[a-z]{2,3}", language):
        raise ParseError(f"{origin}language '{value}' is not a language code (use e.g. en or fr)")
    return language


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
