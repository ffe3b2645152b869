"""`tether schema` (the JSON Schema of the wire models every --json prints) and `tether
version`.

What it cannot do: it describes the shapes, it validates no file against them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tether import __version__
from tether.cli.app import error_line, out

SCHEMA_NAMES = (
    "document", "chunk", "hit", "check", "ask-result", "question", "question-line",
    "setting", "index-info", "calibration",
    "verifier-report", "retrieval-report", "ingest-report", "answer-report", "audit-record",
    "feedback", "health",
)  # fmt: skip
"""The keys of `tether.schemas.MODELS`, written out so `--help` lists them without importing
pydantic (tests/unit/test_schemas.py checks that the two agree)."""


def schema(
    name: Annotated[
        str | None,
        typer.Argument(
            help="One wire model: " + ", ".join(SCHEMA_NAMES) + ". Default: all of them.",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Write NAME.schema.json files into this folder instead."),
    ] = None,
) -> None:
    """Print the JSON Schema of one wire model (or all of them, keyed by name)."""
    if name is not None and name not in SCHEMA_NAMES:
        error_line(f"no schema {name!r}; choose from {', '.join(SCHEMA_NAMES)}")
        raise typer.Exit(2)
    from tether.schemas import json_schema

    chosen = [name] if name is not None else list(SCHEMA_NAMES)
    schemas = {n: json_schema(n) for n in chosen}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for n, data in schemas.items():
            path = out_dir / f"{n}.schema.json"
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
            out.print(str(path), highlight=False)
        return
    data = schemas[name] if name is not None else schemas
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def version() -> None:
    """Print tether's version."""
    out.print(__version__)
