"""Text an HTML page hides from its readers: found, marked, and then dropped by the parser.

`hide_by_css(root)` marks every element a reader cannot see (`HIDDEN`, read by `is_hidden`,
with the `hidden` attribute, `aria-hidden="true"` and an inline `display:none` or
`visibility:hidden`) and removes the own text of elements whose text is hidden while something
inside them shows. It joins two readers of the page's CSS:
- `tether.ingest.parse.css`: colours, zero font sizes, `display`/`visibility`/`opacity` set
  by simple selectors (its own small cascade, with inheritance of colours and backgrounds);
- `hidden_by_layout` here: boxes a browser lays out where nobody sees them, with any selector
  cssselect can match (attribute selectors such as `[data-x]`, `p[class~=a]`, `:not()`,
  `:first-child`, sibling combinators), the style sheets read by tinycss2:
  - `display:none`, `visibility:hidden`/`collapse`, `content-visibility:hidden`, an opacity
    (or `filter:opacity()`) of at most `FAINT` (attribute selectors, which `css` skips);
  - moved off-screen: a positioned box's `left`/`top`/`right`/`bottom` (or `inset`), plus
    `margin-left`/`margin-top` and a `translate`, at least `OFFSCREEN_PX` up or left (or
    `FAR_PX` down or right), or a `text-indent` of as much;
  - scaled to nothing: `transform` with `scale()` (X, Y, 3d) of at most `FAINT`, a flat
    `matrix()`, or the `scale` property;
  - no room: a zero `width`/`height` (or `max-`) with `overflow` other than visible and no
    padding on that side (a zero-height box padded to an aspect ratio shows its content);
  - clipped away: `clip:rect()` of no area, `clip-path:inset()` whose sides meet (50% and
    50%), or a circle or ellipse of radius 0;
  - text too small to read: a computed font size of at most `TINY_PX`, or at most `SMALL_PX`
    on a zero line height (an element whose children show loses only its own text).

Screen-reader text stays: a box laid out as the usual "visually hidden" recipe (positioned
absolutely, `overflow:hidden`, 1px high or wide: Bootstrap's `sr-only`/`visually-hidden`,
WordPress's `screen-reader-text`, WebAIM's off-screen class) is read, off-screen or clipped,
because assistive technology reads it to people; the instruction detector still reads it.
Lengths in `em` are of the element's font size, `%` of a 1280 x 800 viewport (`VIEWPORT`).
An element shown only in some state (`:hover`, `:focus`, `:target` never match here) is
judged in its plain state.

What it cannot do: it is no layout engine. It does not see external style sheets, scripts,
`calc()` or a `var()` that names no custom property and has no fallback (an unknown value
counts as visible; custom properties are read, inherited and substituted), a box pushed out of view by its
siblings, text covered by another box or behind a `z-index`, overflow clipped by an ancestor
smaller than its content, `text-indent` whose text wraps back into view, or a partial clip;
a page can keep hostile text in the screen-reader recipe (it is then indexed and scanned like
any text); `:has()` and selectors of more than `MAX_COMPOUNDS` compounds never match. A page
whose selectors would take more than `MAX_VISITS` element visits or `MAX_STEPS` steps along
combinators to apply is refused (ParseError), not read half-styled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import cssselect
import tinycss2
from cssselect.parser import Class, CombinedSelector, Hash, Selector
from cssselect.parser import Element as TypeSelector

from tether.errors import ParseError
from tether.ingest.parse.css import Hidden, hidden_by_css

__all__ = ["HIDDEN", "hidden_by_layout", "hide_by_css", "is_hidden"]

HIDDEN = "data-tether-hidden"  # marks an element the page's CSS hides
OFFSCREEN_PX = 999.0  # moved at least this far up or left: off the page
FAR_PX = 9000.0  # moved at least this far down or right: off the page
FAINT = 0.01  # an opacity or a scale factor at most this: nothing to see
TINY_PX = 2.0  # text at most this size cannot be read
SMALL_PX = 4.0  # ... nor at most this size on a zero line height
ROOT_FONT_PX = 16.0
VIEWPORT = (1280.0, 800.0)  # what % lengths are of (horizontal, vertical)
MAX_VISITS = 50_000_000  # what XPath may visit to find the compounds of one page's selectors
VISIT_COST = 16  # an element visited (and handed back) costs as much as 16 siblings counted
MAX_STEPS = 2_000_000  # steps along combinators one page's selectors may take
MAX_COMPOUNDS = 8  # a longer selector is ignored
MAX_NESTING = 4  # at-rule blocks nested deeper are skipped

_UNITS = {
    "px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4,
    "q": 96 / 101.6, "rem": ROOT_FONT_PX, "vw": VIEWPORT[0] / 100, "vh": VIEWPORT[1] / 100,
    "vmin": VIEWPORT[1] / 100, "vmax": VIEWPORT[0] / 100,
}  # fmt: skip
_FONT_WORDS = {
    "xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0,
    "x-large": 24.0, "xx-large": 32.0, "xxx-large": 48.0,
}  # fmt: skip
_READ = frozenset(
    {
        "display", "visibility", "opacity", "content-visibility", "filter", "position", "left",
        "top", "right", "bottom", "inset", "margin", "margin-left", "margin-top",
        "text-indent", "transform", "translate", "scale", "width", "height", "max-width",
        "max-height", "overflow", "overflow-x", "overflow-y", "padding", "padding-left",
        "padding-right", "padding-top", "padding-bottom", "clip", "clip-path", "font-size",
        "font", "line-height",
    }
)  # fmt: skip
_READ_WORDS = re.compile("|".join(sorted(_READ, key=len, reverse=True)), re.IGNORECASE)
_NEVER_SHOWN = frozenset({"script", "style", "template", "noscript"})
_SCREEN = re.compile(r"(?:only\s+)?(?:all|screen)")
_TRANSLATOR = cssselect.HTMLTranslator()

_T = TypeVar("_T")
Tokens = list[Any]  # tinycss2 component values, whitespace and comments left out


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
    """(selector list, declarations) of every rule of the page's `<style>` elements for the
    screen that sets a property this module reads, in document order."""
    for style in root.iter("style"):
        media = " ".join((style.get("media") or "").lower().split())
        if media and not _for_screen(media):
            continue
        nodes = tinycss2.parse_stylesheet(
            "".join(style.itertext()), skip_whitespace=True, skip_comments=True
        )
        yield from _rules(nodes, 0)


def _rules(nodes: Iterable[Any], depth: int) -> Iterator[tuple[str, list[Any]]]:
    for node in nodes:
        if node.type == "qualified-rule":
            declarations = _declarations(node.content)
            if declarations:
                yield tinycss2.serialize(node.prelude), declarations
        elif node.type == "at-rule" and node.content is not None and depth < MAX_NESTING:
            kind = node.lower_at_keyword
            query = " ".join(tinycss2.serialize(node.prelude).lower().split())
            if kind in ("supports", "layer") or (kind == "media" and _for_screen(query)):
                inner = tinycss2.parse_rule_list(
                    node.content, skip_whitespace=True, skip_comments=True
                )
                yield from _rules(inner, depth + 1)


def _for_screen(media: str) -> bool:
    return any(_SCREEN.fullmatch(q.strip()) for q in media.split(","))


def _declarations(content: Any) -> list[Any]:
    """The declarations of a block (tokens or text) that this module reads."""
    parsed = tinycss2.parse_declaration_list(content, skip_whitespace=True, skip_comments=True)
    return [
        d
        for d in parsed
        if d.type == "declaration" and (d.lower_name in _READ or d.name.startswith("--"))
    ]


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
        if style and (_READ_WORDS.search(style) or "--" in style):
            declare(el, _values(_declarations(style)), (1, 0, 0, 0, 0))
    return chosen


def _values(declared: list[Any]) -> list[tuple[str, Tokens, int]]:
    """(property, value, important) of each longhand the declarations set; a custom
    property (`--x`, its case kept) and a declaration that reads one with `var()` as they are
    (a shorthand is split once its variables are known: `_resolved`)."""
    out: list[tuple[str, Tokens, int]] = []
    for d in declared:
        value = _plain(d.value)
        if d.name.startswith("--"):
            out.append((d.name, value, int(d.important)))
        elif _reads_variable(value):
            out.append((d.lower_name, value, int(d.important)))
        else:
            out.extend((n, v, int(d.important)) for n, v in _longhands(d.lower_name, value))
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
        args = _plain(t.arguments)
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
            out.update(_longhands(name, _substituted(value, custom)))
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


def _plain(value: Iterable[Any]) -> Tokens:
    return [t for t in value if t.type not in ("whitespace", "comment")]


def _longhands(name: str, value: Tokens) -> Iterator[tuple[str, Tokens]]:
    """A declaration as the properties it sets (shorthands split: margin, padding, inset,
    overflow, font)."""
    if name in ("margin", "padding", "inset"):
        prefix = "" if name == "inset" else name + "-"
        sides = _box4(_split(value))
        if sides is not None:
            for side, v in zip(("top", "right", "bottom", "left"), sides, strict=True):
                yield prefix + side, v
    elif name == "overflow":
        values = _split(value)
        if values:
            yield "overflow-x", values[0]
            yield "overflow-y", values[-1]
    elif name == "font":
        size, line = _font_parts(value)
        if size is not None:
            yield "font-size", size
            yield "line-height", line or []  # the shorthand resets it to `normal`
    else:
        yield name, value


def _split(value: Tokens) -> list[Tokens]:
    """Each component of a space- or comma-separated value as its own token list."""
    return [[t] for t in value if not (t.type == "literal" and t.value == ",")]


def _box4(values: list[_T]) -> tuple[_T, _T, _T, _T] | None:
    """top, right, bottom, left of a 1 to 4 value box shorthand (None: another count)."""
    if not 1 <= len(values) <= 4:
        return None
    top = values[0]
    right = values[1] if len(values) > 1 else top
    bottom = values[2] if len(values) > 2 else top
    left = values[3] if len(values) > 3 else right
    return top, right, bottom, left


def _font_parts(value: Tokens) -> tuple[Tokens | None, Tokens | None]:
    """The size and the line height of a `font` shorthand (None: a system font, or not
    given); a plain number before the size is a weight."""
    for i, t in enumerate(value):
        is_size = (
            t.type in ("dimension", "percentage")
            or (t.type == "number" and t.value == 0)
            or (t.type == "ident" and t.lower_value in _FONT_WORDS)
        )
        if is_size:
            rest = value[i + 1 :]
            if len(rest) >= 2 and rest[0].type == "literal" and rest[0].value == "/":
                return [t], [rest[1]]
            return [t], None
    return None, None


# ---- what the values mean ------------------------------------------------------------------


def _length(value: Tokens | None, font_px: float, axis: int = 0) -> float | None:
    """A length in px (None: absent, auto, or unknown); `%` of the viewport along `axis`."""
    if not value or len(value) != 1:
        return None
    t = value[0]
    if t.type == "number":
        return 0.0 if t.value == 0 else None
    if t.type == "percentage":
        return float(t.value) * VIEWPORT[axis] / 100
    if t.type != "dimension":
        return None
    unit = t.lower_unit
    if unit in ("em",):
        return float(t.value) * font_px
    if unit in ("ex", "ch"):
        return float(t.value) * font_px / 2
    factor = _UNITS.get(unit)
    return None if factor is None else float(t.value) * factor


def _word(value: Tokens | None) -> str:
    return value[0].lower_value if value and len(value) == 1 and value[0].type == "ident" else ""


def _number(t: Any) -> float | None:
    """A number or a percentage as a fraction (50% is 0.5)."""
    if t.type == "number":
        return float(t.value)
    if t.type == "percentage":
        return float(t.value) / 100
    return None


def _font_px(value: Tokens | None, parent: float) -> float:
    """The computed font size of an element whose parent's is `parent`."""
    if not value:
        return parent
    if len(value) == 1 and value[0].type == "ident":
        word = value[0].lower_value
        if word in _FONT_WORDS:
            return _FONT_WORDS[word]
        return {"smaller": parent / 1.2, "larger": parent * 1.2, "initial": 16.0}.get(word, parent)
    if len(value) == 1 and value[0].type == "percentage" and value[0].value >= 0:
        return parent * float(value[0].value) / 100
    size = _length(value, parent)
    if size is None:
        return ROOT_FONT_PX if value[0].type == "function" else parent  # calc(): unknown
    return size if size >= 0 else parent  # a negative size is invalid: ignored


