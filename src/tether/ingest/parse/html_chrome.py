"""Page chrome and redirects for the HTML parser: a page-level header or footer, navigation
blocks named by class, a site menu or tagline above the first heading, sidebars and dialogs,
link bars ("Next: ... Previous: ..."), the page's content root (`<main>` or its one
`<article>`), a title set in a styled block, and a page that only redirects elsewhere.

What it cannot do: chrome is recognised by tags, roles and common class names only (no
layout); a site menu of plain lists with no such name reads as content. It decides; the
caller (`tether.ingest.parse.html`) drops.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from tether.ingest.parse.blocks import clean
from tether.ingest.parse.html_tree import (
    BLOCK_TAGS,
    HEADINGS,
    has_block_child,
    has_class,
    tag_of,
    text_of,
)

# navigation blocks named by class in generated manuals: DocBook XSL's navheader/navfooter,
# Javadoc's topNav/bottomNav/subNav, Doxygen's navpath, breadcrumb trails
_NAV_CLASS = re.compile(
    r"nav(?:header|footer|path)|(?:top|bottom|sub)nav|breadcrumbs?"
)  # not "sidebar": Sphinx's sidebar directive is content
# a site's tagline above the page's first heading (SQLite's "Small. Fast. Reliable."); below
# it, a product's tagline is content
TAGLINE_CLASS = re.compile(r"(?:[a-z]+[-_]?)?(?:tagline|slogan)")
# a menu is chrome only when it is mostly links (a restaurant's <div class="menu"> of dishes
# is content)
_MENU_CLASS = re.compile(
    r"(?:main|top|site|nav|primary|header|global)?[-_]?(?:menu|navbar|menubar|toolbar|topbar)"
)  # not "food-menu", "sidebar-menu"; and only above the page's first heading
MENU_LINK_SHARE = 0.6
# a page title set in a styled block rather than a heading (SQLite's `fancy_title`)
_TITLE_CLASS = re.compile(r"(?:fancy|page|doc|document|article|post|entry|main)?[-_]?title")
_SECTIONING = frozenset({"article", "main", "section", "aside"})
_SIDEBAR_ROLES = frozenset({"complementary", "dialog", "alertdialog"})
_NAV_WORDS = re.compile(
    r"\b(?:next|previous|prev|up|top|index|contents|table of contents|home|back|forward|"
    r"go to|page|skip to (?:main )?content)\b|[\[\]|:,.·•»«›‹→←↑/&;()\-–—\s]",
    re.IGNORECASE,
)
_NAV_WORD = re.compile(r"\b(?:next|previous|prev|up|index|contents)\b", re.IGNORECASE)
_BAR_PUNCT = re.compile(r"[\[\]|:,.·•»«›‹→←↑()\-–—\s]+")
REDIRECT_WORDS = 40  # a page with a refresh to another page and no more words is a redirect
REDIRECT_DELAY_S = 2.0  # ... when the refresh comes at once (a delay above this: a page to read)


def is_page_chrome(el: Any) -> bool:
    """A page-level header/footer/banner: dropped unless it holds the page's <h1>."""
    tag, role = tag_of(el), (el.get("role") or "").strip().lower()
    if role in ("banner", "contentinfo"):
        chrome = True
    elif tag in ("header", "footer"):
        chrome = not any(tag_of(a) in _SECTIONING for a in el.iterancestors())
    else:
        return False
    return chrome and next(el.iter("h1"), None) is None


def is_nav_class(el: Any) -> bool:
    """A block whose class names it navigation (`_NAV_CLASS`: a generated manual's header and
    footer link tables, which carry the page title and its neighbours' names)."""
    return tag_of(el) in BLOCK_TAGS and has_class(el, _NAV_CLASS)


