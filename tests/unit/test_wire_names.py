"""Wire models and engine classes never share a Python name (`tether.schemas.WireHit` is the wire
form of `tether.types.Hit`), while what a client reads keeps the names it always had: JSON
Schema titles and `$defs` keys (the same names the OpenAPI document and MCP tools show), and
the title of a validation error."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel, ValidationError

from tether import schemas, types

ENGINE = {name for name in types.__all__ if inspect.isclass(getattr(types, name))}
WIRE = [
    getattr(schemas, name)
    for name in schemas.__all__
    if inspect.isclass(getattr(schemas, name)) and issubclass(getattr(schemas, name), BaseModel)
]


def test_no_wire_class_is_named_like_an_engine_class():
    clashes = sorted(model.__name__ for model in WIRE if model.__name__ in ENGINE)
    assert clashes == []


@pytest.mark.parametrize("model", [m for m in WIRE if m.__name__.startswith("Wire")])
def test_a_renamed_wire_model_keeps_its_json_name(model: type[BaseModel]):
    old = model.__name__.removeprefix("Wire")
    assert old in ENGINE  # the prefix is for a name an engine class has, only
    assert model.model_json_schema()["title"] == old


def test_nested_models_keep_their_json_names():
    defs = schemas.json_schema("ask-result")["$defs"]
    assert set(defs) == {
        "AgentStep", "AgentTrace", "Answer", "Answerability", "Check", "Claim", "Completion",
        "Context", "Detail", "Dropped", "Evidence", "Gate", "Hit", "Passage", "Problem", "Request",
    }  # fmt: skip
    assert all(d["title"] == name for name, d in defs.items())
    assert set(schemas.json_schema("ingest-report")["$defs"]) == {"Crawl", "FileProblem"}
    assert set(schemas.json_schema("question")["$defs"]) == {"Relevant"}


def test_a_validation_error_names_the_json_name():
    with pytest.raises(ValidationError) as caught:
        schemas.WireClaim.model_validate({"text": "x"})
    assert caught.value.title == "Claim"


def test_no_wire_module_exports_an_engine_class_name() -> None:
    """The old names (aliases of the Wire classes) are gone: `tether.schemas.Hit` would read
    as `tether.types.Hit` and is not."""
    import tether.schemas as wire
    import tether.types as engine

    clashes = [name for name in engine.__all__ if isinstance(getattr(wire, name, None), type)]
    assert clashes == []
