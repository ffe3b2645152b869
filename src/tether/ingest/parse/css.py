"""CSS that hides text: what a reader of an HTML page cannot see, read well enough to drop it.

`hidden_by_css(root)` reads the page's `<style>` elements and every `style` attribute and
finds what a browser would not show: `boxes`, elements hidden whole (`display:none`,
`visibility:hidden` or `collapse`, `opacity:0`, or text that is all invisible), and
`own_text`, elements whose own text is invisible while some element inside them is not
(that text goes, the inner elements stay). Text is invisible when it is set in a zero font
size (`font-size:0`, the shorthand `font:0/0 a`, or an em or % size of a zero one) or in the
colour of the background behind it: the element's own `background`/`background-color`, else
the nearest ancestor's, else the browser's white canvas ("the same" is within `SAME_COLOUR`
of 255 per channel; a half-transparent colour is blended first, so a transparent one is
invisible on anything).

Rules apply through a small cascade: selectors made of compounds (`div`, `*`, `.note`, `#x`,
`p.warn.small`) joined by descendant (` `) or child (`>`) combinators; `!important`, a
`style` attribute over a rule, specificity, then order decide between declarations; colour,
font size and visibility are inherited, and a background shows through a transparent child.
`@media` blocks for all or screen and `@supports`/`@layer` blocks are read as if they applied;
`<style media=...>` for anything else and every other at-rule are skipped.

The style sheets are `tether.ingest.parse.css_sheets.sheets`: `<style>` elements and `data:`
sheets, linked or imported; an escaped name or value (`col\\6f r`) reads as its letters.

What it cannot do: it is no CSS engine. It does not see style sheets at any other address,
nested rules (`html_hidden` reads those for `display` and the like, not for colours), rules
whose selectors use attributes, pseudo-classes or pseudo-elements, sibling combinators (`+`,
`~`) or escapes (such a rule is ignored, whether it hides or shows), media
queries with conditions, `var()`/`calc()` (an unknown value counts as visible), text moved
off-screen (`position`, `text-indent`, `clip`), boxes of zero size (`height:0` with
`overflow:hidden`), a tiny but non-zero font, colours further than `SAME_COLOUR` from the
background, text over a background image or gradient (never taken as hidden), or anything a
script changes. An element shown only in some state (`:hover`, a class a script adds, a
dark theme chosen by a media query) is judged in its plain state, so a collapsed FAQ answer
styled `display:none` is dropped like any hidden text, and white text on a page whose dark
background only a media query sets is taken as white on white. A page whose styles would
take more than `MAX_CHECKS` selector checks to apply is refused (ParseError), not read
half-styled.
"""

from __future__ import annotations

import colorsys
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tether.errors import ParseError
from tether.ingest.parse.css_sheets import for_screen, sheets

SAME_COLOUR = 8  # channels (0-255) this close count as the same colour
MAX_CHECKS = 3_000_000  # compound-against-element checks one page may take
MAX_COMPOUNDS = 8  # a longer selector is ignored
MAX_NESTING = 4  # at-rule blocks nested deeper are skipped
MAX_KEYS = 512  # the tags, ids and classes of an element's ancestors kept for quick rejection

