"""What the CSS values of one element mean for whether it can be seen (for `html_hidden`).

Reads the values tinycss2 parsed (whitespace and comments left out) of the properties in
`READ`: lengths (`px`, `em`, `rem`, `%`, `vw`...) and a `calc()` of them (`+ - * /` of
lengths, percentages and numbers, nested brackets included), font sizes and line heights,
transforms (composed: `scale()`, `matrix()`, `matrix3d()`, `rotate()`, `rotateX()`/`Y`/`Z`,
`rotate3d()`, `skew()`, and the `scale`/`rotate` properties), offsets, sizes with their
overflow, clips (`clip:rect()`, `clip-path` `inset()`/`circle()`/`ellipse()`/`polygon()`) and
masks (`mask`, `mask-image` and their `-webkit-` aliases), and `box_hidden` says whether the
element and everything inside it is out of sight (see `tether.ingest.parse.html_hidden`).

What it cannot do: it is no layout engine: `%` is of a 1280 x 800 viewport (`VIEWPORT`), never
of the box; a `calc()` with anything else in it (`min()`, `var()` left unknown, mixed units it
cannot add) is unknown, and an unknown value counts as visible; `perspective` is not read (an
edge-on box seen in perspective from off its plane would show); a polygon counts as empty only
when all its points lie on one line (not one whose edges retrace each other); a mask hides
only when every layer is `none` or a gradient whose every colour is transparent (an image, a
luminance mask or a mask of zero size are not judged).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import tinycss2

from tether.ingest.parse.css import parse_colour

OFFSCREEN_PX = 999.0  # moved at least this far up or left: off the page
FAR_PX = 9000.0  # moved at least this far down or right: off the page
FAINT = 0.01  # an opacity, a scale factor or a mask's alpha at most this: nothing to see
TINY_PX = 2.0  # text at most this size cannot be read
SMALL_PX = 4.0  # ... nor at most this size on a zero line height
ROOT_FONT_PX = 16.0
VIEWPORT = (1280.0, 800.0)  # what % lengths are of (horizontal, vertical)
THIN_PX = 0.5  # a clip polygon no wider than this is a line
MAX_CALC_DEPTH = 8  # brackets inside a calc() nested deeper are unknown

_UNITS = {
    "px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4,
    "q": 96 / 101.6, "rem": ROOT_FONT_PX, "vw": VIEWPORT[0] / 100, "vh": VIEWPORT[1] / 100,
    "vmin": VIEWPORT[1] / 100, "vmax": VIEWPORT[0] / 100,
}  # fmt: skip
_ANGLES = {"deg": math.pi / 180, "rad": 1.0, "grad": math.pi / 200, "turn": 2 * math.pi}
_FONT_WORDS = {
    "xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0,
    "x-large": 24.0, "xx-large": 32.0, "xxx-large": 48.0,
}  # fmt: skip
READ = frozenset(
    {
        "display", "visibility", "opacity", "content-visibility", "filter", "position", "left",
        "top", "right", "bottom", "inset", "margin", "margin-left", "margin-top",
        "text-indent", "transform", "translate", "scale", "rotate", "width", "height",
        "max-width", "max-height", "overflow", "overflow-x", "overflow-y", "padding",
        "padding-left", "padding-right", "padding-top", "padding-bottom", "clip", "clip-path",
        "font-size", "font", "line-height", "mask", "mask-image", "-webkit-mask",
        "-webkit-mask-image",
    }
)  # fmt: skip
_IMAGES = frozenset({"url", "image", "image-set", "-webkit-image-set", "element", "cross-fade"})
_GRADIENTS = frozenset(
    f"{r}{k}-gradient"
    for r in ("", "repeating-", "-webkit-")
    for k in ("linear", "radial", "conic")
)
_NUMERIC = frozenset({"calc", "min", "max", "clamp"})  # a stop's position, not its colour
_BOXES = ((300.0, 150.0), VIEWPORT, (37.0, 977.0))  # box sizes a % polygon is tried at

_T = TypeVar("_T")
Tokens = list[Any]  # tinycss2 component values, whitespace and comments left out
Matrix = list[list[float]]  # 3 x 3, the linear part of a transform


def plain(value: Iterable[Any]) -> Tokens:
    return [t for t in value if t.type not in ("whitespace", "comment")]


def longhands(name: str, value: Tokens) -> Iterator[tuple[str, Tokens]]:
    """A declaration as the properties it sets (shorthands split: margin, padding, inset,
    overflow, font; `mask` and the `-webkit-` masks are read as `mask-image`)."""
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
    elif name in ("mask", "-webkit-mask", "-webkit-mask-image"):
        yield "mask-image", value  # aliases of one property; `_masked` finds the images
    else:
        yield name, value


def _split(value: Tokens) -> list[Tokens]:
    """Each component of a space- or comma-separated value as its own token list."""
    return [[t] for t in value if not _comma(t)]


def _comma(t: Any) -> bool:
    return bool(t.type == "literal" and t.value == ",")


def _groups(value: Tokens) -> list[Tokens]:
    """The comma-separated parts of a value."""
    out: list[Tokens] = [[]]
    for t in value:
        if _comma(t):
            out.append([])
        else:
            out[-1].append(t)
    return out


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
            or (t.type == "function" and t.lower_name == "calc")
        )
        if is_size:
            rest = value[i + 1 :]
            if len(rest) >= 2 and rest[0].type == "literal" and rest[0].value == "/":
                return [t], [rest[1]]
            return [t], None
    return None, None


# ---- lengths, numbers and calc() -----------------------------------------------------------


def _unit_px(number: float, unit: str, font_px: float) -> float | None:
    if unit == "em":
        return number * font_px
    if unit in ("ex", "ch"):
        return number * font_px / 2
    factor = _UNITS.get(unit)
    return None if factor is None else number * factor


def _calc(t: Any, font_px: float, percent_of: float | None, depth: int = 0) -> tuple[float, bool] | None:  # fmt: skip
    """(value, is a length in px) of a `calc()` or a bracket inside one: numbers, lengths
    and percentages (of `percent_of`; None: unknown) joined by + - * /; None: unknown."""
    if depth > MAX_CALC_DEPTH:
        return None
    items = plain(t.arguments if t.type == "function" else t.content)
    terms: list[tuple[float, bool]] = []
    ops: list[str] = []
    for n, item in enumerate(items):
        if n % 2:
            if item.type != "literal" or item.value not in "+-*/":
                return None
            ops.append(item.value)
            continue
        term: tuple[float, bool] | None = None
        if item.type == "number":
            term = (float(item.value), False)
        elif item.type == "percentage" and percent_of is not None:
            term = (float(item.value) * percent_of / 100, True)
        elif item.type == "dimension":
            px = _unit_px(float(item.value), item.lower_unit, font_px)
            term = None if px is None else (px, True)
        elif item.type == "() block" or (item.type == "function" and item.lower_name == "calc"):
            term = _calc(item, font_px, percent_of, depth + 1)
        if term is None:
            return None
        terms.append(term)
    if not terms or len(ops) != len(terms) - 1:
        return None
    sums: list[tuple[float, bool]] = [terms[0]]
    signs: list[str] = []
    for op, term in zip(ops, terms[1:], strict=True):
        if op in "+-":
            sums.append(term)
            signs.append(op)
            continue
        (a, a_len), (b, b_len) = sums[-1], term
        if op == "*" and not (a_len and b_len):
            sums[-1] = (a * b, a_len or b_len)
        elif op == "/" and not b_len and b != 0:
            sums[-1] = (a / b, a_len)
        else:
            return None
    total, kind = sums[0]
    for sign, (b, b_len) in zip(signs, sums[1:], strict=True):
        if b_len != kind:
            return None
        total = total + b if sign == "+" else total - b
    return total, kind


def _is_calc(t: Any) -> bool:
    return bool(t.type == "function" and t.lower_name == "calc")


def _length(value: Tokens | None, font_px: float, axis: int = 0) -> float | None:
    """A length in px (None: absent, auto, or unknown); `%` of the viewport along `axis`."""
    if not value or len(value) != 1:
        return None
    t = value[0]
    if t.type == "number":
        return 0.0 if t.value == 0 else None
    if t.type == "percentage":
        return float(t.value) * VIEWPORT[axis] / 100
    if _is_calc(t):
        found = _calc(t, font_px, VIEWPORT[axis])
        if found is None:
            return None
        return found[0] if found[1] or found[0] == 0 else None
    if t.type != "dimension":
        return None
    return _unit_px(float(t.value), t.lower_unit, font_px)


def word(value: Tokens | None) -> str:
    return value[0].lower_value if value and len(value) == 1 and value[0].type == "ident" else ""


def _number(t: Any) -> float | None:
    """A number or a percentage as a fraction (50% is 0.5), a `calc()` of numbers too."""
    if t.type == "number":
        return float(t.value)
    if t.type == "percentage":
        return float(t.value) / 100
    if _is_calc(t):
        found = _calc(t, ROOT_FONT_PX, None)
        return found[0] if found is not None and not found[1] else None
    return None


def font_px(value: Tokens | None, parent: float) -> float:
    """The computed font size of an element whose parent's is `parent`."""
    if not value:
        return parent
    if len(value) == 1 and value[0].type == "ident":
        name = value[0].lower_value
        if name in _FONT_WORDS:
            return _FONT_WORDS[name]
        return {"smaller": parent / 1.2, "larger": parent * 1.2, "initial": 16.0}.get(name, parent)
    if len(value) == 1 and value[0].type == "percentage" and value[0].value >= 0:
        return parent * float(value[0].value) / 100
    if len(value) == 1 and _is_calc(value[0]):
        found = _calc(value[0], parent, parent)  # em and % of the parent's size
        size = found[0] if found is not None and (found[1] or found[0] == 0) else None
    else:
        size = _length(value, parent)
    if size is None:
        return ROOT_FONT_PX if value[0].type == "function" else parent  # unknown
    return max(size, 0.0) if _is_calc(value[0]) else size if size >= 0 else parent


