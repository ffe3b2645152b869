"""reStructuredText (docutils): sections as headings, paragraphs, lists, tables, literal blocks,
and metadata from the bibliographic fields at the top of the file or right after its title,
where docutils itself reads them (`:doc_id: vpn-guide`, `:access: public`, `:version: 2`...;
those after the title are taken out of the text).

A section's level is its nesting depth (docutils orders the underline styles as they first
appear); its anchor is its explicit label (`.. _label:` just before it) when it has one, else
the id docutils gives it from its title. Each bullet, enumerated, definition, field or option
list item is one `list_item` (a nested list's items follow their parent's own text); each table
row (grid, simple, csv-table, list-table) is one `table_row`, rows of the table head marked as
header rows; literal, doctest and math blocks are code; admonitions, block quotes, topics and
containers are read through. Directives and roles docutils does not know (Sphinx's
`versionadded`, `:ref:`...) keep their text: a role's text (`:ref:`Install <install>`` gives
"Install"), a directive's argument and body (parsed as reStructuredText); `toctree`, `index`
and the `contents` table are navigation and left out. A title whose underline breaks the
nesting (docutils refuses it) keeps its text as a paragraph. Docutils' own warnings are not
reported.

Safety: `include`, `raw` and the file or URL options of `csv-table` are disabled (a document
cannot pull another file into the index), and no configuration file is read.

What it cannot do: Sphinx cross-references are not resolved (`:ref:`label`` gives "label", not
the target's title); substitutions defined in another file, and `only`/`ifconfig` conditions,
are not applied; the file must be UTF-8 (or UTF-16 with a BOM).
"""

from __future__ import annotations

import io
import re
import textwrap
from typing import Any

from tether.errors import ParseError
from tether.ingest.metadata import collect_meta
from tether.ingest.parse.blocks import Builder, Parsed, decode, short
from tether.types import BlockKind

_SETTINGS: dict[str, Any] = {
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "_disable_config": True,
    "doctitle_xform": False,  # the first title stays a section (a heading, level 1)
    "report_level": 5,
    "halt_level": 5,
    "input_encoding": "unicode",
    "syntax_highlight": "none",
}
_SKIP = frozenset(
    {
        "comment",
        "target",
        "substitution_definition",
        "raw",
        "pending",
        "image",
        "transition",
        "docinfo",
        "meta",
        "label",
        "colspec",
        "decoration",
    }
)
_NAV_DIRECTIVES = frozenset({"toctree", "index", "contents", "sectnum", "tocdepth"})
_CODE = frozenset({"literal_block", "doctest_block", "math_block"})
_LISTS = frozenset({"bullet_list", "enumerated_list"})
_ITEMS = frozenset({"definition_list_item", "field", "option_list_item"})
_ROLE = re.compile(r"^:[\w.+:-]+:`(.*)`$|^`(.*)`:[\w.+:-]+:$", re.DOTALL)
_UNKNOWN_DIRECTIVE = re.compile(r"^\.\.\s+([\w.+:-]+)::[ \t]*(.*)$")
_OPTION = re.compile(r"^\s*:[\w -]+:")
_BAD_TITLE = re.compile(r"title style|title level inconsistent", re.IGNORECASE)


def _doctree(text: str) -> Any:
    try:
        from docutils.core import publish_doctree
    except ImportError:
        raise ParseError(
            "reStructuredText needs the docutils package (pip install docutils)"
        ) from None

    settings = {**_SETTINGS, "warning_stream": io.StringIO()}
    return publish_doctree(text, settings_overrides=settings)


def _role_text(raw: str) -> str:
    match = _ROLE.match(raw.strip())
    if not match:
        return raw
    content = match.group(1) if match.group(1) is not None else match.group(2)
    titled = re.match(r"^(.*?)\s*<[^<>]*>$", content, re.DOTALL)
    return (titled.group(1) if titled and titled.group(1) else content).lstrip("~!")


def _text(node: Any) -> str:
    """The visible text of an inline subtree (an unknown role keeps its text)."""
    from docutils import nodes

    if isinstance(node, nodes.Text):
        return str(node)
    tag = node.tagname
    if tag == "problematic":
        return _role_text(node.astext())
    if tag in _SKIP or tag == "system_message" or tag == "footnote_reference":
        return ""
    return "".join(_text(child) for child in node.children)


def _anchor(section: Any) -> str | None:
    ids = [i for i in section.get("ids", []) if i]
    if not ids:
        return None
    return str(ids[1] if len(ids) > 1 else ids[0])