def _line_zero(value: Tokens | None, parent: bool) -> bool:
    """Whether the computed line height is zero (inherited when not set)."""
    if value is None:
        return parent
    if _word(value) in ("inherit", "unset"):
        return parent
    if len(value) == 1 and value[0].type in ("number", "percentage", "dimension"):
        return bool(value[0].value == 0)
    return False


def _functions(value: Tokens | None) -> Iterator[tuple[str, list[float | None], list[Any]]]:
    """(name, numbers, raw arguments) of each function in a value such as a transform."""
    for t in value or ():
        if t.type == "function":
            args = [a for a in _plain(t.arguments) if not (a.type == "literal" and a.value == ",")]
            yield t.lower_name, [_number(a) for a in args], args


def _translation(args: list[Any], font_px: float, axis: int) -> float:
    """The px a translate moves along `axis` (0: x) given its arguments; a % of the box's
    own size, or anything unknown, counts as no move."""
    if len(args) <= axis or args[axis].type != "dimension":
        return 0.0
    return _length([args[axis]], font_px) or 0.0


def _transform(value: Tokens | None, font_px: float) -> tuple[bool, float, float]:
    """Whether a transform scales the box to nothing, and how far it moves it (x, y)."""
    flat, x, y = False, 0.0, 0.0
    for name, numbers, args in _functions(value):
        if name in ("scale", "scalex", "scaley", "scale3d"):
            flat |= any(f is not None and abs(f) <= FAINT for f in numbers[:2])
        elif name == "matrix" and len(numbers) == 6 and None not in numbers:
            a, b, c, d, e, f = (n or 0.0 for n in numbers)
            flat |= abs(a * d - b * c) <= FAINT * FAINT
            x, y = x + e, y + f
        elif name in ("translate", "translate3d"):
            x, y = x + _translation(args, font_px, 0), y + _translation(args, font_px, 1)
        elif name == "translatex":
            x += _translation(args, font_px, 0)
        elif name == "translatey":
            y += _translation(args, font_px, 0)
    return flat, x, y


