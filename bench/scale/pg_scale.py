"""The PostgreSQL store at scale, on synthetic chunks: load, HNSW build, search latency and
recall, and 8 readers with 1 writer.

N synthetic chunks are written through the store's own `apply` (COPY of chunks and BM25
postings, HNSW built at the end, one transaction; `--batch` splits it), into a database of
their own (`--database`, created and dropped by the run) or a collection of the given one.
Vectors (`--vectors`): `e5` (default) draws 384-d unit vectors from a Gaussian fitted (mean
and covariance) to real e5 vectors (bench/scale/e5_like.py, as bench/retrieval/bench_retrieval.py does), and
the queries are real e5 question vectors (the bundled questions and Larkfield's);
`clusters` is the first generator (200 topic centres plus noise; queries are perturbed chunk
vectors), whose neighbours differ by about 0.0005 cosine, kept for comparison. Texts: 60
words from a Zipf vocabulary; metadata: 30 % staff, a third with effective dates, 10 chunks
per document.

Measured: the load (chunks/s; of it, the statistics and the HNSW build at the end, timed
inside `apply`), optionally the HNSW build again alone (`--reindex`); dense search p50/p95
unfiltered (staff) and filtered (public, as of a date) through the store's HNSW path
(iterative scan), with recall@10 against the exact ranking (cosine in numpy over the rows the
store's own filter SQL lets through; the store's exact scan, `ann="none"`, is timed and
checked against it on 30 queries); BM25 p50/p95 (2-3 word queries); then 8 reader threads
(filtered dense and BM25) for `--seconds` while 1 writer rewrites a 10-chunk document in a
loop. `--ef` and `--builds` sweep hnsw.ef_search and the index's m / ef_construction (and its
type: `32:80:halfvec` builds the graph over half-precision copies of the vectors) on the
same rows. Each run writes bench/results/pg_scale_<vectors>_<N>.md with its JSON record (the run's date,
commit, machine, load and figures) and appends its figures
to bench/results/pg_scale_runs.jsonl; `--summary` writes the growth table across runs
(bench/results/pg_scale_1m.md).

    TETHER_TEST_PG_URL=postgresql://postgres@127.0.0.1:55432/postgres \\
        python bench/scale/pg_scale.py --n 100000 --seconds 120 --database tether_scale_100k

What it cannot do: a Gaussian is not a corpus (real vectors cluster by topic and document);
the server shares the machine with the client (and, here, with other jobs), so the figures
are an upper bound on what a dedicated server gives.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import threading
import time
from datetime import date
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
import numpy as np
import psycopg

import tether.stores.postgres as pg_module
import tether.stores.postgres_write as pg_write
from bench.harness import load_average, make_record, render_page, write_record
from bench.scale import e5_like
from tether.stores.dense import HNSW_EF_CONSTRUCTION, HNSW_M
from tether.stores.postgres import PostgresStore
from tether.stores.postgres_sql import filter_sql
from tether.stores.postgres_write import hnsw_index_name, hnsw_predicate
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

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
RUNS = RESULTS / "pg_scale_runs.jsonl"
DIM = 384
AS_OF = date(2026, 6, 1)
STAFF = Filters(audience="staff")
PUBLIC_ON = Filters(as_of=AS_OF, audience="public")
FILTERS = (("unfiltered (staff)", STAFF), ("filtered (public, as of)", PUBLIC_ON))
SETTINGS = (
    "server_version", "shared_buffers", "work_mem", "maintenance_work_mem",
    "max_parallel_maintenance_workers", "max_parallel_workers_per_gather", "max_wal_size",
)  # fmt: skip


def cluster_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """The first generator: 200 topic centres plus noise (near-ties between neighbours)."""
    centres = rng.normal(size=(200, DIM)).astype(np.float32)
    vecs = centres[rng.integers(0, 200, n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs


class Synthetic:
    """N chunks in N/10 documents with their vectors (from `gaussian`, or with None from
    clusters); the documents are built a range at a time (`files`), so memory stays flat."""

    def __init__(self, n: int, gaussian: e5_like.Gaussian | None, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.n = n
        self.vecs = cluster_vectors(rng, n) if gaussian is None else e5_like.draw(gaussian, n, seed)
        self.ranks = (np.minimum(rng.zipf(1.3, size=(n, 60)), 20000) - 1).astype(np.int16)
        self.docs: list[tuple[str, date | None]] = []
        for _ in range(0, n, 10):
            access = "staff" if rng.random() < 0.3 else "public"
            dated = rng.random() < 0.33
            self.docs.append(
                (access, date(2025 + int(rng.integers(0, 3)), 1, 1) if dated else None)
            )
        self.ids = [f"{i:012x}" for i in range(n)]
        self.vocab = [f"w{i}" for i in range(20000)]

    def files(self, first: int, last: int) -> list[FileChange]:
        """The documents first..last-1 (document d holds chunks 10 d .. 10 d + 9)."""
        out = []
        for d in range(first * 10, min(last * 10, self.n), 10):
            access, start = self.docs[d // 10]
            meta = DocMeta(f"doc{d}", "1", f"Doc {d}", access=access, effective_from=start,
                           source=f"d{d}.md", format="markdown")  # fmt: skip
            chunks, text = [], ""
            for i in range(d, min(d + 10, self.n)):
                words = " ".join(self.vocab[r] for r in self.ranks[i])
                chunks.append(Chunk(self.ids[i], meta, words, (f"Part {i}",), len(text),
                                    len(text) + len(words), i - d))  # fmt: skip
                text += words
            doc = Document(meta, text, (), f"h{d}")
            state = FileState(meta.source, f"f{d}", len(text), 0, meta.doc_id, "1")
            out.append(FileChange(state, doc, tuple(chunks), True))
        return out

    def change(self, first: int, last: int, meta=()) -> ChangeSet:
        """The change set writing documents first..last-1 with their vectors."""
        lo, hi = first * 10, min(last * 10, self.n)
        vectors = tuple(VectorChange(c, "h", v)
                        for c, v in zip(self.ids[lo:hi], self.vecs[lo:hi], strict=True))  # fmt: skip
        return ChangeSet(files=tuple(self.files(first, last)), chunker="synthetic",
                         vectors=vectors, meta=meta)  # fmt: skip


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else 0.0


def timed(fn, queries) -> tuple[list[float], list]:
    times, out = [], []
    for q in queries:
        began = time.perf_counter()
        out.append(fn(q))
        times.append(time.perf_counter() - began)
    return times, out


def label(n: int) -> str:
    """1000000 -> 1m, 100000 -> 100k, 12345 -> 12345."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def with_collection(url: str, name: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "collection"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("collection", name)])))


