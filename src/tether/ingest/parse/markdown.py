"""Markdown (CommonMark + tables + strikethrough, markdown-it-py) with YAML front matter.

Front matter is read as YAML with every scalar kept as a string (so `version: 2.10` stays
"2.10" and `title: No` stays "No"); a file starting with a `---` line must close its front
matter with `---` (or `...`). Anchors come only from `{#id}` at the end of a heading or an
`<a name|id>` inside it or in the paragraph just before it. Images are dropped (alt text is not
kept); raw HTML blocks keep their text. A nested list is one block per item (the parent item's
own text first).

What it cannot do: extensions beyond CommonMark + tables + strikethrough (footnotes, definition
lists, admonitions) are parsed as plain CommonMark; the file must be UTF-8 (or UTF-16 with a
BOM); very large Markdown is slow (markdown-it-py parses about 0.5 MB a second).
"""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import yaml

from tether.errors import ParseError
from tether.ingest.metadata import collect_meta
from tether.ingest.parse.blocks import Builder, Parsed, clean, decode


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
    return collect_meta((str(k), v) for k, v in data.items()), body


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


def parse(data: bytes) -> Parsed:
    text = decode(data)
    meta, body = _split_front_matter(text)
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(body)
    b = Builder()
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
                cells.append(clean(" ".join(cell)))
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
