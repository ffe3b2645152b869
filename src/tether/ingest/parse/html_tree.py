"""The HTML parser's reading of one element: its tag, its text, its location names (ids and
named anchors) and the shapes the other HTML modules ask about (a bold-only paragraph, an empty
anchor, a note box's title, a heading's anchor).

What it cannot do: it changes nothing in the tree and knows nothing of CSS; whether an element
is hidden is `tether.ingest.parse.html_hidden`'s answer, and what is page chrome is
`tether.ingest.parse.html_chrome`'s.
"""

from __future__ import annotations

import re
from typing import Any

from tether.ingest.parse.blocks import clean

HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
BLOCK_TAGS = frozenset(
    (
        "address article aside blockquote body caption dd details dialog div dl dt fieldset"
        " figcaption figure footer form header hgroup hr li main menu ol p pre section summary"
        " table tbody td tfoot th thead tr ul center html h1 h2 h3 h4 h5 h6"
    ).split()
)
# ids of page wrappers and chrome, not locations of the content
_CHROME_IDS = frozenset(
    (
        "content main main-content maincontent page wrapper container body document top bottom"
        " header footer navigation nav sidebar search searchbox skip skip-link toc bodycontent"
        " doccontent apicontent"
    ).split()
)
_CHROME_ID = re.compile(
    r"(?:[a-z]+[-_]?)?(?:menu|submenu|menubutton|nav|navbar|navigation|sidebar|sidebarbutton"
    r"|searchbox|searchbar|toolbar|breadcrumbs?|topbar)(?:[-_][a-z0-9]+)?"
)
_ADMONITIONS = frozenset(
    {"note", "warning", "tip", "caution", "important", "admonition", "hint", "danger"}
)


def tag_of(el: Any) -> str:
    tag = el.tag
    return tag.lower() if isinstance(tag, str) else ""


def has_class(el: Any, pattern: re.Pattern[str]) -> bool:
    return any(pattern.fullmatch(c) for c in (el.get("class") or "").lower().split())


def text_of(el: Any, skip: frozenset[str] = frozenset(), br: str = " ") -> str:
    """Text of `el`, with spaces around block elements and `br`, skipping `skip` subtrees."""
    parts: list[str] = []

    def walk(e: Any) -> None:
        tag = tag_of(e)
        if tag == "br":
            parts.append(br)
            return
        block = tag in BLOCK_TAGS
        if block:
            parts.append(" ")
        if e.text and tag:
            parts.append(e.text)
        for child in e:
            if tag_of(child) and tag_of(child) not in skip:
                walk(child)
            if child.tail:
                parts.append(child.tail)
        if block:
            parts.append(" ")

    walk(el)
    return "".join(parts)


def _anchor_in(el: Any) -> str | None:
    for a in el.iter("a"):
        value = a.get("name") or a.get("id")
        if value and value.strip():
            return value.strip()
    return None


def previous_element(el: Any) -> Any | None:
    prev = el.getprevious()
    while prev is not None and not tag_of(prev):
        prev = prev.getprevious()
    return prev


def heading_anchor(el: Any) -> str | None:
    own = (el.get("id") or "").strip()
    if own:
        return own
    inner = _anchor_in(el)
    if inner:
        return inner
    prev = previous_element(el)
    if prev is not None and not text_of(prev).strip():
        if tag_of(prev) == "a":
            value = (prev.get("name") or prev.get("id") or "").strip()
            if value:
                return value
        else:
            inner = _anchor_in(prev)
            if inner:
                return inner
    parent = el.getparent()
    if prev is None and parent is not None and tag_of(parent) in ("section", "article"):
        value = (parent.get("id") or "").strip()
        if value:
            return value
    return None


def names_of(el: Any) -> list[str]:
    """The location names an element carries: its id, and an `<a>`'s name."""
    values = [el.get("id")] + ([el.get("name")] if tag_of(el) == "a" else [])
    return [v.strip() for v in values if v and v.strip()]


def locations(el: Any, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every location in `el`, in document order: its own id (or an `<a>`'s name) and those
    of its descendants, except inside children whose tag is in `skip` ({"*"}: every child);
    page wrappers and chrome (`content`, `sidebar`...) left out."""
    found = names_of(el)
    for child in el:
        tag = tag_of(child)
        if tag and "*" not in skip and tag not in skip:
            found += locations(child, skip)
    return [n for n in dict.fromkeys(found) if not _is_chrome_id(n)]


def _is_chrome_id(name: str) -> bool:
    low = name.lower()
    return low in _CHROME_IDS or _CHROME_ID.fullmatch(low) is not None


def is_admonition_title(el: Any) -> bool:
    """The title of a note or warning box (its heading opens no section of the document)."""
    for i, parent in enumerate(el.iterancestors()):
        if i >= 3:
            break
        if _ADMONITIONS & set((parent.get("class") or "").lower().split()):
            return True
    return False


def is_empty_anchor(el: Any) -> bool:
    """An element that only marks a location (`<a name="x"></a>`, `<span id="y"></span>`)."""
    return bool(names_of(el)) and len(el) == 0 and not (el.text or "").strip()


def is_bold_only(el: Any) -> bool:
    """A short paragraph whose words are all bold (`<p><b>How do I...?</b></p>`)."""
    if tag_of(el) != "p" or next(el.iter("b", "strong"), None) is None or has_block_child(el):
        return False
    text = clean(text_of(el))
    outside = text_of(el, skip=frozenset({"b", "strong"}))
    return 0 < len(text.split()) <= 40 and not any(ch.isalnum() for ch in outside)


def has_block_child(el: Any) -> bool:
    return any(tag_of(d) in BLOCK_TAGS for d in el.iterdescendants())


def has_block(el: Any) -> bool:
    return any(tag_of(d) in BLOCK_TAGS for d in el.iter())
