"""Identity from the path: a file without a doc_id is named by its path relative to the
collection root (without extension), so same-named files in different folders are different
documents; a doc_id + version is refused only when two files claim it, with the right fix;
files with metadata keep their doc_ids and chunk IDs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.evaluation.questions import demo_collection, larkfield_collection
from tether.ingest import load_inventory, parse_file
from tether.ingest import sync as sync_module
from tether.ingest.chunking import chunk_document
from tether.ingest.discover import scan
from tether.ingest.metadata import path_doc_id
from tether.stores.sqlite import SqliteStore

STAFF_DOCS = "staff"


def _readmes(folder: Path) -> Path:
    for sub in ("guides/setup", "guides/billing", "api"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        (folder / sub / "README.md").write_text(f"# {sub} readme\n\nHow to use {sub}.\n")
    (folder / "README.md").write_text("# Top readme\n\nThe top of the tree.\n")
    return folder


def test_path_doc_id_keeps_the_folders_and_drops_the_extension() -> None:
    assert path_doc_id("guides/setup/README.md") == "guides/setup/README"
    assert path_doc_id("README.md") == "README"
    assert path_doc_id("notes/changelog") == "notes/changelog"
    assert path_doc_id("a/b.v2.html") == "a/b.v2"


def test_same_named_files_in_different_folders_are_different_documents(tmp_path: Path) -> None:
    folder = _readmes(tmp_path / "docs")
    store = SqliteStore(tmp_path / "index.sqlite")
    report = sync_module.sync(store, folder)
    assert not report.problems
    assert len(report.added) == 4
    ids = sorted(d.meta.doc_id for d in store.documents())
    assert ids == ["README", "api/README", "guides/billing/README", "guides/setup/README"]
    assert {d.meta.title for d in store.documents()} >= {"guides/setup readme", "Top readme"}


def test_a_duplicate_is_refused_only_when_two_files_claim_it(tmp_path: Path) -> None:
    folder = _readmes(tmp_path / "docs")
    (folder / "guides/setup/INSTALL.md").write_text(
        "---\ndoc_id: guides/billing/README\n---\n# Install\n\nSteps.\n"
    )
    store = SqliteStore(tmp_path / "index.sqlite")
    report = sync_module.sync(store, folder)
    refused = sorted(p.source for p in report.problems)
    assert refused == ["guides/billing/README.md", "guides/setup/INSTALL.md"]
    reason = dict((p.source, p.reason) for p in report.problems)["guides/setup/INSTALL.md"]
    assert "guides/setup/INSTALL.md and guides/billing/README.md" in reason
    assert "its own doc_id" in reason and "inventory.csv" in reason
    assert len(report.added) == 3  # the other READMEs are not touched by the quarrel


def test_an_index_named_by_file_stems_is_renamed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    (folder / "guides/setup").mkdir(parents=True)
    (folder / "guides/setup/README.md").write_text("# Setup\n\nHow to set up.\n")
    (folder / "top.md").write_text("# Top\n\nThe top of the tree.\n")
    store = SqliteStore(tmp_path / "index.sqlite")
    from tether.ingest import guard, metadata

    monkeypatch.setattr(metadata, "path_doc_id", lambda source: Path(source).stem)
    monkeypatch.setattr(guard, "ISOLATE", False)  # parse here: a child cannot see the patch
    monkeypatch.setattr(sync_module, "DOC_ID_SCHEME", "stem")
    old = sync_module.sync(store, folder)
    assert sorted(d.meta.doc_id for d in store.documents()) == ["README", "top"]
    assert not old.problems
    monkeypatch.undo()
    report = sync_module.sync(store, folder)
    assert not report.problems
    assert sorted(d.meta.doc_id for d in store.documents()) == ["guides/setup/README", "top"]
    assert not sync_module.sync(store, folder).updated  # once only


def _identities(folder: Path) -> dict[str, tuple[str, str, list[str]]]:
    inventory = load_inventory(folder)
    found = {}
    for path in scan(folder).files:
        doc = parse_file(path, folder, inventory)
        found[doc.meta.source] = (
            doc.meta.doc_id, doc.meta.version, [c.chunk_id for c in chunk_document(doc)]
        )  # fmt: skip
    return found


def test_the_demo_collection_keeps_its_doc_ids_and_chunk_ids() -> None:
    found = _identities(demo_collection())
    inventory = load_inventory(demo_collection())
    assert {src: found[src][0] for src in inventory} == {
        src: row["doc_id"] for src, row in inventory.items()
    }
    # pinned before doc_ids came from paths: a file with metadata keeps its chunk IDs
    doc_id, version, chunk_ids = found["guides/ridgeline-2-tent.md"]
    assert (doc_id, version) == ("guide-ridgeline-2", "1")
    assert chunk_ids[:2] == ["912d84554235", "70975a2391d3"]


def test_the_larkfield_set_keeps_its_doc_ids(larkfield: Path, tmp_path: Path) -> None:
    staged = larkfield_collection(larkfield, tmp_path / "larkfield")
    found = _identities(staged)
    assert all("/" not in doc_id for doc_id, _, _ in found.values()), json.dumps(found)
    assert found["documents/returns-policy.v4.html"][0] == "returns-policy"