def loads() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def exact_top(
    vecs: np.ndarray, queries: np.ndarray, allowed: np.ndarray, k: int = 10, block: int = 100_000
) -> list[list[int]]:
    """For each query, the rows (of those `allowed`) with the k highest cosines, best first
    (ties: the earlier row, as the store's `ORDER BY d, seq`)."""
    found_i, found_s = [], []
    q = np.asarray(queries, np.float32).T
    for i in range(0, len(vecs), block):
        scores = vecs[i : i + block] @ q
        scores[~allowed[i : i + block]] = -np.inf
        top = np.argpartition(-scores, min(k, len(scores) - 1), axis=0)[: k + 1]
        found_i.append(top + i)
        found_s.append(np.take_along_axis(scores, top, 0))
    rows, scores = np.concatenate(found_i), np.concatenate(found_s)
    out = []
    for j in range(q.shape[1]):
        order = np.lexsort((rows[:, j], -scores[:, j]))
        picked = [int(rows[o, j]) for o in order if np.isfinite(scores[o, j])]
        out.append(list(dict.fromkeys(picked))[:k])
    return out


def recall(got: list[list[tuple[str, float]]], truth: list[set[str]]) -> float:
    return statistics.mean(
        len({c for c, _ in g} & t) / max(len(t), 1) for g, t in zip(got, truth, strict=True)
    )


