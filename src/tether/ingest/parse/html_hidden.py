"""Text an HTML page hides from its readers: found, marked, and then dropped by the parser.

`hide_by_css(root)` marks every element a reader cannot see (`HIDDEN`, read by `is_hidden`,
with the `hidden` attribute, `aria-hidden="true"` and an inline `display:none` or
`visibility:hidden`) and removes the own text of elements whose text is hidden while something
inside them shows. It joins two readers of the page's CSS:
- `tether.ingest.parse.css`: colours, zero font sizes, `display`/`visibility`/`opacity` set
  by simple selectors (its own small cascade, with inheritance of colours and backgrounds);
- `hidden_by_layout` here: boxes a browser lays out where nobody sees them, with any selector
  cssselect can match (attribute selectors such as `[data-x]`, `p[class~=a]`, `:not()`,
  `:first-child`, sibling combinators), in the style sheets `tether.ingest.parse.css_sheets`
  finds (`<style>`, `data:` sheets linked or imported, CSS nesting undone) and the `style`
  attributes, read by tinycss2 (names and values unescaped: `displ\\61y` is `display`), the
  values judged by `tether.ingest.parse.css_values`:
  - `display:none`, `visibility:hidden`/`collapse`, `content-visibility:hidden`, an opacity
    (or `filter:opacity()`) of at most `FAINT` (attribute selectors, which `css` skips);
  - moved off-screen: a positioned box's `left`/`top`/`right`/`bottom` (or `inset`), plus
    `margin-left`/`margin-top` and a `translate`, at least `OFFSCREEN_PX` up or left (or
    `FAR_PX` down or right), or a `text-indent` of as much;
  - scaled to nothing or turned edge-on: the `transform` functions (`scale()`, `matrix()`,
    `matrix3d()`, `rotate()`, `rotateX()`/`Y()`, `rotate3d()`, `skew()`) and the `scale` and
    `rotate` properties, composed, leaving a side of at most `FAINT` (`rotateX(90deg)`);
  - no room: a zero `width`/`height` (or `max-`) with `overflow` other than visible and no
    padding on that side (a zero-height box padded to an aspect ratio shows its content);
  - clipped away: `clip:rect()` of no area, `clip-path:inset()` whose sides meet (50% and
    50%), a circle or ellipse of radius 0, or a polygon whose points lie on one line;
  - masked: a `mask`/`mask-image` (or `-webkit-`) of gradients whose colours are all
    transparent;
  - text too small to read: a computed font size of at most `TINY_PX`, or at most `SMALL_PX`
    on a zero line height (an element whose children show loses only its own text).

Screen-reader text stays: a box laid out as the usual "visually hidden" recipe (positioned
absolutely, `overflow:hidden`, 1px high or wide: Bootstrap's `sr-only`/`visually-hidden`,
WordPress's `screen-reader-text`, WebAIM's off-screen class) is read, off-screen or clipped,
because assistive technology reads it to people; the instruction detector still reads it.
So is a closed `<details>`: its answer is hidden until opened, but readers open it (the FAQ
pattern). Lengths in `em` are of the element's font size, `%` of a 1280 x 800 viewport
(`VIEWPORT`), and a `calc()` of lengths, percentages and numbers is worked out. An element
shown only in some state (`:hover`, `:focus`, `:target` never match here) is judged in its
plain state.

What it cannot do: it is no layout engine. It fetches no style sheet (only `data:` sheets are
read), runs no script, and counts as visible any value it cannot work out (a `calc()` with
`min()` or mixed units, a `var()` that names no custom property and has no fallback; custom
properties are read, inherited and substituted); it does not see a box pushed out of view by
its siblings, text covered by another box or behind a `z-index`, overflow clipped by an
ancestor smaller than its content, `text-indent` whose text wraps back into view, a partial
clip, a box turned edge-on in another element's `perspective`, a luminance or image mask; a
page can keep hostile text in the screen-reader recipe or a closed `<details>` (it is then
indexed and scanned like any text); `:has()` and selectors of more than `MAX_COMPOUNDS`
compounds never match. A page whose selectors would take more than `MAX_VISITS` element visits
or `MAX_STEPS` steps along combinators to apply is refused (ParseError), not read half-styled.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import cssselect
import tinycss2
from cssselect.parser import Class, CombinedSelector, Hash, Selector
from cssselect.parser import Element as TypeSelector

from tether.errors import ParseError
from tether.ingest.parse.css import Hidden, hidden_by_css
from tether.ingest.parse.css_sheets import MAX_NESTING, sheets, style_rules
from tether.ingest.parse.css_values import (
    READ,
    ROOT_FONT_PX,
    SMALL_PX,
    TINY_PX,
    Tokens,
    box_hidden,
    font_px,
    line_zero,
    longhands,
    plain,
)

__all__ = ["HIDDEN", "hidden_by_layout", "hide_by_css", "is_hidden"]

HIDDEN = "data-tether-hidden"  # marks an element the page's CSS hides
MAX_VISITS = 50_000_000  # what XPath may visit to find the compounds of one page's selectors
VISIT_COST = 16  # an element visited (and handed back) costs as much as 16 siblings counted
MAX_STEPS = 2_000_000  # steps along combinators one page's selectors may take
MAX_COMPOUNDS = 8  # a longer selector is ignored

_READ_WORDS = re.compile("|".join(sorted(READ, key=len, reverse=True)), re.IGNORECASE)
_NEVER_SHOWN = frozenset({"script", "style", "template", "noscript"})
_TRANSLATOR = cssselect.HTMLTranslator()


def is_hidden(el: Any) -> bool:
    """Whether `el` is hidden: marked by `hide_by_css`, a `hidden` attribute,
    `aria-hidden="true"`, or an inline `display:none` / `visibility:hidden`."""
    if (
        el.get(HIDDEN) is not None
        or el.get("hidden") is not None
        or (el.get("aria-hidden") or "").strip().lower() == "true"
    ):
        return True
    style = re.sub(r"\s", "", (el.get("style") or "").lower())
    return "display:none" in style or "visibility:hidden" in style


def hide_by_css(root: Any) -> None:
    """Mark what the page's CSS hides (`HIDDEN`, read by `is_hidden`), and remove the own
    text of elements whose text is hidden while something inside them shows; a mark the page
    itself wrote is removed first. Raises ParseError for styles too costly to apply."""
    for el in root.iter():
        if isinstance(el.tag, str) and el.get(HIDDEN) is not None:
            del el.attrib[HIDDEN]
    found = [hidden_by_css(root), hidden_by_layout(root)]
    for el in dict.fromkeys(e for f in found for e in f.own_text):
        el.text = None
        for child in el:
            child.tail = None
    for el in (e for f in found for e in f.boxes):
        el.set(HIDDEN, "1")


# ---- the cascade ---------------------------------------------------------------------------


def _stylesheet(root: Any) -> Iterator[tuple[str, list[Any]]]:
    """(selector list, declarations) of every rule of the page's style sheets for the screen
    (`css_sheets`: `<style>`, `data:` sheets, nesting undone) that sets a property this
    module reads, in document order."""
    for text in sheets(root):
        yield from style_rules(text, _wanted)


def _wanted(declaration: Any) -> bool:
    return bool(declaration.lower_name in READ or declaration.name.startswith("--"))


def _declarations(content: Any) -> list[Any]:
    """The declarations of a `style` attribute that this module reads (tinycss2 gives each
    name unescaped: `displ\\61y` is `display`)."""
    parsed = tinycss2.parse_declaration_list(content, skip_whitespace=True, skip_comments=True)
    return [d for d in parsed if d.type == "declaration" and _wanted(d)]


def _cascade(root: Any) -> dict[Any, dict[str, tuple[tuple[int, ...], Tokens]]]:
    """For each element styled by a rule or a `style` attribute: the winning (rank, value)
    of each property this module reads (`!important`, then inline over rules, specificity,
    then order)."""
    chosen: dict[Any, dict[str, tuple[tuple[int, ...], Tokens]]] = {}

    def declare(el: Any, values: list[tuple[str, Tokens, int]], rank: tuple[int, ...]) -> None:
        slots = chosen.setdefault(el, {})
        for n, (name, value, important) in enumerate(values):
            full = (important, *rank, n)
            if name not in slots or full > slots[name][0]:
                slots[name] = (full, value)

    matcher = _Matcher(root)
    order = 0
    for prelude, declared in _stylesheet(root):
        try:
            parsed = cssselect.parse(prelude)
        except cssselect.SelectorError:
            continue  # a selector it cannot read, as a browser drops the rule
        values = _values(declared)
        for selector in parsed:
            if selector.pseudo_element is not None:
                continue  # ::before styles generated text, not the element's
            order += 1
            rank = (0, *selector.specificity(), order)
            for el in matcher.match(selector):
                declare(el, values, rank)
    for el in root.iter():
        style = el.get("style") if isinstance(el.tag, str) else None
        if style and (_READ_WORDS.search(style) or "--" in style or "\\" in style):
            declare(el, _values(_declarations(style)), (1, 0, 0, 0, 0))
    return chosen


def _values(declared: list[Any]) -> list[tuple[str, Tokens, int]]:
    """(property, value, important) of each longhand the declarations set; a custom
    property (`--x`, its case kept) and a declaration that reads one with `var()` as they are
    (a shorthand is split once its variables are known: `_resolved`)."""
    out: list[tuple[str, Tokens, int]] = []
    for d in declared:
        value = plain(d.value)
        if d.name.startswith("--"):
            out.append((d.name, value, int(d.important)))
        elif _reads_variable(value):
            out.append((d.lower_name, value, int(d.important)))
        else:
            out.extend((n, v, int(d.important)) for n, v in longhands(d.lower_name, value))
    return out


def _reads_variable(value: Tokens) -> bool:
    return any(t.type == "function" and t.lower_name == "var" for t in value)


def _substituted(value: Tokens, custom: dict[str, Tokens], depth: int = 0) -> Tokens:
    """`value` with each `var(--x, fallback)` replaced by the custom property's value (or the
    fallback); one that is neither stays, and so counts as unknown. Variables that read
    variables are followed `MAX_NESTING` deep."""
    out: Tokens = []
    for t in value:
        if not (t.type == "function" and t.lower_name == "var") or depth > MAX_NESTING:
            out.append(t)
            continue
        args = plain(t.arguments)
        name = args[0].value if args and args[0].type == "ident" else ""
        comma = next((i for i, a in enumerate(args) if a.type == "literal" and a.value == ","), -1)
        found = custom.get(name) if name.startswith("--") else None
        if found is None and comma >= 0:
            found = args[comma + 1 :]
        out.extend(_substituted(found, custom, depth + 1) if found is not None else [t])
    return out


def _resolved(values: dict[str, Tokens], custom: dict[str, Tokens]) -> dict[str, Tokens]:
    """The element's read properties with their `var()`s replaced from `custom` (the custom
    properties it has or inherits), shorthands then split. A longhand set beside a shorthand
    that reads a variable may lose to it whatever their order (no finer cascade here)."""
    out: dict[str, Tokens] = {}
    for name, value in values.items():
        if name.startswith("--"):
            continue
        if _reads_variable(value):
            out.update(longhands(name, _substituted(value, custom)))
        else:
            out.setdefault(name, value)
    return out


class _Matcher:
    """The elements a selector matches: each compound (`p[data-x]`, `.a:not(.b)`) found by
    cssselect's XPath over the whole page, once; the combinators between compounds followed
    here, memoised, so that no selector costs more than a walk of the page per compound.
    Raises ParseError past `MAX_VISITS` XPath visits or `MAX_STEPS` steps."""

    def __init__(self, root: Any) -> None:
        self.root = root
        elements = [el for el in root.iter() if isinstance(el.tag, str)]
        self.size = len(elements)
        # what counting every element's earlier siblings costs (`:first-child`, `:nth-child`)
        self.siblings = sum(len(el) * len(el) for el in elements) // 2
        self.keys = {"t:" + el.tag.lower() for el in elements}
        self.keys |= {"#" + el.get("id", "") for el in elements if el.get("id")}
        self.keys |= {"." + c for el in elements for c in (el.get("class") or "").split()}
        self.found: dict[str, set[Any]] = {}
        self.visits = 0
        self.steps = 0

    def match(self, selector: Any) -> set[Any]:
        chain: list[tuple[str, Any]] = []  # (combinator, compound), right to left
        tree = selector.parsed_tree
        while isinstance(tree, CombinedSelector):
            chain.append((tree.combinator, tree.subselector))
            tree = tree.selector
        if len(chain) >= MAX_COMPOUNDS:
            return set()
        found = self._compound(tree)
        for combinator, compound in reversed(chain):
            if not found:
                break
            found = self._follow(combinator, found, self._compound(compound))
        self._step(len(found))  # each match is a declaration to weigh
        return found

    def _compound(self, tree: Any) -> set[Any]:
        """The elements one compound matches (none for a pseudo-class cssselect does not
        know, or one that looks inside or around the element: `:has()`)."""
        try:
            xpath = _TRANSLATOR.selector_to_xpath(Selector(tree))
        except cssselect.ExpressionError:
            return set()  # :hover, :focus-within...: never in the plain state
        if xpath in self.found:
            return self.found[xpath]
        if "Relation[" in repr(tree) or not _needs(tree) <= self.keys:
            self.found[xpath] = set()  # :has(), or a tag, class or id the page lacks
            return set()
        counts = "sibling::" in xpath  # :first-child, :nth-child(), :only-of-type...
        self.visits += VISIT_COST * self.size + (self.siblings if counts else 0)
        if self.visits > MAX_VISITS:
            raise ParseError("HTML cannot be read: its style rules are too many to apply")
        self.found[xpath] = set(self.root.xpath(xpath))
        return self.found[xpath]

    def _step(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > MAX_STEPS:
            raise ParseError("HTML cannot be read: its style rules are too many to apply")

    def _follow(self, combinator: str, left: set[Any], right: set[Any]) -> set[Any]:
        """The elements of `right` that stand in `combinator` to an element of `left`."""
        self._step(len(right))
        if combinator == ">":
            return {el for el in right if el.getparent() in left}
        if combinator == "+":
            return {el for el in right if _previous(el) in left}
        up = _previous if combinator == "~" else _parent
        memo: dict[Any, bool] = {}  # it, or one before it along `up`, is in `left`

        def reached(el: Any) -> bool:
            path, result, at = [], False, el
            while at is not None:
                if at in memo:
                    result = memo[at]
                    break
                self._step()
                path.append(at)
                if at in left:
                    result = True
                    break
                at = up(at)
            for seen in path:
                memo[seen] = result
            return result

        return {el for el in right if (first := up(el)) is not None and reached(first)}


def _needs(tree: Any) -> set[str]:
    """The tag ("t:p"), classes (".x") and ids ("#y") an element needs to match a compound
    (those inside `:not()`, `:is()` and the like left out)."""
    keys: set[str] = set()
    while tree is not None:
        if isinstance(tree, Class):
            keys.add("." + tree.class_name)
        elif isinstance(tree, Hash):
            keys.add("#" + tree.id)
        elif isinstance(tree, TypeSelector):
            if tree.element:
                keys.add("t:" + tree.element.lower())
            break
        tree = getattr(tree, "selector", None)
    return keys


def _parent(el: Any) -> Any | None:
    return el.getparent()


def _previous(el: Any) -> Any | None:
    """The element sibling before `el` (comments skipped)."""
    at = el.getprevious()
    while at is not None and not isinstance(at.tag, str):
        at = at.getprevious()
    return at


# ---- applying them -------------------------------------------------------------------------


def hidden_by_layout(root: Any) -> Hidden:
    """What the layout of the page `root` (an lxml HTML document) puts out of sight outside
    its `<head>` (see the module docstring). Raises ParseError for styles too costly."""
    chosen = _cascade(root)
    order: list[Any] = []
    boxed: dict[Any, bool] = {}
    tiny: dict[Any, bool] = {}
    stack: list[tuple[Any, float, bool, dict[str, Tokens]]] = [(root, ROOT_FONT_PX, False, {})]
    while stack:
        el, parent_px, parent_line, inherited = stack.pop()
        declared = {k: v for k, (_, v) in chosen.get(el, {}).items()}
        custom = inherited
        if any(k.startswith("--") for k in declared):  # custom properties are inherited
            custom = {**inherited, **{k: v for k, v in declared.items() if k.startswith("--")}}
        values = _resolved(declared, custom)
        size = font_px(values.get("font-size"), parent_px)
        line = line_zero(values.get("line-height"), parent_line)
        order.append(el)
        boxed[el] = bool(values) and box_hidden(values, size)
        tiny[el] = size <= TINY_PX or (line and size <= SMALL_PX)
        for child in reversed(el):
            if isinstance(child.tag, str) and child.tag.lower() != "head":
                stack.append((child, size, line, custom))
    shows: dict[Any, bool] = {}
    found = Hidden()
    for el in reversed(order):  # children before their parents
        inner = any(shows.get(c, False) for c in el)
        own = bool((el.text or "").strip()) or any((c.tail or "").strip() for c in el)
        visible = own and not tiny[el] and el.tag.lower() not in _NEVER_SHOWN
        shows[el] = not boxed[el] and (visible or inner)
        if boxed[el] or (tiny[el] and own and not inner):
            found.boxes.append(el)
        elif tiny[el] and own:
            found.own_text.append(el)
    found.boxes.reverse()
    found.own_text.reverse()
    return found
