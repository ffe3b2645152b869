"""The bases of the wire models and the helpers that fill them from the engine's dataclasses.

`Wire` is every wire model's base: frozen, no unknown keys, inf/nan printed as JSON's
Infinity/NaN. `Version` holds the keys of a document version that a chunk or a document
carries. `fields_of`/`optional` copy the attributes a model has as fields out of an engine
object.

A wire model's name in a JSON Schema (its `title`, its `$defs` key), in the OpenAPI document
and in an MCP tool's schema is its `__qualname__` and `title`. A wire class whose engine class
of `tether.types` has the same name is called `Wire<Name>` in Python and sets both back to
`<Name>`, so what a client reads is the same as before the rename; a subclass of one sets its
own (a `model_config` title is inherited).

What it cannot do: the helpers copy by attribute name and convert tuples to lists; they do not
validate what the values mean.
"""

from __future__ import annotations

from collections.abc import Container
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from tether import types


class Wire(BaseModel):
    """Frozen, no unknown keys; inf/nan print as JSON's Infinity/NaN as `json.dumps` did."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_inf_nan="constants", defer_build=True
    )


class Version(Wire):
    """Which document version something belongs to, and what that version says of itself."""

    doc_id: str
    version: str
    title: str
    doc_type: str
    access: Literal["public", "staff"]
    language: str
    effective_from: date | None
    effective_to: date | None
    source: str


def version_fields(m: types.DocMeta) -> dict[str, Any]:
    return fields_of(m, Version)


def fields_of(obj: object, model: type[BaseModel], skip: Container[str] = ()) -> dict[str, Any]:
    """The attributes of `obj` that `model` has as fields, but those in `skip` (tuples as
    lists)."""
    values = {name: getattr(obj, name) for name in model.model_fields if name not in skip}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def optional(obj: object | None, model: type[Wire]) -> Any:
    return None if obj is None else model(**fields_of(obj, model))