def line_zero(value: Tokens | None, parent: bool) -> bool:
    """Whether the computed line height is zero (inherited when not set)."""
    if value is None:
        return parent
    if word(value) in ("inherit", "unset"):
        return parent
    if len(value) == 1 and value[0].type in ("number", "percentage", "dimension"):
        return bool(value[0].value == 0)
    return False


def _functions(value: Tokens | None) -> Iterator[tuple[str, list[float | None], list[Any]]]:
    """(name, numbers, raw arguments) of each function in a value such as a transform."""
    for t in value or ():
        if t.type == "function":
            args = [a for a in plain(t.arguments) if not _comma(a)]
            yield t.lower_name, [_number(a) for a in args], args


# ---- transforms ----------------------------------------------------------------------------


def _angle(t: Any) -> float | None:
    """An angle in radians (a plain 0 too); None: not an angle."""
    if t.type == "number" and t.value == 0:
        return 0.0
    if t.type == "dimension" and t.lower_unit in _ANGLES:
        return float(t.value) * _ANGLES[t.lower_unit]
    return None


def _times(a: Matrix, b: Matrix) -> Matrix:
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def _rotation(x: float, y: float, z: float, angle: float) -> Matrix | None:
    """The rotation by `angle` about the axis (x, y, z) (Rodrigues); None: no axis."""
    size = math.sqrt(x * x + y * y + z * z)
    if size == 0:
        return None
    x, y, z = x / size, y / size, z / size
    c, s, t = math.cos(angle), math.sin(angle), 1 - math.cos(angle)
    return [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]


