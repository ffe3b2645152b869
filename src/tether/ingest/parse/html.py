"""HTML (lxml): the visible content as blocks, metadata from `<meta>` tags, `lang` and `<title>`.

nav, script, style, svg, noscript, template, iframe/object/embed/canvas, form controls,
elements with a `hidden` attribute, `aria-hidden="true"`, an inline `display:none` style or
`role="navigation"` are dropped, and so is what the page's CSS hides
(`tether.ingest.parse.html_hidden`: `display:none`, `visibility:hidden` or `opacity:0` set by a
`<style>` rule, attribute selectors included, or inline; text in a zero or tiny font size or in
the colour of its background; boxes moved off-screen, scaled to nothing, of zero size with
their overflow hidden or clipped away, screen-reader text excepted; an
element whose own text is hidden but not its children's loses that text only), and so are
blocks whose class names them navigation
(DocBook's `navheader`/`navfooter`, Javadoc's `topNav`/`bottomNav`/`subNav`, Doxygen's
`navpath`, `breadcrumb(s)`, a menu of links: SQLite's `menu mainmenu`, a `tagline` above the
page's first heading). A title
standing in a styled block before any heading (`class="fancy_title"`, `page-title`) becomes an
`<h1>`. Page-level `<header>`/`<footer>` (not inside article, main,
section or aside) and `role="banner"`/`role="contentinfo"` are dropped too, unless they hold an
`<h1>`; so are sidebars and dialogs (`<aside>`, `role="complementary"`, `<dialog>`,
`role="dialog"`) outside an `<article>`, and link bars: an element whose text outside its links
is only navigation words ("Next:", "Previous:", "Up:", "[Index]", "Contents", "Home"...). When
the page has a `<main>` (or `role="main"`), only it is read, or else its one `<article>` when it
has exactly one (an empty one is ignored); the page's first `<h1>` outside it is kept as the
first heading when the content has none. A heading's anchor is its `id`, else an `<a name|id>` inside it, else an
`<a name|id>` (alone, or as the only content of an empty element) just before it, else the `id`
of a `<section>`/`<article>` the heading opens.

Locations: every `id` and named anchor in the content is one (`Builder.mark`): the anchors just
before a heading and inside it belong to the heading; an id on an entry (Sphinx's
`<dt id="os.getcwd">`, DocBook's `<dt id="GUC-PORT">`, a glossary term) starts that entry, and
what follows belongs to it until the next anchor or heading. Generated targets (Sphinx's
`index-3`, DocBook's `id-1.2.3`) are recorded but start no entry; page wrappers and chrome ids
(`content`, `docContent`, `searchmenu`...) are no locations. A heading hidden with
`display:none` whose visible stand-in is the bold paragraph after it gives that paragraph its
level and id; a bold-only paragraph standing after an anchor (or holding one), or a bold
question on a page with several, becomes a heading one level below the last real one (FAQ
entries); a note box's title ("Note" in `<div class="note">`) stays a paragraph; permalink
marks (¶, #, §) lose their text and keep their id. An empty anchor hidden from screen readers
(`aria-hidden`) still counts as a location. Text directly inside containers (div, blockquote,
dd...) becomes a paragraph. A `<meta charset>` other than UTF-8 is honoured when it names a
text encoding; a page without one that is not UTF-8 is decoded with the detected encoding.
Elements nested deeper than `MAX_DEPTH` keep their text as one block; a page nested so deep
that libxml2 stops (2048 levels) is refused rather than cut short.

This module decodes the page, drops what is hidden or chrome, and walks the rest into blocks;
`html_tree` reads single elements (text, locations), `html_chrome` tells chrome and redirects,
and `html_repair` mends the tree before the walk.

What it cannot do: no rendering: CSS hides only what `tether.ingest.parse.html_hidden` can
see (no external stylesheets, no layout: see there), and JavaScript-built pages yield only
their static HTML; chrome is recognised by tags, roles and common id and class names, so a site's menu
built of plain lists with no such name is read as content; text drawn in SVG (SQLite's syntax
diagrams) is dropped with the SVG; a bold paragraph that is a label, not a question,
becomes a heading only after an anchor.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import Any

import lxml.etree
import lxml.html

from tether.errors import ParseError
from tether.ingest.metadata import collect_meta
from tether.ingest.parse.blocks import Builder, Parsed, clean, decode, short
from tether.ingest.parse.html_chrome import MENU_LINK_SHARE as MENU_LINK_SHARE
from tether.ingest.parse.html_chrome import REDIRECT_DELAY_S as REDIRECT_DELAY_S
from tether.ingest.parse.html_chrome import REDIRECT_WORDS as REDIRECT_WORDS
from tether.ingest.parse.html_chrome import (
    TAGLINE_CLASS,
    before_first_heading,
    content_root,
    is_link_bar,
    is_nav_class,
    is_page_chrome,
    is_redirect,
    is_sidebar,
    is_site_menu,
    promote_title_block,
)
from tether.ingest.parse.html_hidden import hide_by_css as _hide_by_css
from tether.ingest.parse.html_hidden import is_hidden as _is_hidden
from tether.ingest.parse.html_repair import MAX_DEPTH as MAX_DEPTH
from tether.ingest.parse.html_repair import (
    PSEUDO,
    flatten_deep,
    promote_bold_questions,
    promote_hidden_headings,
    quiet_footnote_marks,
    quiet_permalinks,
)
from tether.ingest.parse.html_tree import (
    BLOCK_TAGS,
    HEADINGS,
    has_block,
    has_block_child,
    has_class,
    heading_anchor,
    is_admonition_title,
    is_empty_anchor,
    locations,
    names_of,
    tag_of,
    text_of,
)

_DROP_TAGS = frozenset(
    (
        "nav script style svg noscript template iframe object embed canvas button select"
        " textarea input audio video head math"
    ).split()
)
_NESTED_IN_LI = frozenset({"ul", "ol", "dl", "table", "pre"})
_LEAVES = frozenset({"p", "pre", "li", "tr", "dt"})  # blocks whose inner ids start at them
_ALL = frozenset({"*"})  # skip every child: only the element's own id
# generated targets (Sphinx index entries, DocBook's numbered ids): recorded, never an entry
_MINOR_ID = re.compile(r"index-\d+|id\d+|x\d+|id-[\d.]+")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _pre_text(el: Any) -> str:
    """Text of a <pre>, verbatim, with <br> as a newline."""
    parts: list[str] = [el.text or ""]
    for child in el:
        if tag_of(child) == "br":
            parts.append("\n")
        elif tag_of(child):
            parts.append(_pre_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


class _HtmlWalker:
    def __init__(self, builder: Builder) -> None:
        self.b = builder
        self.tables = 0
        self.level = 1  # the level of the last real heading (a pseudo-heading goes below it)

    def mark(self, el: Any, skip: frozenset[str] = frozenset()) -> None:
        """The locations in `el` (its own id and those inside it) start at the next block."""
        for name in locations(el, skip):
            self.b.mark(name, moves=not _MINOR_ID.fullmatch(name))

    def heading(self, el: Any, tag: str) -> None:
        if is_admonition_title(el):  # DocBook's <div class="note"><h3>Note</h3>: no section
            self.mark(el, skip=_NESTED_IN_LI)
            self.b.add("paragraph", text_of(el))
            return
        if el.get(PSEUDO) is not None:
            level = min(6, self.level + 1)
        else:
            level = self.level = int(tag[1])
        if has_block_child(el):  # left open (`<h2>…</h1>`), it swallowed what follows
            rest = el.makeelement("div", {})
            for child in list(el):
                rest.append(child)  # its tail goes with it
            self.b.heading(el.text or "", level, heading_anchor(el), anchors=tuple(names_of(el)))
            self.walk(rest)
            return
        self.b.heading(text_of(el), level, heading_anchor(el), anchors=tuple(locations(el)))

    def walk(self, el: Any, table: int | None = None, in_thead: bool = False) -> None:
        tag = tag_of(el)
        if tag in HEADINGS:
            self.heading(el, tag)
            return
        self.mark(el, skip=_ALL if tag not in _LEAVES else _NESTED_IN_LI)
        if tag == "p":
            self.b.add("paragraph", text_of(el))
        elif tag == "dt" and not has_block_child(el):  # a term: it opens an entry
            self.b.add("paragraph", text_of(el), term=True)
        elif tag == "pre":
            self.b.add("code", _pre_text(el))
        elif tag == "li":
            self.b.add("list_item", text_of(el, skip=_NESTED_IN_LI))
            for nested in self._outermost(el, _NESTED_IN_LI):
                self.walk(nested)
        elif tag == "tr":
            row = [c for c in el if tag_of(c) in ("td", "th")]
            texts = [clean(text_of(c)) for c in row]
            if any(texts):
                header = in_thead or all(tag_of(c) == "th" for c in row)
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
            if tag_of(child) in tags:
                yield child
            elif tag_of(child):
                yield from self._outermost(child, tags)

    def _container(self, el: Any, table: int | None, in_thead: bool) -> None:
        loose: list[str] = [el.text or ""]

        def flush() -> None:
            self.b.add("paragraph", "".join(loose))
            loose.clear()

        for child in el:
            tag = tag_of(child)
            if tag and (tag in BLOCK_TAGS or has_block(child)):
                flush()
                self.walk(child, table, in_thead)
            elif tag:
                self.mark(child)
                loose.append(text_of(child))
            loose.append(child.tail or "")
        flush()


def _html_encoding(data: bytes) -> str | None:
    """The `<meta charset>` when it names a text encoding, else None: undeclared, read as
    UTF-8 or detected (as a browser ignores a label it does not know; "rot13" or "base64"
    are codecs but not text encodings)."""
    match = _CHARSET.search(data[:4096])
    if match:
        try:
            name = codecs.lookup(match.group(1).decode("ascii")).name
            b"a".decode(name)  # LookupError for a codec that is not a text encoding
            return name
        except (LookupError, UnicodeError):
            pass
    return None


def parse(data: bytes) -> Parsed:
    text = decode(data, _html_encoding(data))
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    # lxml refuses these (C0 controls; U+FFFE, U+FFFF and lone surrogates it reads but will
    # not write back when a dropped element's texts are joined: the fuzzer's find)
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]", " ", text)
    parser = lxml.html.HTMLParser(huge_tree=True)  # else libxml2 drops all below 255 levels
    try:
        root = lxml.html.document_fromstring(text, parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        if "empty" in str(exc).lower():
            raise ParseError("no text found (the page has no visible text)") from None
        raise ParseError(f"HTML cannot be read: {short(exc)}") from None
    for entry in parser.error_log:
        if entry.type_name == "ERR_RESOURCE_LIMIT":  # libxml2 stopped: the rest would be lost
            detail = "elements nested too deeply" if "depth" in entry.message else entry.message
            raise ParseError(f"HTML cannot be read whole: {short(Exception(detail))}")

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
    meta = collect_meta(pairs)
    title_el = root.find(".//title")
    if "title" not in meta and title_el is not None and clean(title_el.text_content()):
        meta["title"] = clean(title_el.text_content())

    body = root.find("body")
    if body is None:
        body = root
    target = is_redirect(root, body)
    if target:
        raise ParseError(f"a redirect to {target}: no text of its own")
    _hide_by_css(root)
    promote_hidden_headings(body)
    promote_title_block(body)
    masthead = before_first_heading(body)
    doomed = [
        el
        for el in body.iter()
        if not tag_of(el)
        or tag_of(el) in _DROP_TAGS
        or (_is_hidden(el) and not is_empty_anchor(el))
        or (el.get("role") or "").strip().lower() == "navigation"
        or is_nav_class(el)
        or (el in masthead and (has_class(el, TAGLINE_CLASS) or is_site_menu(el)))
        or is_page_chrome(el)
        or is_sidebar(el)
    ]
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()
    for el in [e for e in body.iter() if is_link_bar(e)]:
        if el.getparent() is not None:
            el.drop_tree()
    quiet_permalinks(body)
    quiet_footnote_marks(body)
    promote_bold_questions(body)
    root = content_root(body)
    flatten_deep(root)
    b = Builder()
    title = next(body.iter("h1"), None)
    if root is not body and next(root.iter("h1"), None) is None and title is not None:
        b.heading(text_of(title), 1, heading_anchor(title))
    try:
        _HtmlWalker(b).walk(root)
    except RecursionError:
        raise ParseError("HTML cannot be read: elements are nested too deeply") from None
    return b.result(meta, "no text found (the page has no visible text)")
