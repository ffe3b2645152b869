"""The PostgreSQL store at scale, on synthetic chunks: load, HNSW build, search latency and
recall, and 8 readers with 1 writer.

N synthetic chunks (384-d unit vectors drawn around 200 topic centres; 60-word texts from a
Zipf vocabulary; realistic metadata: 30 % staff, a third with effective dates, 10 chunks per
document) are written through the store's own `apply` (COPY of chunks and BM25 postings, one
transaction); then the collection's HNSW index is rebuilt alone to time it. 200 queries
(perturbed chunk vectors) measure dense search p50/p95 unfiltered (staff) and filtered
(public, as of a date: about 45 % of the rows), recall@10 of the HNSW path (iterative scan)
against the exact scan, and BM25 p50/p95 (2-3 word queries). Then 8 reader threads (filtered
dense and BM25) run for `--seconds` while 1 writer rewrites a 10-chunk document in a loop:
read p50/p95, reads, writes, errors.

    TETHER_TEST_PG_URL=postgresql://postgres@127.0.0.1:55432/postgres \\
        python bench/pg_scale.py --n 20000 --seconds 90    # writes bench/results/pg_scale.md

What it cannot do: synthetic vectors are not e5's (real ones cluster differently); the
server shares the machine with the client (and, here, with other jobs), so the figures are an
upper bound on what a dedicated server gives.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from datetime import date
from pathlib import Path

import numpy as np

from tether.stores.postgres import PostgresStore
from tether.stores.postgres_write import hnsw_index_name
from tether.types import (
    ChangeSet,
    Chunk,
    DocMeta,
    Document,
    FileChange,
    FileState,
    Filters,
    VectorChange,
)

ROOT = Path(__file__).resolve().parents[1]
DIM = 384
AS_OF = date(2026, 6, 1)
STAFF = Filters(audience="staff")
PUBLIC_ON = Filters(as_of=AS_OF, audience="public")


def synthetic(n: int, seed: int = 0) -> tuple[list[FileChange], np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(200, DIM)).astype(np.float32)
    vecs = centres[rng.integers(0, 200, n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(20000)]
    ranks = np.minimum(rng.zipf(1.3, size=(n, 60)), 20000) - 1
    files, ids = [], []
    for d in range(0, n, 10):
        access = "staff" if rng.random() < 0.3 else "public"
        dated = rng.random() < 0.33
        start = date(2025 + int(rng.integers(0, 3)), 1, 1) if dated else None
        meta = DocMeta(f"doc{d}", "1", f"Doc {d}", access=access, effective_from=start,
                       source=f"d{d}.md", format="markdown")  # fmt: skip
        chunks, text = [], ""
        for i in range(d, min(d + 10, n)):
            words = " ".join(vocab[r] for r in ranks[i])
            cid = f"{i:012x}"
            chunks.append(Chunk(cid, meta, words, (f"Part {i}",), len(text),
                                len(text) + len(words), i - d))  # fmt: skip
            text += words
            ids.append(cid)
        doc = Document(meta, text, (), f"h{d}")
        state = FileState(meta.source, f"f{d}", len(text), 0, meta.doc_id, "1")
        files.append(FileChange(state, doc, tuple(chunks), True))
    return files, vecs, ids


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def timed(fn, queries) -> tuple[list[float], list]:
    times, out = [], []
    for q in queries:
        began = time.perf_counter()
        out.append(fn(q))
        times.append(time.perf_counter() - began)
    return times, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("TETHER_TEST_PG_URL"))
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "pg_scale.md")
    args = parser.parse_args()
    if not args.pg:
        sys.exit("error: pass --pg URL or set TETHER_TEST_PG_URL")
    url = f"{args.pg}{'&' if '?' in args.pg else '?'}collection=scale-{uuid.uuid4().hex[:8]}"
    load_before = os.getloadavg()[0]
    files, vecs, ids = synthetic(args.n)
    store = PostgresStore(url, ann="hnsw")
    began = time.perf_counter()
    store.apply(ChangeSet(files=tuple(files), chunker="synthetic",
                          vectors=tuple(VectorChange(c, "h", v) for c, v in zip(ids, vecs, strict=True)),
                          meta=(("embedder_dim", str(DIM)),)))  # fmt: skip
    load_s = time.perf_counter() - began
    print(f"loaded {args.n} in {load_s:.1f} s", file=sys.stderr)
    began = time.perf_counter()
    store.db.execute(f"REINDEX INDEX {hnsw_index_name(store.cid, DIM)}")
    build_s = time.perf_counter() - began
    store.db.execute("ANALYZE tether_chunks")
    exact = PostgresStore(url, ann="none")
    rng = np.random.default_rng(1)
    queries = vecs[rng.integers(0, args.n, 200)] + 0.3 * rng.normal(size=(200, DIM)).astype(
        np.float32
    )
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    rows = []
    for label, filters in (("unfiltered (staff)", STAFF), ("filtered (public, as of)", PUBLIC_ON)):
        t_ann, got = timed(lambda q, f=filters: store.search_dense(q, 10, f), queries)
        t_exact, truth = timed(lambda q, f=filters: exact.search_dense(q, 10, f), queries)
        recall = statistics.mean(
            len({c for c, _ in g} & {c for c, _ in t}) / max(len(t), 1)
            for g, t in zip(got, truth, strict=True)
        )
        short = sum(len(g) < 10 for g in got)
        rows.append(f"| dense {label} | {pct(t_ann, 50):.1f} | {pct(t_ann, 95):.1f} |"
                    f" {recall:.3f} | {short} | {pct(t_exact, 50):.1f} | {pct(t_exact, 95):.1f} |")  # fmt: skip
    words = [
        " ".join(f"w{int(r)}" for r in rng.integers(5, 3000, rng.integers(2, 4)))
        for _ in range(200)
    ]
    t_lex, _ = timed(lambda q: store.lexical_ranking(q, 10, PUBLIC_ON), words)
    rows.append(
        f"| BM25 filtered (2-3 words) | {pct(t_lex, 50):.1f} | {pct(t_lex, 95):.1f} | | | | |"
    )
    size = store.info()["size_bytes"]
    conc = concurrency(url, files[:1], vecs[:10], ids[:10], queries, words, args.seconds)
    report = [
        "# PostgreSQL store at scale (bench/pg_scale.py)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared by eight engineers' jobs"
        f" (load average {load_before:.0f} at the start, {os.getloadavg()[0]:.0f} at the end),"
        f" PostgreSQL 15 + pgvector 0.8.0 on loopback, default server settings; HNSW m 32,"
        f" ef_construction 80, ef_search 384 (as the SQLite store's faiss graph), iterative scan"
        f" relaxed_order. {time.strftime('%Y-%m-%d')}.",
        "",
        f"N = {args.n:,} synthetic chunks, {DIM}-d, {args.n // 10:,} documents (30 % staff, a"
        f" third dated); database tables {size / 1e6:.0f} MB.",
        "",
        f"- load through `apply` (COPY of chunks with vectors and of the BM25 postings, HNSW"
        f" built at the end, one transaction): {load_s:.1f} s ({args.n / load_s:,.0f} chunks/s)",
        f"- HNSW build alone (REINDEX): {build_s:.1f} s",
        "",
        "| search (k = 10, 200 queries) | p50 ms | p95 ms | recall@10 vs exact |"
        " results < k | exact p50 ms | exact p95 ms |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Concurrency ({args.seconds:.0f} s; 8 reader threads, each its own connection, alternating"
        " filtered dense and BM25; 1 writer rewriting a 10-chunk document with vectors in a loop):",
        "",
        "| reads | read p50 ms | read p95 ms | writes | write p50 ms | errors |",
        "|---|---|---|---|---|---|",
        conc,
        "",
        "The issue's 1,000,000-chunk goal (filtered dense p95 ≤ 30 ms at recall@10 ≥ 0.95) was"
        " not run here: at this machine's load a million-row load and HNSW build would take"
        " hours; the N above is what finishes in a few minutes.",
    ]
    args.out.write_text("\n".join(report) + "\n", encoding="utf-8")
    print("\n".join(report))
    exact.close()
    drop(store)


def drop(store: PostgresStore) -> None:
    """Remove the bench's collection (its rows and its HNSW index) from the database."""
    db = store.db
    with db.transaction():
        for (index,) in db.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE %s",
            (f"tether\\_chunks\\_hnsw\\_{store.cid}\\_%",),
        ).fetchall():
            db.execute(f"DROP INDEX {index}")
        for table in ("tether_sentence_embeddings", "tether_instructions", "tether_postings"):
            db.execute(f"DELETE FROM {table} WHERE collection_id = %s", (store.cid,))
        db.execute("DELETE FROM tether_collections WHERE id = %s", (store.cid,))
    store.close()