def _step(name: str, numbers: list[float | None], args: list[Any]) -> Matrix | None:
    """The linear part of one transform function; None: unknown (a translation or a
    perspective is the identity)."""
    ident = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    if name.startswith("translate") or name == "perspective":
        return ident
    angles = [_angle(a) for a in args]
    if name.startswith("scale"):
        if not numbers or None in numbers:
            return None
        n = [f or 0.0 for f in numbers]
        sx, sy, sz = {
            "scale": (n[0], n[-1], 1.0), "scalex": (n[0], 1.0, 1.0),
            "scaley": (1.0, n[0], 1.0), "scalez": (1.0, 1.0, n[0]),
            "scale3d": (n[0], n[min(1, len(n) - 1)], n[-1]),
        }.get(name, (1.0, 1.0, 1.0))  # fmt: skip
        return [[sx, 0.0, 0.0], [0.0, sy, 0.0], [0.0, 0.0, sz]]
    if name == "matrix" and len(numbers) == 6 and None not in numbers:
        a, b, c, d = (f or 0.0 for f in numbers[:4])
        return [[a, c, 0.0], [b, d, 0.0], [0.0, 0.0, 1.0]]
    if name == "matrix3d" and len(numbers) == 16 and None not in numbers:
        m = [f or 0.0 for f in numbers]
        return [[m[0], m[4], m[8]], [m[1], m[5], m[9]], [m[2], m[6], m[10]]]
    axes = {"rotate": (0, 0, 1), "rotatez": (0, 0, 1), "rotatex": (1, 0, 0), "rotatey": (0, 1, 0)}
    if name in axes and len(angles) == 1 and angles[0] is not None:
        return _rotation(*axes[name], angles[0])
    if name == "rotate3d" and len(args) == 4 and angles[3] is not None and None not in numbers[:3]:
        x, y, z = (f or 0.0 for f in numbers[:3])
        return _rotation(x, y, z, angles[3])
    if name in ("skew", "skewx", "skewy") and len(angles) in (1, 2) and None not in angles:
        ax, ay = (angles[0], angles[-1] if len(angles) == 2 else 0.0)
        if name == "skewy":
            ax, ay = 0.0, angles[0]
        return [[1.0, math.tan(ax or 0.0), 0.0], [math.tan(ay or 0.0), 1.0, 0.0], [0.0, 0.0, 1.0]]
    return None


