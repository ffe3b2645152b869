"""Repairs the HTML parser makes to a page's tree before walking it: a hidden heading's visible
stand-in becomes the heading, bold FAQ questions become headings, permalink and footnote marks
lose their text (their ids stay locations), a heading an unclosed `<p>` swallowed moves out, and
subtrees nested deeper than `MAX_DEPTH` keep only their text.

What it cannot do: it works on the static tree only (no rendering); a bold paragraph that is a
label, not a question, becomes a heading only after an anchor.
"""

from __future__ import annotations

import re
from typing import Any

from tether.ingest.parse.blocks import clean
from tether.ingest.parse.html_hidden import HIDDEN as _HIDDEN
from tether.ingest.parse.html_hidden import is_hidden as _is_hidden
from tether.ingest.parse.html_tree import (
    BLOCK_TAGS,
    HEADINGS,
    has_class,
    is_bold_only,
    is_empty_anchor,
    locations,
    names_of,
    previous_element,
    tag_of,
    text_of,
)

PSEUDO = "data-tether-heading"  # marks a bold paragraph read as a heading
_MARKS = frozenset({"¶", "#", "§", "🔗", "⚓", "link", "permalink"})
MAX_DEPTH = 100  # element levels walked as such; deeper subtrees are kept as their text
# footnote references: Texinfo's `<a id="DOCF8" href="#FOOT8"><sup>8</sup></a>` (makeinfo;
# texi2html links to a separate `*_fot.html`), Markdown's `#fn:1`, Sphinx's `#id3` with class
# `footnote-reference`; and Texinfo's footnote bodies, each under a heading "(8)"
_FOOTNOTE_HREF = re.compile(r"#(?:FOOT\d+|fn[:-]?[\w-]*|footnote[-_]?[\w-]*)$", re.IGNORECASE)
_FOOTNOTE_CLASS = re.compile(r"footnote-?ref(?:erence)?|fnref")
_FOOTNOTE_MARK = re.compile(r"[\[(]?(?:\d{1,3}|[*†‡§])[\])]?")
_FOOTNOTE_HEAD = re.compile(r"\(\d{1,3}\)|\[\d{1,3}\]")


def promote_hidden_headings(body: Any) -> None:
    """A heading hidden with `display:none` whose visible stand-in is the bold paragraph
    after it (a rule `<hr>` may stand between): that paragraph becomes the heading (its level,
    its id). A hidden heading that marks a location (a named anchor just before it, or its
    own id) whose words the next visible block all repeats is shown as it is: it is the entry's
    title, and it adds nothing a reader does not see (SQLite's pragma page hides `<h
    _id=pragma_x>PRAGMA x</h>` above "PRAGMA x = N;"). Hidden text that is not repeated stays
    hidden: it is how a page slips words past its readers. SQLite's non-standard `<h>` counts
    as a heading of level 6."""
    for el in list(body.iter(*HEADINGS, "h")):
        if not _is_hidden(el) or any(_is_hidden(a) for a in el.iterancestors()):
            continue  # shown already, or inside hidden content: never shown
        if tag_of(el) == "h":
            el.tag = "h6"
        nxt = _next_shown(el)
        prev = previous_element(el)
        anchor = prev if prev is not None and is_empty_anchor(prev) else None
        if nxt is not None and is_bold_only(nxt):
            nxt.tag = tag_of(el)
            names = locations(el)
            if not names and anchor is not None:  # the named anchor above the hidden title
                names = list(names_of(anchor))
                _remove_keeping_tail(anchor)
            if names and not nxt.get("id"):
                nxt.set("id", names[0])
            for extra in names[1:]:
                nxt.insert(0, nxt.makeelement("a", {"name": extra}))
            continue
        title = set(re.findall(r"\w+", text_of(el).casefold()))
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
    if not tag_of(el) or _is_hidden(el):
        return ""
    parts = [el.text or ""]
    for child in el:
        parts += [_visible_text(child), child.tail or ""]
    return " ".join(parts)


