"""Where a page's CSS comes from, and its style rules with CSS nesting undone.

`sheets(root)` yields the text of every style sheet of an lxml HTML page that applies to a
screen, in document order: each `<style>` (no `media`, or one for all or screen), each
`<link rel="stylesheet" href="data:text/css,...">` (a `data:` URL is CSS written inline,
percent-encoded or base64), and before a sheet's own text the `data:` sheets it `@import`s
(for all or screen), `MAX_NESTING` deep. `tether.ingest.parse.css` and
`tether.ingest.parse.html_hidden` both read them.

`style_rules(text, wanted)` yields (selector list, declarations) of each style rule of one
sheet (tinycss2), entering `@media` blocks for all or screen, `@supports` and `@layer`, and
nested rules: a rule inside a style rule applies with the parent's selector put in place of
its `&`, or before it as an ancestor when it has none (`.y{ .x{...} }` is `.y .x`); an
`@media`/`@supports`/`@layer` block inside a style rule adds to the parent's declarations.

What it cannot do: fetch anything. A sheet at any other address (`http:`, a file, a `data:`
URL of another type) is never read, nor an `@import` after a rule (browsers ignore it too).
A nested selector whose `&` stands after a combinator while the parent selector has
combinators of its own (`p > &` inside `.a .b`) is skipped: cssselect's `:is()` takes only
compounds; an `&` inside a quoted attribute value is replaced like any other; a nested rule
whose selectors and its parents' would combine into more than `MAX_COMBINED` is skipped.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import unquote_to_bytes

import cssselect
import tinycss2
from cssselect.parser import CombinedSelector

__all__ = ["MAX_NESTING", "for_screen", "sheets", "style_rules"]

MAX_NESTING = 4  # blocks nested deeper (at-rules, nested rules, imports) are skipped
MAX_COMBINED = 256  # a nested rule whose selectors combine into more is skipped
_SCREEN = re.compile(r"(?:only\s+)?(?:all|screen)")
_GLUED = re.compile(r"[^\s>+~(,]&")  # an `&` written onto a compound (`.x&`)
_PLAIN = {"skip_whitespace": True, "skip_comments": True}


def for_screen(media: str) -> bool:
    """Whether a media query list (lower case, spaces collapsed) applies on a screen."""
    return any(_SCREEN.fullmatch(q.strip()) for q in media.split(","))


def sheets(root: Any) -> Iterator[str]:
    """The text of each style sheet of the page for the screen, in document order, each
    `data:` sheet it imports before it."""
    for el in root.iter("style", "link"):
        media = " ".join((el.get("media") or "").lower().split())
        if media and not for_screen(media):
            continue
        if el.tag == "style":
            yield from _with_imports("".join(el.itertext()), 0)
        else:
            rel = (el.get("rel") or "").lower().split()
            css = _data_css(el.get("href") or "")
            enabled = el.get("disabled") is None and "alternate" not in rel
            if "stylesheet" in rel and enabled and css is not None:
                yield from _with_imports(css, 0)


def _with_imports(text: str, depth: int) -> Iterator[str]:
    if depth < MAX_NESTING and "@import" in text.lower():
        for node in tinycss2.parse_stylesheet(text, **_PLAIN):
            if node.type == "at-rule" and node.lower_at_keyword == "import":
                css = _imported(node.prelude)
                if css is not None:
                    yield from _with_imports(css, depth + 1)
            elif node.type != "at-rule" or node.lower_at_keyword not in ("charset", "layer"):
                break  # an @import after a rule is ignored
    yield text


def _imported(prelude: list[Any]) -> str | None:
    """The CSS an `@import` brings in for the screen: a `data:` sheet only."""
    tokens = [t for t in prelude if t.type not in ("whitespace", "comment")]
    if not tokens:
        return None
    first, rest = tokens[0], tokens[1:]
    if first.type in ("url", "string"):
        address = first.value
    elif first.type == "function" and first.lower_name == "url":
        inner = [t for t in first.arguments if t.type == "string"]
        address = inner[0].value if inner else ""
    else:
        return None
    rest = [t for t in rest if not (t.type == "function" and t.lower_name in ("layer", "supports"))]
    rest = [t for t in rest if not (t.type == "ident" and t.lower_value == "layer")]
    media = " ".join(tinycss2.serialize(rest).lower().split())
    return _data_css(address) if not media or for_screen(media) else None


def _data_css(address: str) -> str | None:
    """The text of a `data:text/css` URL (percent-encoded or base64); None for any other."""
    address = address.strip()
    if address[:5].lower() != "data:":
        return None
    head, comma, body = address[5:].partition(",")
    params = [p.strip().lower() for p in head.split(";")]
    if not comma or params[0] != "text/css":
        return None
    raw = unquote_to_bytes(body)
    if "base64" in params[1:]:
        raw = re.sub(rb"[^A-Za-z0-9+/]", b"", raw)
        try:
            raw = base64.b64decode(raw + b"=" * (-len(raw) % 4))
        except (binascii.Error, ValueError):
            return None
    charset = next((p[8:] for p in params if p.startswith("charset=")), "utf-8")
    try:
        return raw.decode(charset, errors="replace")
    except LookupError:
        return raw.decode("utf-8", errors="replace")


# ---- rules ---------------------------------------------------------------------------------


def style_rules(text: str, wanted: Callable[[Any], bool]) -> Iterator[tuple[str, list[Any]]]:
    """(selector list, declarations) of each style rule of the sheet `text` that declares
    something `wanted`, nesting undone, in order (see the module docstring)."""
    yield from _rules(tinycss2.parse_stylesheet(text, **_PLAIN), wanted, None, 0)


def _rules(
    nodes: Iterable[Any], wanted: Callable[[Any], bool], parents: list[str] | None, depth: int
) -> Iterator[tuple[str, list[Any]]]:
    for node in nodes:
        if node.type == "qualified-rule":
            selectors = _selectors(node.prelude, parents)
            if selectors:
                inner = tinycss2.parse_blocks_contents(node.content, **_PLAIN)
                yield from _block(inner, selectors, wanted, depth)
        elif node.type == "at-rule" and node.content is not None and depth < MAX_NESTING:
            kind = node.lower_at_keyword
            query = " ".join(tinycss2.serialize(node.prelude).lower().split())
            if not (kind in ("supports", "layer") or (kind == "media" and for_screen(query))):
                continue
            if parents is None:
                inner = tinycss2.parse_rule_list(node.content, **_PLAIN)
                yield from _rules(inner, wanted, None, depth + 1)
            else:
                inner = tinycss2.parse_blocks_contents(node.content, **_PLAIN)
                yield from _block(inner, parents, wanted, depth + 1)


def _block(
    inner: list[Any], selectors: list[str], wanted: Callable[[Any], bool], depth: int
) -> Iterator[tuple[str, list[Any]]]:
    declared = [d for d in inner if d.type == "declaration" and wanted(d)]
    if declared:
        yield ", ".join(selectors), declared
    nested = [n for n in inner if n.type in ("qualified-rule", "at-rule")]
    if nested and depth < MAX_NESTING:
        yield from _rules(nested, wanted, selectors, depth + 1)


def _selectors(prelude: list[Any], parents: list[str] | None) -> list[str]:
    """The selectors of a rule's prelude, each combined with each parent's when nested."""
    pieces: list[list[Any]] = [[]]
    for t in prelude:
        if t.type == "literal" and t.value == ",":
            pieces.append([])
        else:
            pieces[-1].append(t)
    own = [tinycss2.serialize(p).strip() for p in pieces]
    if parents is None:
        return own
    if len(parents) * len(own) > MAX_COMBINED:
        return []
    out = []
    for parent in parents:
        compound = _compound(parent)
        for piece in own:
            if "&" not in piece:
                out.append(f"{parent} {piece}")
            elif compound:
                out.append(piece.replace("&", f":is({parent})" if _GLUED.search(piece) else parent))
            elif piece.startswith("&") and piece.count("&") == 1:
                out.append(parent + piece[1:])
    return out


def _compound(selector: str) -> bool:
    """Whether a selector is one compound (no combinator), so that `:is()` can hold it."""
    try:
        parsed = cssselect.parse(selector)
    except cssselect.SelectorError:
        return False
    return len(parsed) == 1 and not isinstance(parsed[0].parsed_tree, CombinedSelector)
