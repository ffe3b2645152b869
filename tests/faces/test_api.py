"""The Python API: the CLI's defaults (public audience, today's versions), typed keywords on
`Collection.ask`, py.typed, a docstring on every public name, and docs/api.md generated from
them by scripts/api_reference.py."""

from __future__ import annotations

import importlib.util
import inspect
import tomllib
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

import tether
from tether.answering.pipeline import AskOptions
from tether.app import as_of_value
from tether.collection import Collection
from tether.config import settings_from_mapping
from tether.errors import TetherError
from tether.providers.extractive import ExtractiveProvider

ROOT = Path(__file__).resolve().parents[2]


def _versions(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "old.md").write_text(
        "---\ndoc_id: returns\nversion: '1'\naccess: public\neffective_to: 2020-01-01\n---\n"
        "# Returns\n\nThe return window is 14 days.\n"
    )
    (docs / "new.md").write_text(
        "---\ndoc_id: returns\nversion: '2'\naccess: public\neffective_from: 2020-01-02\n---\n"
        "# Returns\n\nThe return window is 30 days.\n"
    )
    (docs / "staff.md").write_text("# Staff returns\n\nStaff may extend the return window.\n")
    return docs


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_reference", ROOT / "scripts/api_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collection_search_sees_todays_public_versions_like_the_cli(tmp_path: Path) -> None:
    col = Collection(_versions(tmp_path), settings=settings_from_mapping({}))
    hits = col.search("return window days", method="bm25")
    assert {(h.chunk.doc_id, h.chunk.version) for h in hits} == {("returns", "2")}
    every = col.search("return window days", method="bm25", as_of=None)
    assert {h.chunk.version for h in every if h.chunk.doc_id == "returns"} == {"1", "2"}
    assert {h.chunk.version for h in col.search("window", method="bm25", as_of="2019-06-01")} == {"1"}
    with pytest.raises(TetherError, match="is not a date"):
        col.search("window", as_of="yesterday")


def test_collection_ask_takes_typed_keywords_with_the_cli_defaults(tmp_path: Path) -> None:
    col = Collection(
        _versions(tmp_path), settings=settings_from_mapping({}), provider=ExtractiveProvider()
    )
    result = col.ask("How long is the return window?", method="bm25")
    assert result.as_of == date.today() and result.audience == "public"
    assert {h.chunk.version for h in result.hits} == {"2"}
    assert col.ask("How long?", method="bm25", as_of=None).as_of is None
    explicit = col.ask("How long?", AskOptions(method="bm25", as_of=date(2019, 6, 1)))
    assert explicit.as_of == date(2019, 6, 1)
    with pytest.raises(TypeError, match="not both"):
        col.ask("How long?", AskOptions(), k=3)
    with pytest.raises(TypeError):
        col.ask("How long?", nonsense=1)  # type: ignore[call-arg]
    params = inspect.signature(Collection.ask).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    fields = set(AskOptions.__dataclass_fields__)
    assert fields <= set(params)


def test_the_cli_and_the_api_read_as_of_by_one_rule() -> None:
    from tether.cli.app import as_of_date

    for text in ("today", "none", "2024-02-29", " Today "):
        assert as_of_date(text) == as_of_value(text)
    assert as_of_value(None) is None and as_of_value(date(2020, 1, 1)) == date(2020, 1, 1)


def test_the_package_is_typed() -> None:
    assert (ROOT / "src/tether/py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["tether"]


def test_every_public_name_has_a_docstring() -> None:
    for name in tether.__all__:
        if not name.startswith("_"):
            assert inspect.getdoc(getattr(tether, name)), name
    _, missing = _script().render()
    assert not missing, missing


def test_the_api_reference_is_what_the_script_makes() -> None:
    text, _ = _script().render()
    assert (ROOT / "docs/api.md").read_text(encoding="utf-8") == text, (
        "docs/api.md is out of date: run python scripts/api_reference.py"
    )