def _offscreen(v: dict[str, Tokens], font_px: float) -> bool:
    """Whether the box is moved out of the page: a positioned box's offset (`left`, else
    minus `right`; `top`, else minus `bottom`) plus its margin and translations, or its
    `text-indent`, at least `OFFSCREEN_PX` up or left or `FAR_PX` down or right."""
    _, *moved = _transform(v.get("transform"), font_px)
    translate = _split(v.get("translate") or [])
    positioned = _word(v.get("position")) in ("absolute", "fixed", "relative", "sticky")
    shifts = []
    for axis, (near, far, margin) in enumerate(
        (("left", "right", "margin-left"), ("top", "bottom", "margin-top"))
    ):
        offset: float | None = 0.0
        if positioned and v.get(near) is not None and _word(v.get(near)) != "auto":
            offset = _length(v.get(near), font_px, axis)
        elif positioned:
            away = _length(v.get(far), font_px, axis)
            offset = -away if away is not None else 0.0
        margin_px: float | None = 0.0
        if v.get(margin) is not None and _word(v.get(margin)) != "auto":
            margin_px = _length(v.get(margin), font_px, axis)
        extra = _translation([t[0] for t in translate], font_px, axis)
        if offset is not None and margin_px is not None:
            shifts.append(offset + margin_px + moved[axis] + extra)
    indent = _length(v.get("text-indent"), font_px)
    if indent is not None:
        shifts.append(indent)
    return any(s <= -OFFSCREEN_PX or s >= FAR_PX for s in shifts)