def _rotate_property(value: Tokens | None) -> Matrix | None:
    """The `rotate` property (`90deg`, `x 90deg`, `1 0 0 90deg`); None: none or unknown."""
    if not value or word(value) == "none":
        return None
    angles = [_angle(t) for t in value if t.type == "dimension"]
    rest = [t for t in value if t.type != "dimension"]
    if len(angles) != 1 or angles[0] is None:
        return None
    axis = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}
    if not rest:
        return _rotation(0, 0, 1, angles[0])
    if len(rest) == 1 and word(rest) in axis:
        return _rotation(*axis[word(rest)], angles[0])
    numbers = [float(t.value) for t in rest if t.type == "number"]
    if len(numbers) != 3 or len(rest) != 3:
        return None
    return _rotation(numbers[0], numbers[1], numbers[2], angles[0])


def _flat(v: dict[str, Tokens]) -> bool:
    """Whether the box's transforms (`translate`, `rotate`, `scale`, then `transform`, all
    composed) leave it with no width to see: the smaller singular value of what they do to
    the page's plane at most `FAINT` (scaled to nothing, or turned edge-on)."""
    m: Matrix = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    turned = _rotate_property(v.get("rotate"))
    if turned is not None:
        m = _times(m, turned)
    scale = v.get("scale")
    if scale and word(scale) != "none":
        factors = [_number(t) for t in scale]
        if None in factors or len(factors) > 3:
            return False
        n = [f or 0.0 for f in factors]
        m = _times(m, [[n[0], 0.0, 0.0], [0.0, n[min(1, len(n) - 1)], 0.0], [0.0, 0.0, n[-1] if len(n) == 3 else 1.0]])  # fmt: skip
    for name, numbers, args in _functions(v.get("transform")):
        step = _step(name, numbers, args)
        if step is None:
            return False  # unknown: counts as visible
        m = _times(m, step)
    a, b, c, d = m[0][0], m[0][1], m[1][0], m[1][1]
    squares, det = a * a + b * b + c * c + d * d, a * d - b * c
    smallest = math.sqrt(max(0.0, (squares - math.sqrt(max(0.0, squares**2 - 4 * det**2))) / 2))
    return smallest <= FAINT