Rgba = tuple[float, float, float, float]  # channels 0-255, alpha 0-1
WHITE: Rgba = (255.0, 255.0, 255.0, 1.0)
BLACK: Rgba = (0.0, 0.0, 0.0, 1.0)
_NAMED_TEXT = """
    aliceblue:f0f8ff antiquewhite:faebd7 aqua:00ffff aquamarine:7fffd4 azure:f0ffff
    beige:f5f5dc bisque:ffe4c4 black:000000 blanchedalmond:ffebcd blue:0000ff blueviolet:8a2be2
    brown:a52a2a burlywood:deb887 cadetblue:5f9ea0 chartreuse:7fff00 chocolate:d2691e
    coral:ff7f50 cornflowerblue:6495ed cornsilk:fff8dc crimson:dc143c cyan:00ffff
    darkblue:00008b darkcyan:008b8b darkgoldenrod:b8860b darkgray:a9a9a9 darkgreen:006400
    darkgrey:a9a9a9 darkkhaki:bdb76b darkmagenta:8b008b darkolivegreen:556b2f darkorange:ff8c00
    darkorchid:9932cc darkred:8b0000 darksalmon:e9967a darkseagreen:8fbc8f darkslateblue:483d8b
    darkslategray:2f4f4f darkslategrey:2f4f4f darkturquoise:00ced1 darkviolet:9400d3
    deeppink:ff1493 deepskyblue:00bfff dimgray:696969 dimgrey:696969 dodgerblue:1e90ff
    firebrick:b22222 floralwhite:fffaf0 forestgreen:228b22 fuchsia:ff00ff gainsboro:dcdcdc
    ghostwhite:f8f8ff gold:ffd700 goldenrod:daa520 gray:808080 green:008000 greenyellow:adff2f
    grey:808080 honeydew:f0fff0 hotpink:ff69b4 indianred:cd5c5c indigo:4b0082 ivory:fffff0
    khaki:f0e68c lavender:e6e6fa lavenderblush:fff0f5 lawngreen:7cfc00 lemonchiffon:fffacd
    lightblue:add8e6 lightcoral:f08080 lightcyan:e0ffff lightgoldenrodyellow:fafad2
    lightgray:d3d3d3 lightgreen:90ee90 lightgrey:d3d3d3 lightpink:ffb6c1 lightsalmon:ffa07a
    lightseagreen:20b2aa lightskyblue:87cefa lightslategray:778899 lightslategrey:778899
    lightsteelblue:b0c4de lightyellow:ffffe0 lime:00ff00 limegreen:32cd32 linen:faf0e6
    magenta:ff00ff maroon:800000 mediumaquamarine:66cdaa mediumblue:0000cd mediumorchid:ba55d3
    mediumpurple:9370db mediumseagreen:3cb371 mediumslateblue:7b68ee mediumspringgreen:00fa9a
    mediumturquoise:48d1cc mediumvioletred:c71585 midnightblue:191970 mintcream:f5fffa
    mistyrose:ffe4e1 moccasin:ffe4b5 navajowhite:ffdead navy:000080 oldlace:fdf5e6 olive:808000
    olivedrab:6b8e23 orange:ffa500 orangered:ff4500 orchid:da70d6 palegoldenrod:eee8aa
    palegreen:98fb98 paleturquoise:afeeee palevioletred:db7093 papayawhip:ffefd5
    peachpuff:ffdab9 peru:cd853f pink:ffc0cb plum:dda0dd powderblue:b0e0e6 purple:800080
    rebeccapurple:663399 red:ff0000 rosybrown:bc8f8f royalblue:4169e1 saddlebrown:8b4513
    salmon:fa8072 sandybrown:f4a460 seagreen:2e8b57 seashell:fff5ee sienna:a0522d silver:c0c0c0
    skyblue:87ceeb slateblue:6a5acd slategray:708090 slategrey:708090 snow:fffafa
    springgreen:00ff7f steelblue:4682b4 tan:d2b48c teal:008080 thistle:d8bfd8 tomato:ff6347
    turquoise:40e0d0 violet:ee82ee wheat:f5deb3 white:ffffff whitesmoke:f5f5f5 yellow:ffff00
    yellowgreen:9acd32
"""
_NAMED = {k: "#" + v for k, v in (p.split(":") for p in _NAMED_TEXT.split())}
_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.DOTALL)
_BRACES = re.compile(r"[{}]")
_IMPORTANT = re.compile(r"!\s*important\s*$")
_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))([a-z%]*)")
_SIZE_IN_FONT = re.compile(r"(?<![\w.-])((?:\d+\.?\d*|\.\d+))([a-z%]*)(\s*/)?")
_SIZE_WORDS = re.compile(r"(?<![\w-])(xx?x?-(?:small|large)|small|medium|large|smaller|larger)\b")
_COMPOUND = re.compile(r"(\*|[a-z][\w-]*)?((?:[.#]-?[^\W\d][\w-]*)*)", re.IGNORECASE)
_IMAGE = re.compile(r"url\(|gradient\(|image-set\(|image\(|element\(|cross-fade\(")
_COLOUR_TOKEN = re.compile(r"[a-z-]+\([^()]*\)|#[0-9a-f]+|[a-z-]+")
_FUNCTION = re.compile(r"(rgba?|hsla?)\(([^()]*)\)")
_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|(.))", re.DOTALL)
_AT_RULE = re.compile(r"@([\w-]+)\s*(.*)", re.DOTALL)
_RELATIVE_UNITS = frozenset({"em", "%", "ex", "ch", "cap", "ic", "lh"})
_SEE_THROUGH = frozenset({"initial", "unset", "inherit", "none", "transparent", "revert"})
_NEVER_SHOWN = frozenset({"script", "style", "template", "noscript"})