def _no_room(v: dict[str, Tokens], font_px: float) -> bool:
    """A zero width or height whose overflow does not show, with no padding on that side."""
    for sizes, overflow, pads in (
        (("width", "max-width"), "overflow-x", ("padding-left", "padding-right")),
        (("height", "max-height"), "overflow-y", ("padding-top", "padding-bottom")),
    ):
        if _word(v.get(overflow)) not in ("hidden", "clip", "scroll", "auto"):
            continue
        zero = any(_length(v.get(s), font_px) == 0 for s in sizes)
        padded = any(_length(v.get(p), font_px) not in (None, 0.0) for p in pads)
        if zero and not padded:
            return True
    return False


def _clipped(v: dict[str, Tokens]) -> bool:
    """`clip:rect()` of no area, or a `clip-path` inset whose opposite sides meet (50% and
    50%: only % insets are judged), or a circle or ellipse of radius 0."""
    for name, _, args in _functions(v.get("clip")):
        if name == "rect" and len(args) == 4:
            top, right, bottom, left = (_length([a], ROOT_FONT_PX) for a in args)
            if (top is not None and bottom is not None and bottom <= top) or (
                left is not None and right is not None and right <= left
            ):
                return True
    for name, numbers, args in _functions(v.get("clip-path")):
        if name == "inset":
            until = next((i for i, a in enumerate(args) if _word([a]) == "round"), len(args))
            judged = [
                n if a.type == "percentage" or n == 0 else None
                for n, a in zip(numbers[:until], args[:until], strict=True)
            ]
            sides = _box4(judged)
            if sides is not None:
                top, right, bottom, left = sides
                if (top is not None and bottom is not None and top + bottom >= 1) or (
                    left is not None and right is not None and left + right >= 1
                ):
                    return True
        elif name in ("circle", "ellipse") and args:
            until = next((i for i, a in enumerate(args) if _word([a]) == "at"), len(args))
            if any(_length([a], ROOT_FONT_PX) == 0 for a in args[:until]):
                return True
    return False


