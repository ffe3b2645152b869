"""Plain text: paragraphs at blank lines; a short line underlined with === (level 1) or ---
(level 2) is a heading; nothing else is.

What it cannot do: no other structure is recognised (lists and tables come out as
paragraphs); the file must be UTF-8 (or UTF-16 with a BOM).
"""

from __future__ import annotations

import re

from tether.ingest.parse.blocks import Builder, Parsed, decode

_UNDERLINE = re.compile(r"^\s*(={3,}|-{3,})\s*$")
_RULE = re.compile(r"^\s*([=\-_*~#])\1{2,}\s*$")


def parse(data: bytes) -> Parsed:
    lines = decode(data).split("\n")
    b = Builder()
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