@dataclass(frozen=True)
class Hidden:
    """What a page's CSS hides: elements hidden whole, and elements whose own text (their
    `.text` and their children's tails) is invisible while something inside them is not."""

    boxes: list[Any] = field(default_factory=list)
    own_text: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class _Compound:
    tag: str | None  # None: any element
    ids: tuple[str, ...]
    classes: tuple[str, ...]

    @property
    def keys(self) -> frozenset[str]:
        """The keys (`_Link.keys`) an element needs to match this compound."""
        tag = {"t:" + self.tag} if self.tag else set()
        return frozenset({*tag, *("#" + i for i in self.ids), *("." + c for c in self.classes)})


@dataclass(frozen=True)
class _Rule:
    compounds: tuple[_Compound, ...]  # left to right
    combinators: tuple[str, ...]  # between two compounds: " " (descendant) or ">" (child)
    rank: tuple[int, int, int, int]  # specificity (ids, classes, types), then order
    declarations: tuple[tuple[str, str, bool], ...]  # (slot, value, important)
    lead: tuple[frozenset[str], ...]  # lead[i]: the keys compounds 0..i-1 need, together


@dataclass(frozen=True, slots=True)
class _Link:
    """An element as selectors see it, and its parent's link."""

    tag: str
    id: str
    classes: frozenset[str]
    up: _Link | None
    keys: frozenset[str] | None  # "t:tag", "#id", ".class" of it and its ancestors (None:
    # over MAX_KEYS, not kept)


@dataclass(frozen=True)
class _State:
    """What an element passes on to its children."""

    colour: Rgba | None  # None: unknown
    font_zero: bool
    backdrop: Rgba | None  # the opaque background behind its text; None: unknown


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_CHECKS

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise ParseError("HTML cannot be read: its style rules are too many to apply")


def hidden_by_css(root: Any) -> Hidden:
    """What the CSS of the page `root` (an lxml HTML document) hides outside its `<head>`
    (see the module docstring). Raises ParseError for styles too costly to apply."""
    index: dict[str, list[_Rule]] = {}
    for rule in _stylesheet(root):
        index.setdefault(_key(rule.compounds[-1]), []).append(rule)
    budget = _Budget()
    boxed: dict[Any, bool] = {}
    quiet: dict[Any, bool] = {}  # its own text is invisible
    order: list[Any] = []
    stack: list[tuple[Any, _State, _Link | None]] = [(root, _State(BLACK, False, WHITE), None)]
    while stack:
        el, parent, up = stack.pop()
        chain = _link(el, up)
        box, state = _computed(_cascade(el, chain, index, budget), parent)
        order.append(el)
        boxed[el] = box
        quiet[el] = state.font_zero or _invisible(state.colour, state.backdrop)
        for child in reversed(el):
            if isinstance(child.tag, str) and child.tag.lower() != "head":
                stack.append((child, state, chain))
    shows: dict[Any, bool] = {}
    found = Hidden()
    for el in reversed(order):  # children before their parents
        inner = any(shows.get(c, False) for c in el)
        own = _has_own_text(el)
        visible = own and not quiet[el] and el.tag.lower() not in _NEVER_SHOWN
        shows[el] = not boxed[el] and (visible or inner)
        if boxed[el] or (quiet[el] and own and not inner):
            found.boxes.append(el)
        elif quiet[el] and own:
            found.own_text.append(el)
    found.boxes.reverse()
    found.own_text.reverse()
    return found


def _link(el: Any, up: _Link | None) -> _Link:
    tag, own_id = el.tag.lower(), (el.get("id") or "").strip()
    classes = frozenset((el.get("class") or "").split())
    own = frozenset({"t:" + tag, *(["#" + own_id] if own_id else []), *("." + c for c in classes)})
    keys: frozenset[str] | None = own
    if up is not None:
        keys = None if up.keys is None else up.keys if own <= up.keys else up.keys | own
    return _Link(tag, own_id, classes, up, keys if keys is None or len(keys) <= MAX_KEYS else None)