def _translation(args: list[Any], font_px: float, axis: int) -> float:
    """The px a translate moves along `axis` (0: x) given its arguments; a % of the box's
    own size, or anything unknown, counts as no move."""
    if len(args) <= axis or args[axis].type not in ("dimension", "function"):
        return 0.0
    return _length([args[axis]], font_px) or 0.0


def _moved(value: Tokens | None, font_px: float) -> tuple[float, float]:
    """How far a transform moves the box (x, y): its translations and matrix offsets."""
    x, y = 0.0, 0.0
    for name, numbers, args in _functions(value):
        if name == "matrix" and len(numbers) == 6 and None not in numbers:
            x, y = x + (numbers[4] or 0.0), y + (numbers[5] or 0.0)
        elif name in ("translate", "translate3d"):
            x, y = x + _translation(args, font_px, 0), y + _translation(args, font_px, 1)
        elif name == "translatex":
            x += _translation(args, font_px, 0)
        elif name == "translatey":
            y += _translation(args, font_px, 0)
    return x, y


# ---- where the box is, and what of it shows ------------------------------------------------


def _offscreen(v: dict[str, Tokens], font_px: float) -> bool:
    """Whether the box is moved out of the page: a positioned box's offset (`left`, else
    minus `right`; `top`, else minus `bottom`) plus its margin and translations, or its
    `text-indent`, at least `OFFSCREEN_PX` up or left or `FAR_PX` down or right."""
    moved = _moved(v.get("transform"), font_px)
    translate = _split(v.get("translate") or [])
    positioned = word(v.get("position")) in ("absolute", "fixed", "relative", "sticky")
    shifts = []
    for axis, (near, far, margin) in enumerate(
        (("left", "right", "margin-left"), ("top", "bottom", "margin-top"))
    ):
        offset: float | None = 0.0
        if positioned and v.get(near) is not None and word(v.get(near)) != "auto":
            offset = _length(v.get(near), font_px, axis)
        elif positioned:
            away = _length(v.get(far), font_px, axis)
            offset = -away if away is not None else 0.0
        margin_px: float | None = 0.0
        if v.get(margin) is not None and word(v.get(margin)) != "auto":
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
        if word(v.get(overflow)) not in ("hidden", "clip", "scroll", "auto"):
            continue
        zero = any(_length(v.get(s), font_px) == 0 for s in sizes)
        padded = any(_length(v.get(p), font_px) not in (None, 0.0) for p in pads)
        if zero and not padded:
            return True
    return False


def _point(t: Any) -> tuple[float, float] | None:
    """A polygon coordinate as (px, fraction of the box); None: unknown."""
    if t.type == "percentage":
        return 0.0, float(t.value) / 100
    px = _length([t], ROOT_FONT_PX)
    return None if px is None else (px, 0.0)


def _thin_polygon(args: list[Any]) -> bool:
    """Whether a `clip-path:polygon()` has all its points on one line (no area) at each
    box size of `_BOXES`."""
    points = []
    for group in _groups(plain(args)):
        if len(group) == 1 and group[0].type == "ident":
            continue  # the fill rule
        if len(group) != 2:
            return False
        x, y = _point(group[0]), _point(group[1])
        if x is None or y is None:
            return False
        points.append((x, y))
    if not points:
        return False
    for width, height in _BOXES:
        at = [(x[0] + x[1] * width, y[0] + y[1] * height) for x, y in points]
        (x0, y0), far = at[0], max(at, key=lambda p: math.hypot(p[0] - at[0][0], p[1] - at[0][1]))
        dx, dy = far[0] - x0, far[1] - y0
        length = math.hypot(dx, dy)
        if length > THIN_PX and any(abs(dx * (y - y0) - dy * (x - x0)) / length > THIN_PX for x, y in at):  # fmt: skip
            return False
    return True


