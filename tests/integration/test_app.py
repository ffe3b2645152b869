"""The Workspace (tether.app): one place wires the parts; defaults fail closed; the Profile of
tuned values follows the index's embedder; a lexical search loads no model."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.app import Models, SearchOptions, Workspace, retriever_for
from tether.cli.main import app
from tether.collection import Collection
from tether.config import DEFAULT_PROFILE, profile_for, settings_from_mapping
from tether.ingest.sync import sync
from tether.stores import open_store

runner = CliRunner()


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "public.md").write_text(
        "---\ndoc_id: returns\naccess: public\n---\n# Returns\n\nItems go back within 30 days.\n"
    )
    (docs / "staff.md").write_text(  # no access label: staff only (fail closed)
        "# Staff returns\n\nStaff may extend the return window to 60 days.\n"
    )
    return docs


def test_profile_for_names_its_embedder_and_marks_others_uncalibrated() -> None:
    assert profile_for("multilingual-e5-small") is DEFAULT_PROFILE
    assert profile_for(None) is DEFAULT_PROFILE
    other = profile_for("text-embedding-3-small")
    assert not other.calibrated and "text-embedding-3-small" in other.note
    assert other.gate_floors == DEFAULT_PROFILE.gate_floors  # e5's values, marked as such


def test_workspace_search_defaults_to_the_public_audience(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    ws = Workspace.open(tmp_path / "i.sqlite", settings=settings_from_mapping({}), models=Models())
    ws.ingest(docs, embed=False)
    public = ws.search("return window days")
    assert public and {h.chunk.doc_id for h in public} == {"returns"}
    staff = ws.search("return window days", SearchOptions(audience="staff"))
    assert "staff" in {h.chunk.doc_id for h in staff}


def test_collection_api_fails_closed_and_builds_its_index(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    col = Collection(docs, settings=settings_from_mapping({}))
    hits = col.search("return window days", method="bm25")
    assert (docs / ".tether" / "index.sqlite").exists()
    assert hits and all(h.chunk.meta.access == "public" for h in hits)
    with pytest.raises(TypeError):
        col.ask("How long?", object(), audience="staff")  # type: ignore[arg-type]


def test_a_lexical_search_loads_no_model(tmp_path: Path, demo_store) -> None:
    models = Models()
    ws = Workspace.open(
        Path(demo_store.location), settings=settings_from_mapping({}), models=models
    )
    assert ws.store.has_vectors()
    hits = ws.search("TR-2200-07", SearchOptions(method="bm25"))
    assert hits and not models._embedders  # nothing loaded for BM25
    ws.search("return window", SearchOptions(method="dense"))
    assert list(models._embedders) == ["auto"]


def test_the_retriever_takes_the_profile_of_the_index_embedder(demo_store) -> None:
    retriever = retriever_for(demo_store, dense=False)
    assert retriever.rrf_weights == DEFAULT_PROFILE.rrf_weights
    assert retriever.lexical_gate == DEFAULT_PROFILE.lexical_gate
    assert retriever.same_point_cosine == DEFAULT_PROFILE.same_point_cosine
    custom = retriever_for(demo_store, dense=False, rrf_weights=(1.0, 1.0))
    assert custom.rrf_weights == (1.0, 1.0)  # a keyword given wins


def test_another_embedder_is_said_to_be_uncalibrated(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    index = tmp_path / "other.sqlite"
    store = open_store(index, must_exist=False)
    sync(store, docs)
    store.set_meta({"embedder": "text-embedding-3-small (1)"})
    store.close()
    ws = Workspace.open(index, settings=settings_from_mapping({}), models=Models())
    assert not ws.profile.calibrated
    result = runner.invoke(app, ["info", "--index", str(index)])
    assert result.exit_code == 0, result.output
    assert "not calibrated for the embedder 'text-embedding-3-small'" in result.output.replace("\n", "")
    asked = runner.invoke(
        app, ["ask", "How long to return?", "--index", str(index), "--provider", "extractive"]
    )
    assert "not calibrated" in asked.output, asked.output