def measure(store, queries, truth, warm) -> dict:
    """Dense p50/p95, recall@10 and short results per filter, through the store's HNSW path."""
    out = {}
    for name, filters in FILTERS:
        for q in warm:
            store.search_dense(q, 10, filters)
        t_ann, got = timed(lambda q, f=filters: store.search_dense(q, 10, f), queries)
        out[name] = {
            "p50": pct(t_ann, 50),
            "p95": pct(t_ann, 95),
            "recall": recall(got, truth[name]),
            "short": sum(len(g) < 10 for g in got),
        }
    return out


class BuildTimer:
    """Times the end of `apply` (lexical statistics and the HNSW build), inside the load."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._finish = pg_write._finish

    def __enter__(self) -> BuildTimer:
        def timed_finish(*args, **kwargs):
            began = time.perf_counter()
            try:
                return self._finish(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - began

        pg_write._finish = timed_finish
        return self

    def __exit__(self, *exc) -> None:
        pg_write._finish = self._finish


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("TETHER_TEST_PG_URL"))
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--vectors", choices=("e5", "clusters"), default="e5")
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--database", help="create this database for the run, drop it after")
    parser.add_argument("--batch", type=int, default=0, help="chunks per apply (0: one apply)")
    parser.add_argument("--reindex", action="store_true", help="also time a REINDEX alone")
    parser.add_argument("--ef", default="", help="hnsw.ef_search values to sweep, e.g. 100,200")
    parser.add_argument(
        "--builds", default="", help="m:ef_construction[:halfvec] graphs to sweep (rebuilds)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reference", type=Path, help="an .npz keeping the real e5 vectors")
    parser.add_argument("--summary", action="store_true", help="only write the growth table")
    args = parser.parse_args()
    if args.summary:
        summary(RESULTS / "pg_scale_1m.md")
        return
    if not args.pg:
        sys.exit("error: pass --pg URL or set TETHER_TEST_PG_URL")
    out = args.out or RESULTS / f"pg_scale_{args.vectors}_{label(args.n)}.md"
    args.load_before = load_average()
    base = args.pg
    if args.database:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{args.database}"')
        base = with_database(base, args.database)
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
    try:
        record = run(args, base, out)
    finally:
        if args.database:
            with psycopg.connect(args.pg, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{args.database}" WITH (FORCE)')
    with RUNS.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def run(args, base: str, out: Path) -> dict:
    url = with_collection(base, f"scale-{args.vectors}-{label(args.n)}")
    admin = psycopg.connect(base, autocommit=True)
    settings = {s: admin.execute(f"SHOW {s}").fetchone()[0] for s in SETTINGS}
    settings["pgvector"] = admin.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
    ).fetchone()[0]
    record: dict = {"n": args.n, "vectors": args.vectors, "date": time.strftime("%Y-%m-%d %H:%M"),
                    "settings": settings, "load_avg": {"start": loads()},
                    "hnsw": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION,
                             "ef_search": pg_module.EF_SEARCH}}  # fmt: skip
    if args.vectors == "e5":
        print("fitting the Gaussian to real e5 vectors …", file=sys.stderr)
        real, queries = e5_like.reference(cache=args.reference)
        gaussian = e5_like.fit(real)
        record["fitted_on"] = len(real)
    else:
        gaussian = None
    data = Synthetic(args.n, gaussian)
    vecs, ids = data.vecs, data.ids
    rng = np.random.default_rng(1)
    if gaussian is None:
        queries = vecs[rng.integers(0, args.n, 200)] + 0.3 * rng.normal(size=(200, DIM)).astype(
            np.float32
        )
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        warm = vecs[rng.integers(0, args.n, 50)]
    else:
        warm = e5_like.draw(gaussian, 50, seed=99)
    store = PostgresStore(url, ann="hnsw")
    print(f"loading {args.n:,} chunks …", file=sys.stderr)
    docs = len(data.docs)
    per = max(1, (args.batch or args.n) // 10)  # documents per apply
    began = time.perf_counter()
    with BuildTimer() as build:
        for b in range(0, docs, per):
            store.apply(data.change(b, b + per, meta=(("embedder_dim", str(DIM)),)))
    record["load_s"] = time.perf_counter() - began
    record["finish_s"] = build.seconds
    record["applies"], record["batch"] = -(-docs // per), per * 10
    record["load_avg"]["after_load"] = loads()
    print(f"loaded in {record['load_s']:.1f} s", file=sys.stderr)
    if args.reindex:
        began = time.perf_counter()
        admin.execute(f"REINDEX INDEX {hnsw_index_name(store.cid, DIM)}")
        record["reindex_s"] = time.perf_counter() - began
    admin.execute("ANALYZE tether_chunks")
    record["db_bytes"] = admin.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    record["hnsw_bytes"] = admin.execute(
        "SELECT pg_relation_size(%s::regclass)", (hnsw_index_name(store.cid, DIM),)
    ).fetchone()[0]

    print("exact ranking …", file=sys.stderr)
    truth: dict[str, list[set[str]]] = {}
    exact = PostgresStore(url, ann="none", writable=False, create=False)
    for name, filters in FILTERS:
        where, wargs = filter_sql(filters, store.cid)
        allowed_ids = {r[0] for r in admin.execute(
            f"SELECT c.chunk_id FROM tether_chunks c WHERE {where}", wargs)}  # fmt: skip
        allowed = np.array([c in allowed_ids for c in ids])
        record.setdefault("allowed", {})[name] = float(allowed.mean())
        truth[name] = [{ids[i] for i in top} for top in exact_top(vecs, queries, allowed)]
        t_exact, got = timed(lambda q, f=filters: exact.search_dense(q, 10, f), queries[:30])
        record.setdefault("exact", {})[name] = {
            "p50": pct(t_exact, 50), "p95": pct(t_exact, 95),
            "agrees": recall(got, truth[name][:30]),
        }  # fmt: skip
    exact.close()
    print("searching …", file=sys.stderr)
    record["dense"] = measure(store, queries, truth, warm)
    words = [
        " ".join(f"w{int(r)}" for r in rng.integers(5, 3000, rng.integers(2, 4)))
        for _ in range(200)
    ]
    t_lex, _ = timed(lambda q: store.lexical_ranking(q, 10, PUBLIC_ON), words)
    record["bm25"] = {"p50": pct(t_lex, 50), "p95": pct(t_lex, 95)}
    record["load_avg"]["after_search"] = loads()
    if args.seconds > 0:
        print(f"mixed run, {args.seconds:.0f} s …", file=sys.stderr)
        record["mixed"] = concurrency(url, data.change(0, 1), queries, words,
                                      args.seconds)  # fmt: skip
        record["mixed"]["seconds"] = args.seconds
        record["load_avg"]["after_mixed"] = loads()
    record["sweep"] = sweep(args, admin, store, queries, truth, warm)
    record["load_avg"]["end"] = loads()
    record["queries"] = len(queries)
    record["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    admin.close()
    if not args.database:
        drop(store)
    else:
        store.close()
    result = make_record(out.stem, record, args.load_before)
    write_record(out.with_suffix(".json"), result)
    out.write_text(render_page(result, lambda r: report(r["figures"])), encoding="utf-8")
    print(report(record))
    return {**record, "commit": result["commit"]}


def sweep(args, admin, store, queries, truth, warm) -> list[dict]:
    """recall@10 and p50/p95 per ef_search on the index as built, then per m:ef_construction
    (each a rebuild of the collection's index, timed)."""
    efs = [int(e) for e in args.ef.split(",") if e]
    builds = [build_spec(b) for b in args.builds.split(",") if b]
    rows: list[dict] = []
    try:
        _sweep(efs, builds, admin, store, queries, truth, warm, rows)
    except KeyboardInterrupt:  # SIGINT stops the sweep; the rows measured are reported
        print("sweep interrupted", file=sys.stderr)
    return rows


def build_spec(text: str) -> tuple[int, int, str]:
    """(m, ef_construction, vector type) of "M:EFC" or "M:EFC:halfvec"."""
    m, efc, *kind = text.split(":")
    if kind and kind[0] not in ("vector", "halfvec"):
        raise SystemExit(f"--builds: {text!r}: the type is vector or halfvec")
    return int(m), int(efc), kind[0] if kind else "vector"


def _sweep(efs, builds, admin, store, queries, truth, warm, rows) -> None:
    default = pg_module.EF_SEARCH
    name = hnsw_index_name(store.cid, DIM)
    first = (HNSW_M, HNSW_EF_CONSTRUCTION, "vector")
    for m, efc, kind in [first, *builds] if efs or builds else []:
        build_s = None
        if (m, efc, kind) != first:
            print(f"rebuilding with m {m}, ef_construction {efc}, {kind} …", file=sys.stderr)
            admin.execute(f"DROP INDEX {name}")
            began = time.perf_counter()
            admin.execute(
                f"CREATE INDEX {name} ON tether_chunks USING hnsw"
                f" ((embedding::{kind}({DIM})) {kind}_cosine_ops)"
                f" WITH (m = {m}, ef_construction = {efc}) WHERE {hnsw_predicate(store.cid, DIM)}"
            )
            build_s = time.perf_counter() - began
        size = admin.execute("SELECT pg_relation_size(%s::regclass)", (name,)).fetchone()[0]
        for ef in efs or [default]:
            pg_module.EF_SEARCH, pg_module.HNSW_KIND = ef, kind
            try:
                got = measure(store, queries, truth, warm)
            finally:
                pg_module.EF_SEARCH, pg_module.HNSW_KIND = default, "vector"
            rows.append({"m": m, "ef_construction": efc, "kind": kind, "ef_search": ef,
                         "build_s": build_s, "hnsw_bytes": size, "dense": got,
                         "load_avg": loads()})  # fmt: skip
            print(json.dumps(rows[-1]), file=sys.stderr)


def report(r: dict) -> str:
    s = r["settings"]
    size = r["db_bytes"]
    lines = [
        f"# PostgreSQL store at scale: {r['n']:,} chunks, {r['vectors']} vectors"
        " (bench/scale/pg_scale.py)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other jobs (load"
        f" averages 1/5/15 min: {r['load_avg']['start']} at the start,"
        f" {r['load_avg']['after_load']} after the load, {r['load_avg']['end']} at the end);"
        f" PostgreSQL {s['server_version'].split()[0]} + pgvector {s['pgvector']} on loopback,"
        f" shared_buffers {s['shared_buffers']}, maintenance_work_mem"
        f" {s['maintenance_work_mem']}, max_parallel_maintenance_workers"
        f" {s['max_parallel_maintenance_workers']}, work_mem {s['work_mem']}, max_wal_size"
        f" {s['max_wal_size']}; HNSW m {r['hnsw']['m']}, ef_construction"
        f" {r['hnsw']['ef_construction']}, ef_search {r['hnsw']['ef_search']}, iterative scan"
        f" relaxed_order. {r['date']} UTC.",
        "",
        f"N = {r['n']:,} synthetic chunks, {DIM}-d, {r['n'] // 10:,} documents (30 % staff, a"
        " third dated); "
        + (
            f"vectors drawn from a Gaussian fitted to {r['fitted_on']:,} real e5 vectors,"
            f" queries {r['queries']} real e5 question vectors"
            if r["vectors"] == "e5"
            else f"vectors around 200 cluster centres, queries {r['queries']} perturbed chunk"
            " vectors"
        )
        + f"; database {size / 1e6:,.0f} MB, of it the HNSW index {r['hnsw_bytes'] / 1e6:,.0f}"
        f" MB. The filtered search lets {r['allowed']['filtered (public, as of)']:.0%} of the"
        " rows through.",
        "",
        f"- load through `apply` ({r['applies']} transaction{'s' if r['applies'] > 1 else ''};"
        f" COPY of chunks with vectors and of the BM25 postings): {r['load_s']:.1f} s"
        f" ({r['n'] / r['load_s']:,.0f} chunks/s); of it the lexical statistics and the HNSW"
        f" build at the end: {r['finish_s']:.1f} s"
        + (
            f" (the HNSW index is built by the first transaction, over {r['batch']:,} chunks;"
            " the later ones insert their rows into it as they copy them)"
            if r["applies"] > 1
            else ""
        ),
    ]
    if "reindex_s" in r:
        lines.append(f"- HNSW build alone (REINDEX): {r['reindex_s']:.1f} s")
    lines += [
        f"- peak memory of the bench process (chunks, vectors, the change set): "
        f"{r['peak_rss_mb']:,.0f} MB",
        "",
        f"| search (k = 10, {r['queries']} queries, after {50} warm-up queries) | p50 ms |"
        " p95 ms | recall@10 vs exact | results < k |",
        "|---|---|---|---|---|",
    ]
    for name, d in r["dense"].items():
        lines.append(f"| dense {name}, HNSW | {d['p50']:.1f} | {d['p95']:.1f} |"
                     f" {d['recall']:.3f} | {d['short']} |")  # fmt: skip
    for name, d in r["exact"].items():
        lines.append(f"| dense {name}, exact scan (30 queries) | {d['p50']:.1f} |"
                     f" {d['p95']:.1f} | {d['agrees']:.3f} | |")  # fmt: skip
    lines.append(f"| BM25 filtered (2-3 words, 200 queries) | {r['bm25']['p50']:.1f} |"
                 f" {r['bm25']['p95']:.1f} | | |")  # fmt: skip
    lines += [
        "",
        "Recall is measured against the exact cosine ranking (numpy, over the rows the store's"
        " filter SQL lets through); the exact-scan rows' recall column is how far the store's"
        " own exact scan agrees with it.",
    ]
    if "mixed" in r:
        c = r["mixed"]
        lines += [
            "",
            f"Mixed run ({c['seconds']:.0f} s; 8 reader threads, each its own connection,"
            " alternating filtered dense and BM25; 1 writer rewriting a 10-chunk document with"
            f" vectors in a loop; load averages after it {r['load_avg']['after_mixed']}):",
            "",
            "| reads | reads/s | read p50 ms | read p95 ms | dense p95 ms | BM25 p95 ms |"
            " writes | write p50 ms | write p95 ms | errors |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {c['reads']} | {c['reads'] / c['seconds']:.1f} | {c['read_p50']:.1f} |"
            f" {c['read_p95']:.1f} | {c['dense_p95']:.1f} | {c['bm25_p95']:.1f} |"
            f" {c['writes']} | {c['write_p50']:.1f} | {c['write_p95']:.1f} |"
            f" {c['errors']} {c['first_error']} |",
        ]
    if r["sweep"]:
        lines += [
            "",
            "Sweep (the same rows and queries; m and ef_construction other than the store's"
            " are rebuilds of the index):",
            "",
            "| m | ef_construction | type | HNSW MB | build s | ef_search | unfiltered p50 / p95 ms"
            " | unfiltered recall@10 | filtered p50 / p95 ms | filtered recall@10 | load avg |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for w in r["sweep"]:
            u, f = w["dense"]["unfiltered (staff)"], w["dense"]["filtered (public, as of)"]
            build = f"{w['build_s']:.1f}" if w["build_s"] is not None else "(above)"
            size = f"{w['hnsw_bytes'] / 2**20:,.0f}" if "hnsw_bytes" in w else ""
            lines.append(
                f"| {w['m']} | {w['ef_construction']} | {w.get('kind', 'vector')} | {size} |"
                f" {build} | {w['ef_search']} |"
                f" {u['p50']:.1f} / {u['p95']:.1f} | {u['recall']:.3f} |"
                f" {f['p50']:.1f} / {f['p95']:.1f} | {f['recall']:.3f} | {w['load_avg']} |"
            )
    return "\n".join(lines)


def summary(out: Path) -> None:
    """The growth table across the runs recorded in pg_scale_runs.jsonl (e5 vectors)."""
    runs = [json.loads(x) for x in RUNS.read_text(encoding="utf-8").splitlines() if x.strip()]
    lines = [
        "| N | vectors | load s | chunks/s | stats + HNSW build s | DB MB | HNSW MB |"
        " unfiltered p50 / p95 ms | recall | filtered p50 / p95 ms | recall | BM25 p50 / p95 ms"
        " | exact filtered p50 ms | mixed reads/s, read p95 ms, writes, errors | load avg"
        " start / end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(runs, key=lambda r: (r["vectors"], r["n"])):
        u, f = r["dense"]["unfiltered (staff)"], r["dense"]["filtered (public, as of)"]
        c = r.get("mixed")
        mixed = (
            f"{c['reads'] / c['seconds']:.1f}, {c['read_p95']:.0f}, {c['writes']}, {c['errors']}"
            f" ({c['seconds']:.0f} s)"
            if c
            else ""
        )
        lines.append(
            f"| {r['n']:,} | {r['vectors']} | {r['load_s']:.0f} | {r['n'] / r['load_s']:,.0f} |"
            f" {r['finish_s']:.0f} | {r['db_bytes'] / 1e6:,.0f} | {r['hnsw_bytes'] / 1e6:,.0f} |"
            f" {u['p50']:.1f} / {u['p95']:.1f} | {u['recall']:.3f} |"
            f" {f['p50']:.1f} / {f['p95']:.1f} | {f['recall']:.3f} |"
            f" {r['bm25']['p50']:.0f} / {r['bm25']['p95']:.0f} |"
            f" {r['exact']['filtered (public, as of)']['p50']:.0f} | {mixed} |"
            f" {r['load_avg']['start']} / {r['load_avg']['end']} |"
        )
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    begin, end = "<!-- growth table: bench/scale/pg_scale.py --summary -->", "<!-- end of table -->"
    table = "\n".join([begin, *lines, end])
    if begin in text and end in text:
        text = text[: text.index(begin)] + table + text[text.index(end) + len(end) :]
    else:
        text = f"# PostgreSQL store at scale: the growth (bench/scale/pg_scale.py)\n\n{table}\n"
    out.write_text(text, encoding="utf-8")
    print(table)


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


def concurrency(url, change, queries, words, seconds) -> dict:
    stop = threading.Event()
    reads: dict[str, list[float]] = {"dense": [], "bm25": []}
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
                    reads["dense" if i % 2 else "bm25"].append(time.perf_counter() - began)
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
    every = reads["dense"] + reads["bm25"]
    return {
        "reads": len(every), "read_p50": pct(every, 50), "read_p95": pct(every, 95),
        "dense_p95": pct(reads["dense"], 95), "bm25_p95": pct(reads["bm25"], 95),
        "writes": len(writes), "write_p50": pct(writes, 50), "write_p95": pct(writes, 95),
        "errors": len(errors), "first_error": errors[0][:200] if errors else "",
    }  # fmt: skip


if __name__ == "__main__":
    main()