# ---- reading the style sheets --------------------------------------------------------------


def _stylesheet(root: Any) -> list[_Rule]:
    """The rules of every style sheet for the screen (`css_sheets.sheets`: `<style>` and
    `data:` sheets), in document order, that set a property this module reads and have a
    selector it can match."""
    rules: list[_Rule] = []
    for text in sheets(root):
        for prelude, block in _blocks(_COMMENT.sub(" ", text)):
            declarations = tuple(_declarations(block))
            if not declarations:
                continue
            for text in prelude.split(","):
                parsed = _selector(text)
                if parsed is None:
                    continue
                compounds, combinators = parsed
                ids = sum(len(c.ids) for c in compounds)
                classes = sum(len(c.classes) for c in compounds)
                types = sum(c.tag is not None for c in compounds)
                rank = (ids, classes, types, len(rules))
                lead = [frozenset[str]()]
                for c in compounds[:-1]:
                    lead.append(lead[-1] | c.keys)
                rules.append(_Rule(compounds, combinators, rank, declarations, tuple(lead)))
    return rules


def _blocks(css: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(selector list, declarations) of each rule in `css`, entering the at-rule blocks that
    apply to a screen (`_applies`) up to `MAX_NESTING` deep."""
    at = 0
    while (brace := css.find("{", at)) >= 0:
        prelude = css[at:brace]
        prelude = prelude[max(prelude.rfind(";"), prelude.rfind("}")) + 1 :].strip()
        end = _closing(css, brace)
        if not prelude.startswith("@"):
            yield prelude, css[brace + 1 : end]
        elif depth < MAX_NESTING and _applies(prelude):
            yield from _blocks(css[brace + 1 : end], depth + 1)
        at = end + 1


def _closing(css: str, brace: int) -> int:
    """Where the block opened at `brace` closes (the end of `css` when it never does)."""
    depth = 0
    for m in _BRACES.finditer(css, brace):
        depth += 1 if m[0] == "{" else -1
        if depth == 0:
            return m.start()
    return len(css)


def _applies(prelude: str) -> bool:
    """Whether an at-rule's block applies on a screen: `@media all|screen`, `@supports`,
    `@layer`; every other at-rule and media query is skipped."""
    m = _AT_RULE.fullmatch(prelude)
    if m is None:
        return False
    kind, query = m[1].lower(), " ".join(m[2].lower().split())
    return kind in ("supports", "layer") or (kind == "media" and for_screen(query))


def _declarations(block: str) -> Iterator[tuple[str, str, bool]]:
    """(slot, value, important) for each declaration in `block` that this module reads."""
    for part in block.split(";"):
        name, colon, value = part.partition(":")
        if not colon:
            continue
        if "\\" in part:  # an escaped name or value (`displ\\61y`) reads as its letters
            name, value = _unescape(name), _unescape(value)
        value = " ".join(value.lower().split())
        important = _IMPORTANT.search(value) is not None
        value = _IMPORTANT.sub("", value).strip()
        if value:
            for slot, v in _slots(name.strip().lower(), value):
                yield slot, v, important


def _unescape(text: str) -> str:
    """`text` with its CSS escapes (`\\61 `, `\\:`) replaced by the characters they stand for."""

    def one(m: re.Match[str]) -> str:
        if m[1]:
            code = int(m[1], 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return m[2]

    return _ESCAPE.sub(one, text)


def _slots(name: str, value: str) -> Iterator[tuple[str, str]]:
    if name in ("display", "visibility", "opacity", "font-size", "color"):
        yield name, value
    elif name == "font":
        size = _size_in_font(value)
        if size is not None:
            yield "font-size", size
    elif name == "background-color":
        yield "bg-color", value
    elif name == "background-image":
        yield "bg-image", value
    elif name == "background":
        if value in _SEE_THROUGH:
            yield "bg-color", value
            yield "bg-image", "none"
            return
        yield "bg-image", "url" if _IMAGE.search(value) else "none"
        tokens = _COLOUR_TOKEN.findall(value)
        colour = next((t for t in tokens if t == "currentcolor" or parse_colour(t)), "transparent")
        yield "bg-color", colour


def _size_in_font(value: str) -> str | None:
    """The font size in a `font` shorthand: a length, a number before `/line-height`, a 0 or
    a size keyword (a plain number is a weight); None for a system font (`caption`)."""
    for m in _SIZE_IN_FONT.finditer(value):
        if m[2] or m[3] or float(m[1]) == 0:
            return m[1] + m[2]
    word = _SIZE_WORDS.search(value)
    return word[1] if word else None


def _selector(text: str) -> tuple[tuple[_Compound, ...], tuple[str, ...]] | None:
    """The compounds and combinators of one selector; None for one this module cannot match
    (attributes, pseudo-classes, sibling combinators, escapes, over `MAX_COMPOUNDS`)."""
    compounds: list[_Compound] = []
    combinators: list[str] = []
    pending = ""
    for token in re.findall(r">|[^\s>]+", text):
        if token == ">":
            if not compounds or pending:
                return None
            pending = ">"
            continue
        m = _COMPOUND.fullmatch(token)
        if m is None:
            return None
        tag = (m[1] or "*").lower()
        parts = re.findall(r"[.#][^.#]+", m[2])
        ids = tuple(p[1:] for p in parts if p[0] == "#")
        classes = tuple(p[1:] for p in parts if p[0] == ".")
        if compounds:
            combinators.append(pending or " ")
        compounds.append(_Compound(None if tag == "*" else tag, ids, classes))
        pending = ""
    if not compounds or pending or len(compounds) > MAX_COMPOUNDS:
        return None
    return tuple(compounds), tuple(combinators)


def _key(c: _Compound) -> str:
    """The index key of a rule by its last compound: its id, a class, its tag, or `*`."""
    if c.ids:
        return "#" + c.ids[0]
    if c.classes:
        return "." + c.classes[0]
    return "t:" + c.tag if c.tag else "*"


# ---- applying them -------------------------------------------------------------------------


def _cascade(
    el: Any, chain: _Link, index: dict[str, list[_Rule]], budget: _Budget
) -> dict[str, str]:
    """The winning value of each slot for `el`: its matching rules' and its `style`'s."""
    own = ["#" + chain.id] if chain.id else []
    keys = ["*", "t:" + chain.tag, *own, *("." + c for c in chain.classes)]
    best: dict[str, tuple[tuple[int, ...], str]] = {}
    for key in keys:
        for rule in index.get(key, ()):
            if _matches(rule, len(rule.compounds) - 1, chain, budget):
                for slot, value, important in rule.declarations:
                    rank = (int(important), 0, *rule.rank)
                    if slot not in best or rank > best[slot][0]:
                        best[slot] = (rank, value)
    for n, (slot, value, important) in enumerate(_declarations(el.get("style") or "")):
        rank = (int(important), 1, 0, 0, 0, n)
        if slot not in best or rank > best[slot][0]:
            best[slot] = (rank, value)
    return {slot: value for slot, (_, value) in best.items()}


def _matches(rule: _Rule, at: int, chain: _Link, budget: _Budget) -> bool:
    """Whether compounds `0..at` of `rule` match the element `chain` (and its ancestors)."""
    budget.spend()
    c = rule.compounds[at]
    if c.tag is not None and c.tag != chain.tag:
        return False
    if any(i != chain.id for i in c.ids) or any(k not in chain.classes for k in c.classes):
        return False
    if at == 0:
        return True
    up = chain.up
    if rule.combinators[at - 1] == ">":
        return up is not None and _matches(rule, at - 1, up, budget)
    while up is not None:
        if up.keys is not None and not rule.lead[at] <= up.keys:
            return False  # no ancestor has what the rest of the selector needs
        if _matches(rule, at - 1, up, budget):
            return True
        up = up.up
    return False


def _computed(values: dict[str, str], parent: _State) -> tuple[bool, _State]:
    """Whether the element is hidden whole, and the state it passes on."""
    box = (
        values.get("display") == "none"
        or values.get("visibility") in ("hidden", "collapse")
        or _zero_opacity(values.get("opacity"))
    )
    size = values.get("font-size")
    font_zero = parent.font_zero if size is None else _zero_size(size, parent.font_zero)
    given = values.get("color")
    if given is None or given in ("inherit", "unset", "currentcolor"):
        colour = parent.colour
    else:
        colour = BLACK if given == "initial" else parse_colour(given)
    image, fill = values.get("bg-image", "none"), values.get("bg-color", "transparent")
    if image not in ("none", "initial", "unset"):
        backdrop = None  # text over a picture: never judged
    elif fill in _SEE_THROUGH:
        backdrop = parent.backdrop
    else:
        painted = colour if fill == "currentcolor" else parse_colour(fill)
        backdrop = _over(painted, parent.backdrop) if painted is not None else None
    return box, _State(colour, font_zero, backdrop)


def _zero_opacity(value: str | None) -> bool:
    m = _NUMBER.fullmatch(value or "")
    if m is None or m[2] not in ("", "%"):
        return False
    return float(m[1]) <= 0


def _zero_size(value: str, parent_zero: bool) -> bool:
    """Whether a font size is zero: 0 in any unit, or relative (em, %, smaller) to a zero
    one; an unknown value (calc(), var()) is not."""
    if value in ("inherit", "unset", "smaller", "larger"):
        return parent_zero
    m = _NUMBER.fullmatch(value)
    if m is None:
        return False
    number, unit = float(m[1]), m[2]
    if number == 0:
        return True
    if number < 0 or not unit:  # invalid: the declaration counts for nothing
        return parent_zero
    return parent_zero if unit in _RELATIVE_UNITS else False


def _invisible(colour: Rgba | None, backdrop: Rgba | None) -> bool:
    """Whether text of `colour` disappears on `backdrop` (unknown either way: it does not,
    unless the colour is fully transparent)."""
    if colour is None:
        return False
    if colour[3] <= 0:
        return True
    if backdrop is None:
        return False
    seen = _over(colour, backdrop)
    pairs = zip(seen[:3], backdrop[:3], strict=True) if seen is not None else ()
    return seen is not None and all(abs(a - b) <= SAME_COLOUR for a, b in pairs)


def _over(top: Rgba, under: Rgba | None) -> Rgba | None:
    """`top` painted over `under` (None: unknown)."""
    alpha = top[3]
    if alpha >= 1:
        return top
    if under is None:
        return None
    r, g, b = (alpha * t + (1 - alpha) * u for t, u in zip(top[:3], under[:3], strict=True))
    return (r, g, b, 1.0)


def parse_colour(value: str) -> Rgba | None:
    """A CSS colour: a name, #rgb(a), #rrggbb(aa), rgb()/rgba() or hsl()/hsla(); None for
    anything else (`var()`, `color-mix()`...)."""
    value = _NAMED.get(value, value)
    if value == "transparent":
        return (0.0, 0.0, 0.0, 0.0)
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) not in (3, 4, 6, 8) or not re.fullmatch(r"[0-9a-f]+", digits):
            return None
        if len(digits) < 6:
            digits = "".join(d * 2 for d in digits)
        chans = [int(digits[i : i + 2], 16) for i in range(0, len(digits), 2)]
        return (chans[0], chans[1], chans[2], chans[3] / 255 if len(chans) == 4 else 1.0)
    m = _FUNCTION.fullmatch(value)
    if m is None:
        return None
    numbers = [_NUMBER.fullmatch(p) for p in re.split(r"[\s,/]+", m[2].strip()) if p]
    if len(numbers) not in (3, 4) or any(n is None for n in numbers):
        return None
    parts = [(float(n[1]), n[2]) for n in numbers if n is not None]
    alpha = 1.0
    if len(parts) == 4:
        alpha = parts[3][0] / 100 if parts[3][1] == "%" else parts[3][0]
    if m[1].startswith("rgb"):
        rgb = [v * 2.55 if unit == "%" else v for v, unit in parts[:3]]
    else:
        (hue, hue_unit), (sat, _), (light, _) = parts[:3]
        if hue_unit not in ("", "deg"):
            return None
        shades = colorsys.hls_to_rgb(hue / 360 % 1, light / 100, sat / 100)
        rgb = [v * 255 for v in shades]
    r, g, b = (min(255.0, max(0.0, v)) for v in rgb)
    return (r, g, b, min(1.0, max(0.0, alpha)))


def _has_own_text(el: Any) -> bool:
    """Whether `el` has text of its own (not its children's): its `.text` or a tail."""
    return bool((el.text or "").strip()) or any((c.tail or "").strip() for c in el)