class _RstWalker:
    def __init__(self, builder: Builder) -> None:
        self.b = builder
        self.tables = 0
        self.depth = 0

    def children(self, node: Any) -> None:
        for child in node.children:
            self.walk(child)

    def walk(self, node: Any) -> None:
        tag = node.tagname
        if tag in _SKIP or (tag == "topic" and "contents" in node.get("classes", [])):
            return
        if tag == "section":
            self.section(node)
        elif tag == "line_block":
            self.b.add("paragraph", " ".join(_text(line) for line in node.findall(_is_line)))
        elif tag in ("paragraph", "title", "rubric", "attribution", "caption"):
            self.b.add("paragraph", _text(node))
        elif tag in _CODE:
            self.b.add("code", node.astext())
        elif tag in _LISTS:
            for item in node.children:
                self.item(item, "list_item")
        elif tag in _ITEMS:
            self.item(node, "list_item", sep=": ")
        elif tag == "table":
            self.table(node)
        elif tag == "system_message":
            self.unknown_directive(node)
        elif tag == "problematic" or not node.children or _is_inline(node):
            self.b.add("paragraph", _text(node))
        else:
            self.children(node)

    def section(self, node: Any) -> None:
        self.depth += 1
        for child in node.children:
            if child.tagname == "title":
                self.b.heading(_text(child), self.depth, _anchor(node))
            else:
                self.walk(child)
        self.depth -= 1

    def item(self, node: Any, kind: BlockKind, sep: str = " ") -> None:
        """One list item: its own text (the term or name first), then its nested blocks."""
        own: list[str] = []
        nested: list[Any] = []
        for child in _flatten_item(node):
            if child.tagname in ("paragraph", "term", "classifier", "field_name", "option_group"):
                own.append(_text(child))
            else:
                nested.append(child)
        self.b.add(kind, sep.join(t for t in own if t.strip()))
        for child in nested:
            self.walk(child)

    def table(self, node: Any) -> None:
        index = self.tables
        self.tables += 1
        for child in node.children:
            if child.tagname == "title":
                self.b.add("paragraph", _text(child))
        for part in node.findall(lambda n: n.tagname in ("thead", "tbody")):
            for row in part.children:
                cells = [" ".join(_text(p) for p in entry.children) for entry in row.children]
                texts = [" ".join(c.split()) for c in cells]
                if any(texts):
                    header = part.tagname == "thead"
                    self.b.add("table_row", " | ".join(texts), header_row=header, table=index)

    def unknown_directive(self, node: Any) -> None:
        """A directive docutils does not know keeps its argument and its body's text; a title
        docutils refused (inconsistent level) keeps its text."""
        blocks = [c for c in node.children if c.tagname == "literal_block"]
        if blocks and _BAD_TITLE.search(node.astext()):
            self.b.add("paragraph", blocks[0].astext().split("\n")[0])  # the title, as text
        if not blocks or "Unknown directive type" not in node.astext():
            return
        first, _, body = blocks[0].astext().partition("\n")
        match = _UNKNOWN_DIRECTIVE.match(first.strip())
        if not match or match.group(1).lower() in _NAV_DIRECTIVES:
            return
        lines = body.split("\n")
        while lines and _OPTION.match(lines[0]):
            lines.pop(0)
        self.b.add("paragraph", match.group(2))
        inner = textwrap.dedent("\n".join(lines)).strip()
        if inner:
            for child in _doctree(inner).children:
                self.walk(child)


def _flatten_item(node: Any) -> list[Any]:
    """The parts of a list item, a definition's or field body's own parts brought up."""
    parts: list[Any] = []
    for child in node.children:
        if child.tagname in ("definition", "field_body", "description"):
            parts.extend(child.children)
        else:
            parts.append(child)
    return parts


def _is_line(node: Any) -> bool:
    return bool(node.tagname == "line")


def _is_inline(node: Any) -> bool:
    from docutils import nodes

    return isinstance(node, (nodes.TextElement, nodes.Inline))


def _fields_after_title(tree: Any) -> list[tuple[str, Any]]:
    """The bibliographic fields placed right after the document's title (where docutils reads
    them as docinfo when it lifts the title out; `doctitle_xform` is off here so that the
    title stays a heading): read as metadata and taken out of the text. Only a field list
    that is the first thing under the first section, itself the first thing in the file."""
    first = next((c for c in tree.children if c.tagname not in ("comment", "target")), None)
    if first is None or first.tagname != "section" or len(first.children) < 2:
        return []
    fields = first.children[1]
    if first.children[0].tagname != "title" or fields.tagname != "field_list":
        return []
    pairs = [
        (f.children[0].astext(), f.children[1].astext().strip())
        for f in fields.children
        if f.tagname == "field" and len(f.children) == 2
    ]
    first.remove(fields)
    return pairs


def _docinfo_meta(tree: Any, extra: list[tuple[str, Any]] | None = None) -> dict[str, Any]:
    pairs: list[tuple[str, Any]] = list(extra or ())
    for info in tree.findall(lambda n: n.tagname == "docinfo"):
        for child in info.children:
            if child.tagname == "field" and len(child.children) == 2:
                pairs.append((child.children[0].astext(), child.children[1].astext().strip()))
            elif child.tagname != "authors":
                pairs.append((child.tagname, child.astext().strip()))
    return collect_meta(pairs)


def parse(data: bytes) -> Parsed:
    text = decode(data)
    b = Builder()
    try:
        tree = _doctree(text)
        after_title = _fields_after_title(tree)
        _RstWalker(b).children(tree)
        meta = _docinfo_meta(tree, after_title)
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("reStructuredText cannot be read: nested too deeply") from None
    except Exception as exc:  # docutils raises several types on input it cannot handle
        raise ParseError(f"reStructuredText cannot be read: {short(exc)}") from None
    return b.result(meta, "no text found (only comments, targets or directives)")
