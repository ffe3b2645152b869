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

from tether.errors import ParseError
from tether.ingest.metadata import collect_meta
from tether.ingest.parse.blocks import Builder, Parsed, clean, decode, short
from tether.ingest.parse.html_hidden import HIDDEN as _HIDDEN
from tether.ingest.parse.html_hidden import hide_by_css as _hide_by_css
from tether.ingest.parse.html_hidden import is_hidden as _is_hidden

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
_LEAVES = frozenset({"p", "pre", "li", "tr", "dt"})  # blocks whose inner ids start at them
_ALL = frozenset({"*"})  # skip every child: only the element's own id
_PSEUDO = "data-tether-heading"  # marks a bold paragraph read as a heading
# ids of page wrappers and chrome, not locations of the content
_CHROME_IDS = frozenset(
    {
        "content", "main", "main-content", "maincontent", "page", "wrapper", "container",
        "body", "document", "top", "bottom", "header", "footer", "navigation", "nav",
        "sidebar", "search", "searchbox", "skip", "skip-link", "toc", "bodycontent",
        "doccontent", "apicontent",
    }
)  # fmt: skip
_CHROME_ID = re.compile(
    r"(?:[a-z]+[-_]?)?(?:menu|submenu|menubutton|nav|navbar|navigation|sidebar|sidebarbutton"
    r"|searchbox|searchbar|toolbar|breadcrumbs?|topbar)(?:[-_][a-z0-9]+)?"
)
# navigation blocks named by class in generated manuals: DocBook XSL's navheader/navfooter,
# Javadoc's topNav/bottomNav/subNav, Doxygen's navpath, breadcrumb trails
_NAV_CLASS = re.compile(
    r"nav(?:header|footer|path)|(?:top|bottom|sub)nav|breadcrumbs?"
)  # not "sidebar": Sphinx's sidebar directive is content
# a site's tagline above the page's first heading (SQLite's "Small. Fast. Reliable."); below
# it, a product's tagline is content
_TAGLINE_CLASS = re.compile(r"(?:[a-z]+[-_]?)?(?:tagline|slogan)")
# a menu is chrome only when it is mostly links (a restaurant's <div class="menu"> of dishes
# is content)
_MENU_CLASS = re.compile(
    r"(?:main|top|site|nav|primary|header|global)?[-_]?(?:menu|navbar|menubar|toolbar|topbar)"
)  # not "food-menu", "sidebar-menu"; and only above the page's first heading
MENU_LINK_SHARE = 0.6
# a page title set in a styled block rather than a heading (SQLite's `fancy_title`)
_TITLE_CLASS = re.compile(r"(?:fancy|page|doc|document|article|post|entry|main)?[-_]?title")
_ADMONITIONS = frozenset(
    {"note", "warning", "tip", "caution", "important", "admonition", "hint", "danger"}
)
_MARKS = frozenset({"¶", "#", "§", "🔗", "⚓", "link", "permalink"})
# generated targets (Sphinx index entries, DocBook's numbered ids): recorded, never an entry
_MINOR_ID = re.compile(r"index-\d+|id\d+|x\d+|id-[\d.]+")
_SECTIONING = frozenset({"article", "main", "section", "aside"})
_SIDEBAR_ROLES = frozenset({"complementary", "dialog", "alertdialog"})
_NAV_WORDS = re.compile(
    r"\b(?:next|previous|prev|up|top|index|contents|table of contents|home|back|forward|"
    r"go to|page|skip to (?:main )?content)\b|[\[\]|:,.·•»«›‹→←↑/&;()\-–—\s]",
    re.IGNORECASE,
)
_NAV_WORD = re.compile(r"\b(?:next|previous|prev|up|index|contents)\b", re.IGNORECASE)
_BAR_PUNCT = re.compile(r"[\[\]|:,.·•»«›‹→←↑()\-–—\s]+")
MAX_DEPTH = 100  # element levels walked as such; deeper subtrees are kept as their text
# footnote references: Texinfo's `<a id="DOCF8" href="#FOOT8"><sup>8</sup></a>` (makeinfo;
# texi2html links to a separate `*_fot.html`), Markdown's `#fn:1`, Sphinx's `#id3` with class
# `footnote-reference`; and Texinfo's footnote bodies, each under a heading "(8)"
_FOOTNOTE_HREF = re.compile(r"#(?:FOOT\d+|fn[:-]?[\w-]*|footnote[-_]?[\w-]*)$", re.IGNORECASE)
_FOOTNOTE_CLASS = re.compile(r"footnote-?ref(?:erence)?|fnref")
_FOOTNOTE_MARK = re.compile(r"[\[(]?(?:\d{1,3}|[*†‡§])[\])]?")
_FOOTNOTE_HEAD = re.compile(r"\(\d{1,3}\)|\[\d{1,3}\]")
REDIRECT_WORDS = 40  # a page with a refresh to another page and no more words is a redirect
REDIRECT_DELAY_S = 2.0  # ... when the refresh comes at once (a delay above this: a page to read)
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _tag(el: Any) -> str:
    tag = el.tag
    return tag.lower() if isinstance(tag, str) else ""


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


