"""Write docs/api.md, the Python API reference, from the docstrings of the public names.

`python scripts/api_reference.py` rewrites docs/api.md; `--check` exits 1 when the file
differs from what the docstrings make (tests/faces/test_api.py runs the same comparison). A public
name (the names below, their public methods and properties) without a docstring is an error:
the reference would have a hole.

What it cannot do: it documents only the names listed in PUBLIC (the ones a user of
`tether` touches), not every module; it reads docstrings and signatures, not comments.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "api.md"

PUBLIC: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tether", ("Collection", "Workspace", "AskOptions", "SearchOptions", "Models")),
    (
        "tether.types",
        (
            "AskResult", "Answer", "Claim", "ClaimCheck", "Flag", "Evidence", "Gate",
            "AnswerProblem", "Hit", "Chunk", "DocMeta", "DocumentInfo", "SyncReport",
            "FileProblem", "Filters",
        ),
    ),
    ("tether.config", ("Settings", "load_settings")),
    (
        "tether.errors",
        (
            "TetherError", "ParseError", "NotFoundError", "ConflictError", "OlderIndexError",
            "LimitError", "DeadlineError", "UpstreamError", "ProviderError",
        ),
    ),
)

HEADER = """# Python API reference

Generated from the docstrings by `scripts/api_reference.py`; do not edit by hand (a test
checks that this file equals what the script makes). The README's "Python API" section shows
the API in use; `tether schema` prints the JSON shapes of the same results.
"""


def _doc(obj: object, where: str, missing: list[str]) -> str:
    doc = inspect.getdoc(obj)
    generated = inspect.isclass(obj) and (doc or "").startswith(f"{obj.__name__}(")
    if not doc or generated:  # a dataclass without a docstring gets its signature as one
        missing.append(where)
        return ""
    return doc


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def _members(cls: type, qualname: str, missing: list[str]) -> list[str]:
    lines: list[str] = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, (property, cached_property_type())):
            target = member.fget if isinstance(member, property) else member.func
            lines.append(f"- `{name}` (property): {_first(_doc(target, f'{qualname}.{name}', missing))}")
        elif isinstance(member, (classmethod, staticmethod)):
            func = member.__func__
            doc = _doc(func, f"{qualname}.{name}", missing)
            lines.append(f"- `{name}{_signature(func)}`: {_first(doc)}")
        elif inspect.isfunction(member):
            doc = _doc(member, f"{qualname}.{name}", missing)
            lines.append(f"- `{name}{_signature(member)}`: {_first(doc)}")
    return lines


def cached_property_type() -> type:
    from functools import cached_property

    return cached_property


def _first(doc: str) -> str:
    """The docstring as one paragraph of markdown (its lines joined)."""
    return " ".join(doc.split())


def _section(module: str, name: str, missing: list[str]) -> list[str]:
    obj = getattr(importlib.import_module(module), name)
    qualname = f"{module}.{name}"
    out = [f"## `{qualname}`", ""]
    if inspect.isclass(obj):
        kind = "dataclass" if dataclasses.is_dataclass(obj) else "class"
        signature = _signature(obj) if kind == "dataclass" or "__init__" in vars(obj) else ""
        out += [f"*{kind}* `{name}{signature}`", "", _doc(obj, qualname, missing), ""]
        members = _members(obj, qualname, missing)
        if members:
            out += [*members, ""]
    else:
        out += [f"`{name}{_signature(obj)}`", "", _doc(obj, qualname, missing), ""]
    return out


def render() -> tuple[str, list[str]]:
    """(the reference as markdown, the public names that have no docstring)."""
    missing: list[str] = []
    lines = [HEADER]
    for module, names in PUBLIC:
        for name in names:
            lines += _section(module, name, missing)
    return "\n".join(lines).rstrip() + "\n", missing


def main(argv: list[str]) -> int:
    text, missing = render()
    if missing:
        print("no docstring: " + ", ".join(missing), file=sys.stderr)
        return 1
    if "--check" in argv:
        if not TARGET.is_file() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date: run python scripts/api_reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