def _screen_reader(v: dict[str, Tokens], font_px: float) -> bool:
    """The "visually hidden" recipe: absolutely placed, overflow hidden, 1px high or wide."""
    return (
        _word(v.get("position")) in ("absolute", "fixed")
        and "hidden" in (_word(v.get("overflow-x")), _word(v.get("overflow-y")))
        and any(_length(v.get(s), font_px) == 1.0 for s in ("width", "height"))
    )


def _faint(value: Tokens | None) -> bool:
    if not value or len(value) != 1:
        return False
    number = _number(value[0])
    return number is not None and number <= FAINT


def _box_hidden(v: dict[str, Tokens], font_px: float) -> bool:
    """Whether the element and all inside it are out of sight (see the module docstring)."""
    if (
        _word(v.get("display")) == "none"
        or _word(v.get("visibility")) in ("hidden", "collapse")
        or _word(v.get("content-visibility")) == "hidden"
        or _faint(v.get("opacity"))
        or any(n == "opacity" and a and _faint(a[:1]) for n, _, a in _functions(v.get("filter")))
    ):
        return True
    flat, _, _ = _transform(v.get("transform"), font_px)
    if flat or any(_faint([t]) for t in v.get("scale") or ()):
        return True
    if _screen_reader(v, font_px):
        return False  # read to people by assistive technology: content
    return _offscreen(v, font_px) or _no_room(v, font_px) or _clipped(v)


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
        font_px = _font_px(values.get("font-size"), parent_px)
        line = _line_zero(values.get("line-height"), parent_line)
        order.append(el)
        boxed[el] = bool(values) and _box_hidden(values, font_px)
        tiny[el] = font_px <= TINY_PX or (line and font_px <= SMALL_PX)
        for child in reversed(el):
            if isinstance(child.tag, str) and child.tag.lower() != "head":
                stack.append((child, font_px, line, custom))
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