def _shown_text(el: Any) -> str:
    """The visible text that starts at `el`, casefolded: a block's own, or an inline
    element's with the inline siblings and loose text that follow it up to the next block."""
    if tag_of(el) in BLOCK_TAGS:
        return _visible_text(el).casefold()
    parts = []
    at: Any | None = el
    while at is not None and tag_of(at) not in BLOCK_TAGS:
        parts += [_visible_text(at), at.tail or ""]
        at = at.getnext()
    return " ".join(parts).casefold()


def _next_shown(el: Any) -> Any | None:
    """The element after `el`, past rules (`<hr>`) and, when `el` ends a paragraph that
    swallowed it, past that paragraph's end."""
    at = el
    while at is not None:
        nxt = at.getnext()
        while nxt is not None and (not tag_of(nxt) or tag_of(nxt) == "hr" or _is_hidden(nxt)):
            nxt = nxt.getnext()
        if nxt is not None:
            return nxt
        parent = at.getparent()
        at = parent if parent is not None and tag_of(parent) == "p" else None
    return None


def _lift_out_of_paragraph(heading: Any, anchor: Any | None) -> None:
    """A heading the HTML parser left inside a paragraph (an unknown `<h>` tag is inline to
    it, so an unclosed `<p>` swallows it) moves after that paragraph, with its anchor."""
    parent = heading.getparent()
    if parent is None or tag_of(parent) != "p" or parent.getparent() is None:
        return
    at = parent.getparent().index(parent) + 1
    moving = [anchor] if anchor is not None and anchor.getparent() is parent else []
    for el in [*moving, heading]:
        _remove_keeping_tail(el)
        parent.getparent().insert(at, el)
        at += 1


def promote_bold_questions(body: Any) -> None:
    """FAQ entries: a bold paragraph standing after an anchor (or holding one), or a bold
    question when the page has several, becomes a heading one level below the last one."""
    bold = [el for el in body.iter("p") if is_bold_only(el)]
    questions = [el for el in bold if clean(text_of(el)).endswith("?")]
    for el in bold:
        prev = previous_element(el)
        anchored = bool(locations(el)) or (prev is not None and is_empty_anchor(prev))
        if anchored or (el in questions and len(questions) >= 2):
            el.tag = "h6"
            el.set(PSEUDO, "1")


def quiet_permalinks(body: Any) -> None:
    """Permalink marks (Sphinx's ¶ `headerlink`, a "#" or "§" link to the heading itself) lose
    their text, so headings read clean; their id stays a location."""
    for a in body.iter("a"):
        text = clean(a.text_content())
        href = (a.get("href") or "").strip()
        if "headerlink" in (a.get("class") or "") or (href.startswith("#") and text in _MARKS):
            for child in list(a):
                a.remove(child)
            a.text = None


def quiet_footnote_marks(body: Any) -> None:
    """Footnote references lose their number (it would glue to the word before: "m4" + "8"
    read "m48"; their id stays a location), and a footnote's own heading ("(8)", which
    Texinfo makes an `<h5>`) becomes a paragraph, so the footnote is text under "Footnotes"
    rather than a section named by a number."""
    for a in body.iter("a"):
        href = (a.get("href") or "").strip()
        marked = _FOOTNOTE_HREF.search(href) or has_class(a, _FOOTNOTE_CLASS)
        if marked and _FOOTNOTE_MARK.fullmatch(clean(a.text_content())):
            for child in list(a):
                a.remove(child)
            a.text = None
    for el in list(body.iter(*HEADINGS)):
        named = [n for a in el.iter("a") for n in (a.get("id"), a.get("name")) if n]
        if _FOOTNOTE_HEAD.fullmatch(clean(el.text_content())) and any(
            n.upper().startswith("FOOT") or "fn" in n.lower() for n in named
        ):
            el.tag = "p"


def flatten_deep(body: Any) -> None:
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
        pending.extend((child, depth + 1) for child in el if tag_of(child))
