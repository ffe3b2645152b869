"""The formats ingest reads: for each, the file suffixes that pick it and the module whose
`parse(data) -> Parsed` reads it, in one table (`FORMATS`). `SUFFIXES` (suffix → format, what
`tether.ingest.discover` looks for) and the parser `tether.ingest.parse.dispatch` calls are
derived from it; adding a format is one row here and its name in `tether.types.FileFormat`
(the type stored with every document), checked when this module loads.

What it cannot do: it names modules, it imports none (a parser and its library load when a
file of that format is parsed); there is no plugin group for formats, since a format's name is
part of the stored documents' type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import get_args

from tether.types import FileFormat


@dataclass(frozen=True)
class Format:
    """The suffixes that pick a format (lower case, with the dot) and its parser module."""

    suffixes: tuple[str, ...]
    module: str


FORMATS: Mapping[FileFormat, Format] = MappingProxyType(
    {
        "markdown": Format((".md", ".markdown"), "tether.ingest.parse.markdown"),
        "html": Format((".html", ".htm"), "tether.ingest.parse.html"),
        "pdf": Format((".pdf",), "tether.ingest.parse.pdf"),
        "text": Format((".txt",), "tether.ingest.parse.text"),
        "docx": Format((".docx",), "tether.ingest.parse.docx"),
        "rst": Format((".rst",), "tether.ingest.parse.rst"),
    }
)
if set(FORMATS) != set(get_args(FileFormat)):  # the stored type and the table name the same
    raise ImportError(f"FORMATS ({list(FORMATS)}) differ from tether.types.FileFormat")

SUFFIXES: Mapping[str, FileFormat] = MappingProxyType(
    {suffix: name for name, fmt in FORMATS.items() for suffix in fmt.suffixes}
)
"""Suffix → format, in the table's order."""