def _clipped(v: dict[str, Tokens]) -> bool:
    """`clip:rect()` of no area, or a `clip-path` inset whose opposite sides meet (50% and
    50%: only % insets are judged), a circle or ellipse of radius 0, or a polygon with all
    its points on one line."""
    for name, _, args in _functions(v.get("clip")):
        if name == "rect" and len(args) == 4:
            top, right, bottom, left = (_length([a], ROOT_FONT_PX) for a in args)
            if (top is not None and bottom is not None and bottom <= top) or (
                left is not None and right is not None and right <= left
            ):
                return True
    for t in v.get("clip-path") or ():
        if t.type == "function" and t.lower_name == "polygon" and _thin_polygon(t.arguments):
            return True
    for name, numbers, args in _functions(v.get("clip-path")):
        if name == "inset":
            until = next((i for i, a in enumerate(args) if word([a]) == "round"), len(args))
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
            until = next((i for i, a in enumerate(args) if word([a]) == "at"), len(args))
            if any(_length([a], ROOT_FONT_PX) == 0 for a in args[:until]):
                return True
    return False


def _clear_gradient(t: Any) -> bool:
    """Whether a gradient has colours and every one is transparent (alpha at most `FAINT`);
    a colour it cannot read (`currentcolor`, `var()`, `color-mix()`) counts as opaque."""
    seen = False
    for arg in plain(t.arguments):
        if arg.type in ("hash", "ident", "function"):
            if arg.type == "function" and arg.lower_name in _NUMERIC:
                continue
            text = tinycss2.serialize([arg]).lower()
            found = parse_colour(text)
            if found is None and (arg.type != "ident" or text == "currentcolor"):
                return False  # a colour it cannot read
            if found is not None:
                if found[3] > FAINT:
                    return False
                seen = True
    return seen


def _masked(value: Tokens | None) -> bool:
    """Whether a mask (`mask-image` or the `mask` shorthand) lets nothing through: at least
    one transparent gradient, and every other layer `none`."""
    if not value:
        return False
    clear = False
    for layer in _groups(value):
        images = [
            t
            for t in layer
            if t.type == "url" or (t.type == "function" and t.lower_name in _IMAGES | _GRADIENTS)
        ]
        for image in images:
            if image.type != "function" or image.lower_name not in _GRADIENTS:
                return False
            if not _clear_gradient(image):
                return False
            clear = True
    return clear


def _screen_reader(v: dict[str, Tokens], font_px: float) -> bool:
    """The "visually hidden" recipe: absolutely placed, overflow hidden, 1px high or wide."""
    return (
        word(v.get("position")) in ("absolute", "fixed")
        and "hidden" in (word(v.get("overflow-x")), word(v.get("overflow-y")))
        and any(_length(v.get(s), font_px) == 1.0 for s in ("width", "height"))
    )


def _faint(value: Tokens | None) -> bool:
    if not value or len(value) != 1:
        return False
    number = _number(value[0])
    return number is not None and number <= FAINT


def box_hidden(v: dict[str, Tokens], font_px: float) -> bool:
    """Whether the element and all inside it are out of sight (see `html_hidden`)."""
    if (
        word(v.get("display")) == "none"
        or word(v.get("visibility")) in ("hidden", "collapse")
        or word(v.get("content-visibility")) == "hidden"
        or _faint(v.get("opacity"))
        or any(n == "opacity" and a and _faint(a[:1]) for n, _, a in _functions(v.get("filter")))
        or _masked(v.get("mask-image"))
    ):
        return True
    if _flat(v):
        return True
    if _screen_reader(v, font_px):
        return False  # read to people by assistive technology: content
    return _offscreen(v, font_px) or _no_room(v, font_px) or _clipped(v)