def _is_nav_class(el: Any) -> bool:
    """A block whose class names it navigation (`_NAV_CLASS`: a generated manual's header and
    footer link tables, which carry the page title and its neighbours' names)."""
    return _tag(el) in _BLOCK_TAGS and _has_class(el, _NAV_CLASS)


def _is_site_menu(el: Any) -> bool:
    """A block whose class names it a site menu (`_MENU_CLASS`), with no heading inside, whose
    words are mostly link text (`MENU_LINK_SHARE`); the caller asks only above the page's first
    heading (below it a menu of linked dishes is content)."""
    if _tag(el) not in _BLOCK_TAGS or not _has_class(el, _MENU_CLASS):
        return False
    if next(el.iter(*_HEADINGS), None) is not None:
        return False
    words = len(clean(_text_of(el)).split())
    linked = sum(len(clean(_text_of(a)).split()) for a in el.iter("a"))
    return words > 0 and linked / words >= MENU_LINK_SHARE


def _has_class(el: Any, pattern: re.Pattern[str]) -> bool:
    return any(pattern.fullmatch(c) for c in (el.get("class") or "").lower().split())


def _before_first_heading(body: Any) -> set[Any]:
    """The elements that come before the page's first heading, in document order; none on a
    page without a heading (there is no masthead to tell apart)."""
    found: set[Any] = set()
    for el in body.iter():
        if _tag(el) in _HEADINGS:
            return found
        found.add(el)
    return set()


def _promote_title_block(root: Any) -> None:
    """A page with no `<h1>` whose title stands in a styled block before any heading (`<div
    class="fancy_title">`, `page-title`, `title`...: a short text with no block inside): that
    block becomes the `<h1>`. (`subtitle`, `card-title`, `alert-title` are not page titles.)"""
    if next(root.iter("h1"), None) is not None:
        return
    for el in root.iter():
        tag = _tag(el)
        if tag in _HEADINGS:
            return  # a heading comes first: the page titles itself
        if tag not in ("div", "p", "span"):
            continue
        titled = _has_class(el, _TITLE_CLASS) and not _has_block_child(el)
        if titled and 0 < len(clean(_text_of(el)).split()) <= 20:
            el.tag = "h1"
            return


def _is_sidebar(el: Any) -> bool:
    """An aside or a dialog that is not part of an article's own content."""
    tag, role = _tag(el), (el.get("role") or "").strip().lower()
    if tag not in ("aside", "dialog") and role not in _SIDEBAR_ROLES:
        return False
    return not any(_tag(a) == "article" for a in el.iterancestors())


def _is_link_bar(el: Any) -> bool:
    """A "Next: ... Previous: ... [Index]" bar: links, and outside them navigation words only."""
    if _tag(el) not in ("p", "div", "td", "table", "center", "ul", "li"):
        return False
    links = list(el.iter("a"))
    if not links or next(el.iter(*_HEADINGS), None) is not None:
        return False
    outside = _text_of(el, skip=frozenset({"a"}))
    if _NAV_WORDS.sub("", outside):
        return False
    if _NAV_WORD.search(outside):
        return True
    return any(_NAV_WORD.fullmatch(_BAR_PUNCT.sub("", _text_of(a))) for a in links)


def _content_root(body: Any) -> Any:
    """The `<main>` (or role=main) of the page, else its one `<article>`, else `body`."""
    mains = [
        el
        for el in body.iter()
        if _tag(el) == "main" or (el.get("role") or "").strip().lower() == "main"
    ]
    articles = [
        a for a in body.iter("article") if not any(_tag(p) == "article" for p in a.iterancestors())
    ]
    for root in mains[:1] + (articles if len(articles) == 1 else []):
        if clean(_text_of(root)):  # an empty <main> (filled by a script) is not the content
            return root
    return body


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


def _names(el: Any) -> list[str]:
    """The location names an element carries: its id, and an `<a>`'s name."""
    values = [el.get("id")] + ([el.get("name")] if _tag(el) == "a" else [])
    return [v.strip() for v in values if v and v.strip()]