def concurrency(url, files, vecs, ids, queries, words, seconds) -> str:
    stop = threading.Event()
    reads: list[float] = []
    writes: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def reader(n: int) -> None:
        store = PostgresStore(url, create=False, writable=False, ann="hnsw")
        i = n
        try:
            while not stop.is_set():
                began = time.perf_counter()
                if i % 2:
                    store.search_dense(queries[i % len(queries)], 10, PUBLIC_ON)
                else:
                    store.lexical_ranking(words[i % len(words)], 10, PUBLIC_ON)
                with lock:
                    reads.append(time.perf_counter() - began)
                i += 1
        except Exception as exc:  # counted, reported
            errors.append(repr(exc))
        finally:
            store.close()

    def writer() -> None:
        store = PostgresStore(url)
        try:
            while not stop.is_set():
                began = time.perf_counter()
                change = ChangeSet(files=tuple(files), chunker="synthetic",
                                   vectors=tuple(VectorChange(c, "h", v) for c, v in zip(ids, vecs, strict=True)))  # fmt: skip
                store.apply(change)
                writes.append(time.perf_counter() - began)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            store.close()

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(120)
    return (
        f"| {len(reads)} | {pct(reads, 50):.1f} | {pct(reads, 95):.1f} | {len(writes)} |"
        f" {pct(writes, 50) if writes else 0:.1f} | {len(errors)} {errors[:1] if errors else ''} |"
    )


if __name__ == "__main__":
    main()
