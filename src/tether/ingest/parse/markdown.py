"""Markdown (CommonMark + tables + strikethrough, markdown-it-py) with YAML front matter.

Front matter is read as YAML with every scalar kept as a string (so `version: 2.10` stays
"2.10" and `title: No` stays "No"); a file starting with a `---` line must close its front
matter with `---` (or `...`). Anchors come only from `{#id}` at the end of a heading or an
`<a name|id>` inside it or in the paragraph just before it. Images are dropped (alt text is not
kept); raw HTML blocks keep their text. A nested list is one block per item (the parent item's
own text first).

What it cannot do: extensions beyond CommonMark + tables + strikethrough (footnotes,
definition lists, admonitions) are parsed as plain CommonMark; the file must be UTF-8 (or
UTF-16 with a BOM); very large Markdown is slow (markdown-it-py is pure Python); lists and
quotes nested deeper than `MAX_NESTING` levels keep their text as one paragraph, markers
included (not their structure).
"""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import yaml

from tether.errors import ParseError
from tether.ingest.metadata import collect_meta
from tether.ingest.parse.blocks import Builder, Parsed, clean, decode
from tether.types import BlockKind


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

MAX_NESTING = 100  # block levels parsed as such (a list is two: list and item); deeper is
# kept as paragraph text
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
        data = _load_pairs(block)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 2}" if mark is not None else ""
        raise ParseError(f"front matter is not valid YAML: {problem}{where}") from None
    except RecursionError:
        raise ParseError("front matter is nested too deeply to be read") from None
    if data is None:
        return {}, body
    if not isinstance(data, list):
        kind = "a list" if isinstance(data, tuple) else "a single value"
        raise ParseError(f"front matter must be a mapping of 'key: value' lines, not {kind}")
    return collect_meta((str(k), v) for k, v in data), body


def _load_pairs(block: str) -> Any:
    """The front matter's top-level (key, value) pairs in order, a key given twice kept twice
    (so that `collect_meta` sees two `access` keys that disagree); a tuple for a YAML list,
    None for nothing, else the single value."""
    loader = _FrontMatterLoader(block)  # a SafeLoader subclass
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if isinstance(node, yaml.MappingNode):
            loader.flatten_mapping(node)  # merge keys (<<) become plain pairs
            return [
                (loader.construct_object(k, deep=True), loader.construct_object(v, deep=True))
                for k, v in node.value
            ]
        value = loader.construct_document(node)
        return tuple(value) if isinstance(value, list) else value
    finally:
        loader.dispose()


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

    # markdown-it drops what lies past maxNesting; one rule opens up to 3 levels (a list, its
    # item, a quote) before it parses inside, so the flatten rule must fire well before that
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING + 10})
    md.enable(["table", "strikethrough"]).block.ruler.before("table", "flatten", _flatten_deep)
    try:
        tokens = md.parse(body)
    except RecursionError:
        raise ParseError("Markdown is nested too deeply to be read") from None
    walker = _Walker()
    for tok in tokens:
        walker.step(tok)
    reason = "no text found (the file has front matter but no content)" if meta else None
    return walker.b.result(meta, reason)


def _flatten_deep(state: Any, start: int, end: int, silent: bool) -> bool:
    """A block rule run before the others: at `MAX_NESTING` levels (lists and quotes), the
    rest of the nested block is kept as one paragraph of its text (markers included) instead
    of being parsed deeper, which markdown-it would otherwise drop without a word."""
    if state.level < MAX_NESTING:
        return False
    if not silent:
        content = state.getLines(start, end, state.blkIndent, False).strip()
        state.push("paragraph_open", "p", 1).map = [start, end]
        inline = state.push("inline", "", 0)
        inline.content, inline.map, inline.children = content, [start, end], []
        state.push("paragraph_close", "p", -1)
    state.line = end
    return True


class _Walker:
    """Turns markdown-it tokens into blocks; holds the state between tokens."""

    def __init__(self) -> None:
        self.b = Builder()
        self.heading_level: int | None = None
        self.pending_anchor: str | None = None
        self.items: list[list[str]] = []  # open list items: their text parts not yet emitted
        self.cells: list[str] | None = None  # the current table row
        self.cell: list[str] | None = None
        self.in_thead = False
        self.table = -1

    def added(self, kind: BlockKind, text: str, **extra: Any) -> None:
        """Add a block; a block that was added consumes the pending anchor."""
        if self.b.add(kind, text, **extra):
            self.pending_anchor = None

    def flush_item(self) -> None:
        if self.items and self.items[-1]:
            self.added("list_item", " ".join(self.items[-1]))
            self.items[-1].clear()

    def step(self, tok: Any) -> None:
        kind = tok.type
        if kind == "heading_open":
            self.flush_item()
            self.heading_level = int(tok.tag[1])
        elif kind == "heading_close":
            self.heading_level = None
        elif kind == "inline":
            self.inline(tok)
        elif kind in ("bullet_list_open", "ordered_list_open"):
            self.flush_item()
        elif kind == "list_item_open":
            self.items.append([])
        elif kind == "list_item_close":
            self.flush_item()
            self.items.pop()
        elif kind in ("fence", "code_block"):
            self.flush_item()
            self.added("code", tok.content)
        elif kind == "html_block":
            self.html_block(tok.content)
        else:
            self.table_token(kind)

    def inline(self, tok: Any) -> None:
        content, anchor = _inline_text(tok)
        if self.heading_level is not None:
            match = _HEADING_ID.search(content)
            if match:
                anchor, content = match.group(1), content[: match.start()]
            if self.b.heading(content, self.heading_level, anchor or self.pending_anchor):
                self.pending_anchor = None
        elif self.cell is not None:
            self.cell.append(content)
        elif self.items:
            self.items[-1].append(content)
        elif content.strip():
            self.added("paragraph", content)
        elif anchor:
            self.pending_anchor = anchor  # a paragraph holding only <a name="...">

    def html_block(self, content: str) -> None:
        self.flush_item()
        match = _A_ANCHOR.search(content)
        fragment = _html_fragment_text(content)
        if fragment.strip():
            if self.items:
                self.items[-1].append(fragment)
            else:
                self.added("paragraph", fragment)
        elif match:
            self.pending_anchor = html_lib.unescape(match.group(1))

    def table_token(self, kind: str) -> None:
        if kind == "table_open":
            self.flush_item()
            self.table += 1
        elif kind == "thead_open":
            self.in_thead = True
        elif kind == "thead_close":
            self.in_thead = False
        elif kind == "tr_open":
            self.cells = []
        elif kind in ("th_open", "td_open"):
            self.cell = []
        elif kind in ("th_close", "td_close"):
            if self.cells is not None and self.cell is not None:
                self.cells.append(clean(" ".join(self.cell)))
            self.cell = None
        elif kind == "tr_close":
            if self.cells and any(self.cells):
                row = " | ".join(self.cells)
                self.added("table_row", row, header_row=self.in_thead, table=self.table)
            self.cells = None
