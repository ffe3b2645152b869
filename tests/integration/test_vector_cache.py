"""A killed or failed ingest loses no embedding work: vectors are kept as they are computed
(`tether.ingest.vector_cache`), outside the index's one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tether.ingest import vector_cache
from tether.ingest.sync import sync, text_hash
from tether.ingest.vector_cache import VectorCache, embed_cached
from tether.stores.sqlite import SqliteStore


class Counting:
    """The real e5 embedder, counting the passages it embeds and failing once it has embedded
    `fail_after` of them (a crash or a kill in the middle of an ingest)."""

    def __init__(self, inner, fail_after: int | None = None) -> None:
        self.inner = inner
        self.name, self.version, self.dim = inner.name, inner.version, inner.dim
        self.sentence_vectors = True
        self.fail_after = fail_after
        self.embedded = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and self.embedded + len(texts) > self.fail_after:
            raise RuntimeError("killed")
        self.embedded += len(texts)
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        body = "\n\n".join(
            f"Section {j} of note {i} says the limit is {i * 10 + j} units per day."
            for j in range(4)
        )
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")
    return docs


@pytest.mark.slow
def test_an_ingest_killed_midway_resumes_without_embedding_again(tmp_path, monkeypatch) -> None:
    from tether.app import shared_models

    monkeypatch.setattr(vector_cache, "BATCH", 4)
    docs, cache = _folder(tmp_path), tmp_path / "vectors"
    real = shared_models().embedder()
    store = SqliteStore(tmp_path / "index.sqlite")
    killed = Counting(real, fail_after=11)
    with pytest.raises(RuntimeError, match="killed"):
        sync(store, docs, embedder=killed, vector_cache=cache)
    assert store.chunks() == [] and not store.has_vectors()  # nothing written to the index
    assert killed.embedded == 10  # 6 chunks and a batch of 4 sentences, done before the kill

    again = Counting(real)
    report = sync(store, docs, embedder=again, vector_cache=cache)
    assert report.committed and report.chunks_written > 0
    texts = len(store.vector_hashes()) + sum(
        len(spans) for spans, _ in store.sentence_vectors(store.vector_hashes()).values()
    )
    assert again.embedded == texts - 10  # only what the killed run had not embedded
    assert texts > 16

    # the same vectors as an ingest without a cache
    plain = SqliteStore(tmp_path / "plain.sqlite")
    sync(plain, docs, embedder=Counting(real))
    ids, matrix = store.vectors()
    plain_ids, plain_matrix = plain.vectors()
    assert sorted(ids) == sorted(plain_ids)
    a = dict(zip(ids, matrix, strict=True))
    b = dict(zip(plain_ids, plain_matrix, strict=True))
    assert all(np.allclose(a[c], b[c], atol=1e-5) for c in ids)

    third = Counting(real)  # a rebuild embeds nothing at all
    sync(store, docs, embedder=third, vector_cache=cache, rebuild=True)
    assert third.embedded == 0


def test_cached_batches_survive_a_failure_and_count_as_done(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(vector_cache, "BATCH", 2)
    cache = VectorCache(tmp_path, "fake (1) 3", 3)
    calls: list[list[str]] = []

    def embed(texts: list[str], progress) -> np.ndarray:
        calls.append(texts)
        if "boom" in texts:
            raise RuntimeError("boom")
        progress(len(texts), 10 * len(texts))
        return np.array([[len(t), 0.0, 1.0] for t in texts], dtype=np.float32)

    texts = ["a", "bb", "ccc", "boom", "eeeee"]
    with pytest.raises(RuntimeError):
        embed_cached(embed, texts, [text_hash(t) for t in texts], 3, lambda d, t: None, cache)
    seen: list[tuple[int, int]] = []
    calls.clear()
    texts[3] = "dddd"
    keys = [text_hash(t) for t in texts]
    out, cached = embed_cached(embed, texts, keys, 3, lambda d, t: seen.append((d, t)), cache)
    assert cached == 2 and calls == [["ccc", "dddd"], ["eeeee"]]
    assert [row[0] for row in out] == [1, 2, 3, 4, 5]
    assert seen[0] == (2, 0) and seen[-1] == (5, 30)  # the cached count as done; tokens add up
    cache.close()


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cache = VectorCache(blocked, "fake (1) 2", 2)

    def embed(texts: list[str], progress) -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32)

    out, cached = embed_cached(embed, ["x", "y"], ["kx", "ky"], 2, lambda d, t: None, cache)
    assert out.shape == (2, 2) and cached == 0 and cache.broken


def test_ingest_progress_is_log_lines_when_not_on_a_terminal(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app

    docs = _folder(tmp_path)
    index = str(tmp_path / "i.sqlite")
    result = CliRunner().invoke(app, ["ingest", str(docs), "--index", index, "--no-embed"])
    assert result.exit_code == 0, result.output
    assert "Reading files: 0 of 6" in result.output
    assert "Reading files: 6 of 6 in" in result.output and "(done)" in result.output
    quiet = CliRunner().invoke(
        app, ["--quiet", "ingest", str(docs), "--index", index, "--no-embed", "--rebuild"]
    )
    assert "Reading files" not in quiet.output


def test_calibration_after_an_ingest_is_a_phase_of_its_own(tmp_path: Path) -> None:
    """The fusion and gate calibrations take seconds after the index is written: off a
    terminal they log their start and end like the other phases."""
    from typer.testing import CliRunner

    from tether.cli.main import app

    docs = _folder(tmp_path)
    index = str(tmp_path / "i.sqlite")
    result = CliRunner().invoke(app, ["ingest", str(docs), "--index", index])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    start = lines.index("Calibrating: 0 of 2")
    assert start > max(i for i, line in enumerate(lines) if line.startswith("Writing index"))
    assert any(line.startswith("Calibrating: 2 of 2 in") for line in lines[start:])


def test_a_damaged_row_counts_as_not_cached(tmp_path: Path) -> None:
    import sqlite3

    cache = VectorCache(tmp_path, "fake (1) 2", 2)
    cache.put_many([("a", np.array([1.0, 0.0])), ("b", np.array([0.0, 1.0]))])
    cache.close()
    db = sqlite3.connect(cache.path)
    db.execute("UPDATE vectors SET vector = substr(vector, 1, 5) WHERE hash = 'a'")
    db.execute("INSERT INTO vectors VALUES ('c', 'text'), ('d', NULL), ('e', ?)",
               (np.array([np.nan, 1.0], dtype=np.float32).tobytes(),))  # fmt: skip
    db.commit()
    db.close()
    found = VectorCache(tmp_path, "fake (1) 2", 2).get_many(["a", "b", "c", "d", "e"])
    assert list(found) == ["b"]


def test_a_vector_cache_path_that_cannot_be_expanded_means_no_cache(clean_env: Path) -> None:
    from tether.config import load_settings

    env = clean_env / "settings.env"
    env.write_text("TETHER_VECTOR_CACHE=~no-such-user-here/x\n")
    assert load_settings(env).vector_cache is None
