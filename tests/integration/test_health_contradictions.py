"""The contradiction finder (`tether.health.contradictions`) on a copy of the demo collection
with contradictions planted in it (`bench/health/bench_health.py`'s `plant_contradictions`): every
planted one found with both quotes, and nothing between versions of one document, between
documents not in force together, or for the demo's notices (exceptions for their dates)."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import pytest

from tether.health.contradictions import find_contradictions
from tether.types import Contradiction

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.health.bench_health import (  # noqa: E402
    AS_OF,
    DEMO_DISTRACTORS,
    planted_collection,
    quote_overlaps,
    score,
)


def _planted_store(tmp_path_factory: pytest.TempPathFactory, embedder: object | None):
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    folder = tmp_path_factory.mktemp("planted")
    labels = planted_collection(folder / "collection")
    store = SqliteStore(folder / "index.sqlite")
    report = sync(store, folder / "collection", embedder=embedder, sentences=embedder is not None)
    assert report.committed and not report.problems, report.problems
    return store, labels


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory):
    """The planted copy ingested with the default embedder (chunk and sentence vectors)."""
    from tether.app import shared_models

    store, labels = _planted_store(tmp_path_factory, shared_models().embedder())
    yield store, labels
    store.close()


@pytest.fixture(scope="module")
def planted_plain(tmp_path_factory: pytest.TempPathFactory):
    """The planted copy ingested without vectors (pairs by shared words only)."""
    store, labels = _planted_store(tmp_path_factory, None)
    yield store, labels
    store.close()


def _planted_labels(labels: dict) -> list[dict]:
    return [c for c in labels["contradictions"] if c["id"].startswith("P")]


def _found_for(found: list[Contradiction], label: dict) -> Contradiction | None:
    a, b = label["a"], label["b"]
    for c in found:
        for x, y in ((c.a, c.b), (c.b, c.a)):
            if (
                (x.doc_id, y.doc_id) == (a["doc_id"], b["doc_id"])
                and quote_overlaps(x.text, a["quote"])
                and quote_overlaps(y.text, b["quote"])
            ):
                return c
    return None


def _check_findings(found: list[Contradiction], labels: dict) -> None:
    for label in _planted_labels(labels):
        c = _found_for(found, label)
        assert c is not None, f"{label['id']} not found: {[x.detail for x in found]}"
        assert c.kind == label["kind"], (label["id"], c)
        assert c.detail and " against " in c.detail and c.subject
        assert 0.0 < c.score <= 1.0
        for q in (c.a, c.b):
            assert q.text and q.chunk_id and q.version and q.title and q.section and q.owner
    for c in found:
        assert c.a.doc_id != c.b.doc_id  # versions of one document are never a contradiction
    result = score(found, labels)
    assert result["distractors_found"] == [], result["distractors_found"]
    pairs = [frozenset({(c.a.chunk_id, c.a.text), (c.b.chunk_id, c.b.text)}) for c in found]
    assert len(pairs) == len(set(pairs))  # a pair once, not A-B and B-A


@pytest.mark.slow
def test_planted_contradictions_found_with_vectors(planted) -> None:
    store, labels = planted
    found = find_contradictions(store, date.fromisoformat(AS_OF))
    _check_findings(found, labels)
    # the demo's own number contradiction: the help FAQ's $75 against delivery v5's $99
    assert any(
        {c.a.doc_id, c.b.doc_id} == {"help-faq", "delivery-policy"} and "$75" in c.detail
        and "$99" in c.detail for c in found
    )  # fmt: skip
    result = score(found, labels)
    assert result["precision"] == 1.0, [c.detail for c in result["unmatched"]]


@pytest.mark.slow
def test_only_documents_in_force_together(planted) -> None:
    store, _ = planted
    for day in (date(2025, 12, 1), date(2026, 1, 20), date(2026, 6, 15), date.fromisoformat(AS_OF)):
        for c in find_contradictions(store, day):
            for q in (c.a, c.b):
                assert store.get(q.chunk_id).meta.in_force(day), (day, c)
    # before the planted documents' dates nothing planted is in force: no finding at all
    assert find_contradictions(store, date(2025, 12, 1)) == []


@pytest.mark.slow
def test_notices_are_exceptions_not_contradictions(planted) -> None:
    store, _ = planted
    for day in (date(2026, 1, 20), date(2026, 3, 15), date(2026, 12, 15)):
        for c in find_contradictions(store, day):
            types = {store.get(q.chunk_id).meta.doc_type for q in (c.a, c.b)}
            assert "notice" not in types, c
    found = find_contradictions(store, date(2026, 12, 15))
    for d in DEMO_DISTRACTORS:  # the winter notice against the rental policy among them
        assert not score(found, {"contradictions": [], "distractors": [d]})["distractors_found"]


def test_planted_contradictions_found_without_vectors(planted_plain) -> None:
    store, labels = planted_plain
    assert not store.has_vectors()
    _check_findings(find_contradictions(store, date.fromisoformat(AS_OF)), labels)


def test_limit_and_progress(planted_plain) -> None:
    store, _ = planted_plain
    phases: list[str] = []
    found = find_contradictions(
        store, date.fromisoformat(AS_OF), limit=2, progress=lambda p, d, n: phases.append(p)
    )
    assert len(found) == 2 and found[0].score >= found[1].score
    assert "check pairs" in phases
