"""Shared fixtures. `demo_store`: the bundled demo collection ingested ONCE per test session
with the default embedder (chunk and sentence vectors), in a temporary folder; tests must
not write to it.

Property tests (Hypothesis) are derandomized under CI=true: the gate that lands a change
runs the same examples every time, so it is reproducible; elsewhere each run explores new
ones (how the parser fuzz found a page with U+FFFE beside a dropped element)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings
from model_guard import forbid_models

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
LARKFIELD = REPO.parent / "shared" / "benchmarks" / "larkfield"


@pytest.fixture(autouse=True)
def _no_user_settings_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tests never read the settings file of the person running them (~/.config/tether/env),
    and keep the vectors ingests compute in the session's own cache, not the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "no-config"))
    monkeypatch.delenv("TETHER_ENV_FILE", raising=False)
    monkeypatch.setenv("TETHER_VECTOR_CACHE", str(tmp_path_factory.getbasetemp() / "vectors"))


def pytest_configure(config: pytest.Config) -> None:
    """With TETHER_TEST_FORBID_MODELS=1 the whole session runs as unit tests do (no model, a
    session fixture's included): how a test is found to need a model."""
    if os.environ.get("TETHER_TEST_FORBID_MODELS") == "1":
        forbid_models(setattr)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No settings variable set (every one in `tether.config.VARIABLES` removed), a settings
    folder of the test's own, and the test's temporary folder as the current folder."""
    from tether.config import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # not the real user's
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory):
    """A SqliteStore holding the demo collection, with vectors (built once per session)."""
    from tether.app import shared_models
    from tether.evaluation.questions import demo_collection
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path_factory.mktemp("demo-index") / "index.sqlite")
    report = sync(store, demo_collection(), embedder=shared_models().embedder(), sentences=True)
    assert report.committed and not report.problems, report.problems
    yield store
    store.close()


@pytest.fixture(scope="session")
def demo_pg_store(demo_store):
    """The demo collection in a PostgreSQL collection of its own (TETHER_TEST_PG_URL; skipped
    without one, failed in CI), with the same vectors as `demo_store` (copied, not recomputed)."""
    from pg_support import StoredVectors, drop_collection, fresh_collection

    from tether.app import shared_models
    from tether.evaluation.questions import demo_collection
    from tether.ingest.sync import sync
    from tether.stores import open_store

    location = fresh_collection()
    store = open_store(location, must_exist=False)
    embedder = StoredVectors(demo_store, shared_models().embedder())
    report = sync(store, demo_collection(), embedder=embedder, sentences=True)
    assert report.committed and not report.problems, report.problems
    yield store
    store.close()
    drop_collection(location)


@pytest.fixture(params=["sqlite", "postgres"])
def each_demo_store(request: pytest.FixtureRequest):
    """The demo collection in each store: SQLite (`demo_store`), then PostgreSQL."""
    return request.getfixturevalue("demo_store" if request.param == "sqlite" else "demo_pg_store")


@pytest.fixture(scope="session")
def larkfield() -> Path:
    """The shared Larkfield benchmark (../shared/benchmarks/larkfield from the repo root)."""
    if not (LARKFIELD / "questions" / "questions.jsonl").is_file():
        pytest.skip(f"the Larkfield benchmark is not at {LARKFIELD}")
    return LARKFIELD