def is_site_menu(el: Any) -> bool:
    """A block whose class names it a site menu (`_MENU_CLASS`), with no heading inside, whose
    words are mostly link text (`MENU_LINK_SHARE`); the caller asks only above the page's first
    heading (below it a menu of linked dishes is content)."""
    if tag_of(el) not in BLOCK_TAGS or not has_class(el, _MENU_CLASS):
        return False
    if next(el.iter(*HEADINGS), None) is not None:
        return False
    words = len(clean(text_of(el)).split())
    linked = sum(len(clean(text_of(a)).split()) for a in el.iter("a"))
    return words > 0 and linked / words >= MENU_LINK_SHARE


def before_first_heading(body: Any) -> set[Any]:
    """The elements that come before the page's first heading, in document order; none on a
    page without a heading (there is no masthead to tell apart)."""
    found: set[Any] = set()
    for el in body.iter():
        if tag_of(el) in HEADINGS:
            return found
        found.add(el)
    return set()


def promote_title_block(root: Any) -> None:
    """A page with no `<h1>` whose title stands in a styled block before any heading (`<div
    class="fancy_title">`, `page-title`, `title`...: a short text with no block inside): that
    block becomes the `<h1>`. (`subtitle`, `card-title`, `alert-title` are not page titles.)"""
    if next(root.iter("h1"), None) is not None:
        return
    for el in root.iter():
        tag = tag_of(el)
        if tag in HEADINGS:
            return  # a heading comes first: the page titles itself
        if tag not in ("div", "p", "span"):
            continue
        titled = has_class(el, _TITLE_CLASS) and not has_block_child(el)
        if titled and 0 < len(clean(text_of(el)).split()) <= 20:
            el.tag = "h1"
            return


def is_sidebar(el: Any) -> bool:
    """An aside or a dialog that is not part of an article's own content."""
    tag, role = tag_of(el), (el.get("role") or "").strip().lower()
    if tag not in ("aside", "dialog") and role not in _SIDEBAR_ROLES:
        return False
    return not any(tag_of(a) == "article" for a in el.iterancestors())


def is_link_bar(el: Any) -> bool:
    """A "Next: ... Previous: ... [Index]" bar: links, and outside them navigation words only."""
    if tag_of(el) not in ("p", "div", "td", "table", "center", "ul", "li"):
        return False
    links = list(el.iter("a"))
    if not links or next(el.iter(*HEADINGS), None) is not None:
        return False
    outside = text_of(el, skip=frozenset({"a"}))
    if _NAV_WORDS.sub("", outside):
        return False
    if _NAV_WORD.search(outside):
        return True
    return any(_NAV_WORD.fullmatch(_BAR_PUNCT.sub("", text_of(a))) for a in links)


def content_root(body: Any) -> Any:
    """The `<main>` (or role=main) of the page, else its one `<article>`, else `body`."""
    mains = [
        el
        for el in body.iter()
        if tag_of(el) == "main" or (el.get("role") or "").strip().lower() == "main"
    ]
    articles = [
        a
        for a in body.iter("article")
        if not any(tag_of(p) == "article" for p in a.iterancestors())
    ]
    for root in mains[:1] + (articles if len(articles) == 1 else []):
        if clean(text_of(root)):  # an empty <main> (filled by a script) is not the content
            return root
    return body


def is_redirect(root: Any, body: Any) -> str | None:
    """The target of a page that only sends the reader elsewhere (a `<meta http-equiv=
    "refresh">` naming a URL within `REDIRECT_DELAY_S`, not inside `<noscript>`, and at most
    `REDIRECT_WORDS` words of its own outside scripts and styles: makeinfo writes one per
    anchor, "The node you are looking for is at ..."), else None."""
    for meta_el in root.iter("meta"):
        if (meta_el.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        if any(tag_of(a) == "noscript" for a in meta_el.iterancestors()):
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
    shown = copy.deepcopy(body)
    for el in [e for e in shown.iter("script", "style", "template", "noscript")]:
        if el.getparent() is not None:
            el.drop_tree()
    return str(shown.text_content()).split()