def locations(el: Any, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every location in `el`, in document order: its own id (or an `<a>`'s name) and those
    of its descendants, except inside children whose tag is in `skip` ({"*"}: every child);
    page wrappers and chrome (`content`, `sidebar`...) left out."""
    found = _names(el)
    for child in el:
        tag = _tag(child)
        if tag and "*" not in skip and tag not in skip:
            found += locations(child, skip)
    return [n for n in dict.fromkeys(found) if not _is_chrome_id(n)]


def _is_chrome_id(name: str) -> bool:
    low = name.lower()
    return low in _CHROME_IDS or _CHROME_ID.fullmatch(low) is not None


def _is_admonition_title(el: Any) -> bool:
    """The title of a note or warning box (its heading opens no section of the document)."""
    for i, parent in enumerate(el.iterancestors()):
        if i >= 3:
            break
        if _ADMONITIONS & set((parent.get("class") or "").lower().split()):
            return True
    return False


def _is_empty_anchor(el: Any) -> bool:
    """An element that only marks a location (`<a name="x"></a>`, `<span id="y"></span>`)."""
    return bool(_names(el)) and len(el) == 0 and not (el.text or "").strip()


def _is_bold_only(el: Any) -> bool:
    """A short paragraph whose words are all bold (`<p><b>How do I...?</b></p>`)."""
    if _tag(el) != "p" or next(el.iter("b", "strong"), None) is None or _has_block_child(el):
        return False
    text = clean(_text_of(el))
    outside = _text_of(el, skip=frozenset({"b", "strong"}))
    return 0 < len(text.split()) <= 40 and not any(ch.isalnum() for ch in outside)


def _has_block_child(el: Any) -> bool:
    return any(_tag(d) in _BLOCK_TAGS for d in el.iterdescendants())


def _promote_hidden_headings(body: Any) -> None:
    """A heading hidden with `display:none` whose visible stand-in is the bold paragraph
    after it (a rule `<hr>` may stand between): that paragraph becomes the heading (its level,
    its id). A hidden heading that marks a location (a named anchor just before it, or its
    own id) whose words the next visible block all repeats is shown as it is: it is the entry's
    title, and it adds nothing a reader does not see (SQLite's pragma page hides `<h
    _id=pragma_x>PRAGMA x</h>` above "PRAGMA x = N;"). Hidden text that is not repeated stays
    hidden: it is how a page slips words past its readers. SQLite's non-standard `<h>` counts
    as a heading of level 6."""
    for el in list(body.iter(*_HEADINGS, "h")):
        if not _is_hidden(el) or any(_is_hidden(a) for a in el.iterancestors()):
            continue  # shown already, or inside hidden content: never shown
        if _tag(el) == "h":
            el.tag = "h6"
        nxt = _next_shown(el)
        prev = _previous_element(el)
        anchor = prev if prev is not None and _is_empty_anchor(prev) else None
        if nxt is not None and _is_bold_only(nxt):
            nxt.tag = _tag(el)
            names = locations(el)
            if not names and anchor is not None:  # the named anchor above the hidden title
                names = list(_names(anchor))
                _remove_keeping_tail(anchor)
            if names and not nxt.get("id"):
                nxt.set("id", names[0])
            for extra in names[1:]:
                nxt.insert(0, nxt.makeelement("a", {"name": extra}))
            continue
        title = set(re.findall(r"\w+", _text_of(el).casefold()))
        repeated = nxt is not None and title <= set(re.findall(r"\w+", _shown_text(nxt)))
        if title and repeated and (el.get("id") or anchor is not None):
            el.attrib.pop("style", None)  # shown: the anchor's own title, which the entry repeats
            el.attrib.pop(_HIDDEN, None)
            _lift_out_of_paragraph(el, anchor)


def _remove_keeping_tail(el: Any) -> None:
    """Take `el` out of the tree; the text after it stays where it was (lxml would carry it
    along with `el`)."""
    parent = el.getparent()
    if parent is None:
        return
    tail, el.tail = el.tail or "", None
    before = el.getprevious()
    if before is not None:
        before.tail = (before.tail or "") + tail
    else:
        parent.text = (parent.text or "") + tail
    parent.remove(el)


def _visible_text(el: Any) -> str:
    """The text of `el` a reader sees: none of a hidden element's, or of its hidden parts."""
    if not _tag(el) or _is_hidden(el):
        return ""
    parts = [el.text or ""]
    for child in el:
        parts += [_visible_text(child), child.tail or ""]
    return " ".join(parts)


def _shown_text(el: Any) -> str:
    """The visible text that starts at `el`, casefolded: a block's own, or an inline
    element's with the inline siblings and loose text that follow it up to the next block."""
    if _tag(el) in _BLOCK_TAGS:
        return _visible_text(el).casefold()
    parts = []
    at: Any | None = el
    while at is not None and _tag(at) not in _BLOCK_TAGS:
        parts += [_visible_text(at), at.tail or ""]
        at = at.getnext()
    return " ".join(parts).casefold()


def _next_shown(el: Any) -> Any | None:
    """The element after `el`, past rules (`<hr>`) and, when `el` ends a paragraph that
    swallowed it, past that paragraph's end."""
    at = el
    while at is not None:
        nxt = at.getnext()
        while nxt is not None and (not _tag(nxt) or _tag(nxt) == "hr" or _is_hidden(nxt)):
            nxt = nxt.getnext()
        if nxt is not None:
            return nxt
        parent = at.getparent()
        at = parent if parent is not None and _tag(parent) == "p" else None
    return None


def _lift_out_of_paragraph(heading: Any, anchor: Any | None) -> None:
    """A heading the HTML parser left inside a paragraph (an unknown `<h>` tag is inline to
    it, so an unclosed `<p>` swallows it) moves after that paragraph, with its anchor."""
    parent = heading.getparent()
    if parent is None or _tag(parent) != "p" or parent.getparent() is None:
        return
    at = parent.getparent().index(parent) + 1
    moving = [anchor] if anchor is not None and anchor.getparent() is parent else []
    for el in [*moving, heading]:
        _remove_keeping_tail(el)
        parent.getparent().insert(at, el)
        at += 1


def _promote_bold_questions(body: Any) -> None:
    """FAQ entries: a bold paragraph standing after an anchor (or holding one), or a bold
    question when the page has several, becomes a heading one level below the last one."""
    bold = [el for el in body.iter("p") if _is_bold_only(el)]
    questions = [el for el in bold if clean(_text_of(el)).endswith("?")]
    for el in bold:
        prev = _previous_element(el)
        anchored = bool(locations(el)) or (prev is not None and _is_empty_anchor(prev))
        if anchored or (el in questions and len(questions) >= 2):
            el.tag = "h6"
            el.set(_PSEUDO, "1")


def _quiet_permalinks(body: Any) -> None:
    """Permalink marks (Sphinx's ¶ `headerlink`, a "#" or "§" link to the heading itself) lose
    their text, so headings read clean; their id stays a location."""
    for a in body.iter("a"):
        text = clean(a.text_content())
        href = (a.get("href") or "").strip()
        if "headerlink" in (a.get("class") or "") or (href.startswith("#") and text in _MARKS):
            for child in list(a):
                a.remove(child)
            a.text = None


def _quiet_footnote_marks(body: Any) -> None:
    """Footnote references lose their number (it would glue to the word before: "m4" + "8"
    read "m48"; their id stays a location), and a footnote's own heading ("(8)", which
    Texinfo makes an `<h5>`) becomes a paragraph, so the footnote is text under "Footnotes"
    rather than a section named by a number."""
    for a in body.iter("a"):
        href = (a.get("href") or "").strip()
        marked = _FOOTNOTE_HREF.search(href) or _has_class(a, _FOOTNOTE_CLASS)
        if marked and _FOOTNOTE_MARK.fullmatch(clean(a.text_content())):
            for child in list(a):
                a.remove(child)
            a.text = None
    for el in list(body.iter(*_HEADINGS)):
        named = [n for a in el.iter("a") for n in (a.get("id"), a.get("name")) if n]
        if _FOOTNOTE_HEAD.fullmatch(clean(el.text_content())) and any(
            n.upper().startswith("FOOT") or "fn" in n.lower() for n in named
        ):
            el.tag = "p"


def _is_redirect(root: Any, body: Any) -> str | None:
    """The target of a page that only sends the reader elsewhere (a `<meta http-equiv=
    "refresh">` naming a URL within `REDIRECT_DELAY_S`, not inside `<noscript>`, and at most
    `REDIRECT_WORDS` words of its own outside scripts and styles: makeinfo writes one per
    anchor, "The node you are looking for is at ..."), else None."""
    for meta_el in root.iter("meta"):
        if (meta_el.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        if any(_tag(a) == "noscript" for a in meta_el.iterancestors()):
            continue  # a fallback for browsers without scripts, not the page's purpose
        content = meta_el.get("content") or ""
        delay = re.match(r"\s*(\d+(?:\.\d*)?)", content)
        found = re.search(r"url\s*=\s*['\"]?([^'\";]+)", content, re.I)
        if not found or (delay is not None and float(delay.group(1)) > REDIRECT_DELAY_S):
            continue  # a page that reloads or moves on after a while is read
        if len(_words_shown(body)) <= REDIRECT_WORDS:
            return found.group(1).strip()
    return None


def _words_shown(body: Any) -> list[str]:
    """The words of the page outside scripts, styles and templates."""
    import copy

    shown = copy.deepcopy(body)
    for el in [e for e in shown.iter("script", "style", "template", "noscript")]:
        if el.getparent() is not None:
            el.drop_tree()
    return str(shown.text_content()).split()


def _has_block(el: Any) -> bool:
    return any(_tag(d) in _BLOCK_TAGS for d in el.iter())


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
        if _is_admonition_title(el):  # DocBook's <div class="note"><h3>Note</h3>: no section
            self.mark(el, skip=_NESTED_IN_LI)
            self.b.add("paragraph", _text_of(el))
            return
        if el.get(_PSEUDO) is not None:
            level = min(6, self.level + 1)
        else:
            level = self.level = int(tag[1])
        if _has_block_child(el):  # left open (`<h2>…</h1>`), it swallowed what follows
            rest = el.makeelement("div", {})
            for child in list(el):
                rest.append(child)  # its tail goes with it
            self.b.heading(el.text or "", level, _heading_anchor(el), anchors=tuple(_names(el)))
            self.walk(rest)
            return
        self.b.heading(_text_of(el), level, _heading_anchor(el), anchors=tuple(locations(el)))

    def walk(self, el: Any, table: int | None = None, in_thead: bool = False) -> None:
        tag = _tag(el)
        if tag in _HEADINGS:
            self.heading(el, tag)
            return
        self.mark(el, skip=_ALL if tag not in _LEAVES else _NESTED_IN_LI)
        if tag == "p":
            self.b.add("paragraph", _text_of(el))
        elif tag == "dt" and not _has_block_child(el):  # a term: it opens an entry
            self.b.add("paragraph", _text_of(el), term=True)
        elif tag == "pre":
            self.b.add("code", _pre_text(el))
        elif tag == "li":
            self.b.add("list_item", _text_of(el, skip=_NESTED_IN_LI))
            for nested in self._outermost(el, _NESTED_IN_LI):
                self.walk(nested)
        elif tag == "tr":
            row = [c for c in el if _tag(c) in ("td", "th")]
            texts = [clean(_text_of(c)) for c in row]
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
                self.mark(child)
                loose.append(_text_of(child))
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


def _flatten_deep(body: Any) -> None:
    """Elements `MAX_DEPTH` levels below `body` keep their whole text, as the text of that
    element, instead of their subtree (which the recursive walk could not go through)."""
    pending = [(body, 0)]
    while pending:
        el, depth = pending.pop()
        if depth >= MAX_DEPTH:
            text = el.text_content()
            for child in list(el):
                el.remove(child)
            el.text = text
            continue
        pending.extend((child, depth + 1) for child in el if _tag(child))


def parse(data: bytes) -> Parsed:
    text = decode(data, _html_encoding(data))
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    # lxml refuses these (C0 controls; U+FFFE, U+FFFF and lone surrogates it reads but will
    # not write back when a dropped element's texts are joined: the fuzzer's find)
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]", " ", text)
    import lxml.etree
    import lxml.html

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
    target = _is_redirect(root, body)
    if target:
        raise ParseError(f"a redirect to {target}: no text of its own")
    _hide_by_css(root)
    _promote_hidden_headings(body)
    _promote_title_block(body)
    masthead = _before_first_heading(body)
    doomed = [
        el
        for el in body.iter()
        if not _tag(el)
        or _tag(el) in _DROP_TAGS
        or (_is_hidden(el) and not _is_empty_anchor(el))
        or (el.get("role") or "").strip().lower() == "navigation"
        or _is_nav_class(el)
        or (el in masthead and (_has_class(el, _TAGLINE_CLASS) or _is_site_menu(el)))
        or _is_page_chrome(el)
        or _is_sidebar(el)
    ]
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()
    for el in [e for e in body.iter() if _is_link_bar(e)]:
        if el.getparent() is not None:
            el.drop_tree()
    _quiet_permalinks(body)
    _quiet_footnote_marks(body)
    _promote_bold_questions(body)
    root = _content_root(body)
    _flatten_deep(root)
    b = Builder()
    title = next(body.iter("h1"), None)
    if root is not body and next(root.iter("h1"), None) is None and title is not None:
        b.heading(_text_of(title), 1, _heading_anchor(title))
    try:
        _HtmlWalker(b).walk(root)
    except RecursionError:
        raise ParseError("HTML cannot be read: elements are nested too deeply") from None
    return b.result(meta, "no text found (the page has no visible text)")
