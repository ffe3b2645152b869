"""A bounded load test of `tether serve` over loopback (run on demand:
`python bench/serve/serve_load.py [--seconds 60] [--clients 32] [--ask-clients 4] [--index FILE]
[--workers N] [--phases bm25,rerank,alone,ask] [--warmup 5] [--src DIR] [--json FILE]`;
writes bench/results/serve_load.md unless `--out -`, and its JSON record beside it: the run's
date, commit, machine, load and figures; `serve_load.run.json` where `serve_load.json` is a
file kept by hand).

Starts `tether serve` as its own process (the extractive answerer, no rate limit, the
demo collection's index with vectors, built in a temporary folder unless `--index` is
given; `--workers N` processes; the tether of `--src`, this checkout's `src` by default, so
one load generator can measure two versions), waits until it answers /readyz, then runs
the phases named in `--phases`, one after the other, each for `--seconds` after `--warmup`
seconds of the same load that are not counted:
- `bm25`, `rerank`: `--clients` concurrent clients on POST /v1/search with that method,
  cycling through the bundled questions (181: once a server has embedded them all, a rerank
  search finds its query vector in a cache);
- `alone`: one client on rerank (the service time without queueing);
- `ask`: `--ask-clients` on POST /v1/ask;
- `distinct`, `distinct-alone`: `--clients` clients, or one, on rerank with queries no server
  has seen (a bundled question and a number never sent before: every query is embedded).
Each client sends its next request when the last one answered (closed loop). Records per
phase: requests, throughput, p50/p95/p99 latency, errors (any status but 200, or a transport
error) by kind, and the load average before and after; `--json` appends the run as one line.

What it cannot do: client and server share the machine (the clients' own CPU time shows in
the latencies); it measures one machine at one moment, other jobs included; a number added
to a question is one more word for BM25 (it matches no passage of the demo).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import (
    free_port,
    load_average,
    make_record,
    percentile,
    provenance,
    render_page,
    sidecar_path,
    start_server,
    wait_ready,
    write_record,
)  # fmt: skip

HERE = Path(__file__).resolve().parents[1]
SRC = HERE.parent / "src"
QUESTIONS = SRC / "tether" / "demo" / "questions.jsonl"
GOAL_P95_MS = 500.0  # issue 30: at 32 clients, rerank p95 at most this, 3x the throughput
PHASES = ("bm25", "rerank", "alone", "ask", "distinct", "distinct-alone")
DEFAULT_PHASES = ("bm25", "rerank", "alone", "ask")


Bodies = list[dict] | Any  # a list cycled through, or a function of the request's number


async def phase(
    base: str, path: str, bodies: Bodies, clients: int, seconds: float, warmup: float = 0.0
) -> dict:
    """`clients` closed-loop clients POSTing `bodies` to `path` for `warmup` seconds (not
    counted), then `seconds` (counted); `bodies`: a list (client n sends n, n + clients, ...,
    cycling) or a function of a request's number. The summary (`summary`)."""
    ms, errors = await latencies_of(base, path, bodies, clients, seconds, warmup)
    return summary(ms, errors, seconds)


async def latencies_of(
    base: str, path: str, bodies: Bodies, clients: int, seconds: float, warmup: float = 0.0
) -> tuple[list[float], Counter[str]]:
    """What `phase` measures: the latencies (ms) of the requests begun in the counted
    seconds, and the errors by kind. Each client holds one kept-alive connection
    (`Connection`)."""
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    count_from = time.monotonic() + warmup  # set again after the first request
    stop = count_from + seconds
    body_of = bodies if callable(bodies) else (lambda i: bodies[i % len(bodies)])

    async def client_loop(n: int) -> None:
        i = n
        connection = Connection(base)
        try:
            while time.monotonic() < stop:
                body = body_of(i)
                i += clients
                counted = time.monotonic() >= count_from
                began = time.perf_counter()
                try:
                    status, _ = await connection.post(path, body)
                except (OSError, asyncio.IncompleteReadError, ValueError, TimeoutError) as exc:
                    if counted:
                        errors[type(exc).__name__] += 1
                    await connection.close()
                    continue
                if status != 200:
                    if counted:
                        errors[f"HTTP {status}"] += 1
                    continue
                if counted:  # began in the counted time (it may end just after)
                    latencies.append(time.perf_counter() - began)
        finally:
            await connection.close()

    # one warm-up request per phase (loads the embedder and reranker once)
    first = Connection(base, timeout=600)
    try:
        await first.post(path, body_of(-1))
    finally:
        await first.close()
    count_from = time.monotonic() + warmup
    stop = count_from + seconds
    await asyncio.gather(*(client_loop(n) for n in range(clients)))
    return [x * 1000 for x in latencies], errors


class Connection:
    """One kept-alive HTTP/1.1 connection to `base` (http://HOST:PORT) that POSTs JSON and
    reads the answer by its Content-Length; it reconnects after an error or a close.

    Hand-written rather than httpx because the load generator shares the 2 cores with the
    server it measures: httpx's AsyncClient spent 1.7 ms of CPU a request at one server
    process and 4.8 ms at two (its pool's work grows with the answers arriving together),
    which made the generator the limit at two workers; this spends 0.14-0.22 ms (measured
    2026-12-02, bench/results/serve_load.md). It speaks only what `tether serve` answers:
    no chunked bodies (a ValueError), no TLS, no redirects."""

    def __init__(self, base: str, timeout: float = 120.0) -> None:
        host, _, port = base.removeprefix("http://").rstrip("/").partition(":")
        self.host, self.port, self.timeout = host, int(port or 80), timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: Any) -> tuple[int, bytes]:
        """(status, body) of POST `path` with `body` as JSON (TimeoutError past `timeout`)."""
        async with asyncio.timeout(self.timeout):
            return await self._post(path, body)

    async def _post(self, path: str, body: Any) -> tuple[int, bytes]:
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        )
        if "content-length" not in headers:
            raise ValueError("an answer without Content-Length (chunked?)")
        data = await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, data

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


def summary(latencies_ms: list[float], errors: Counter[str] | dict, seconds: float) -> dict:
    """Requests, errors by kind, seconds, throughput, p50/p95/p99 (ms) of a phase."""
    ms = sorted(latencies_ms)

    def pct(p: float) -> float:
        return percentile(ms, p)

    return {
        "requests": len(ms), "errors": dict(errors), "seconds": seconds,
        "throughput": len(ms) / seconds, "p50": statistics.median(ms) if ms else float("nan"),
        "p95": pct(95), "p99": pct(99),
    }  # fmt: skip


def render(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.make_record`)."""
    f = record["figures"]
    args = argparse.Namespace(**f["options"])
    return report([tuple(r) for r in f["rows"]], args, f["loads"], record)


def report(
    rows: list[tuple[str, int, dict]], args: argparse.Namespace, loads: list,
    record: dict[str, Any],
) -> str:  # fmt: skip
    processes = "one uvicorn process" if args.workers <= 1 else f"{args.workers} processes"
    lines = [
        "# `tether serve` under load (loopback)",
        "",
        f"`python bench/serve/serve_load.py --seconds {args.seconds:g} --clients {args.clients}"
        f" --ask-clients {args.ask_clients} --workers {args.workers} --phases"
        f" {','.join(args.phases)} --warmup {args.warmup:g}`,"
        f" {record['date']}. {processes.capitalize()} (4 reader"
        " threads, one model lane each), the demo collection with vectors, the extractive"
        " answerer, closed-loop clients in one asyncio process on the same machine.",
        "",
        "| phase | clients | requests | req/s | p50 ms | p95 ms | p99 ms | errors | load before → after |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, clients, r in rows:
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        lines.append(
            f"| {name} | {clients} | {r['requests']} | {r['throughput']:.1f} | {r['p50']:.0f}"
            f" | {r['p95']:.0f} | {r['p99']:.0f} | {errors} | {r['load'][0]:.1f} →"
            f" {r['load'][1]:.1f} |"
        )
    rerank = next(
        (r for name, clients, r in rows if "rerank" in name and clients == args.clients), None
    )
    if rerank is not None:
        verdict = "met" if rerank["p95"] <= GOAL_P95_MS else "not met"
        lines += [
            "",
            f"Goal: 0 errors; /v1/search rerank p95 ≤ {GOAL_P95_MS:.0f} ms at {args.clients}"
            f" clients: **{verdict}** (p95 {rerank['p95']:.0f} ms).",
        ]
    lines += [
        "",
        f"Machine: {args.arch}, {record['machine']['cpus']} CPU cores, Python"
        f" {record['machine']['python']}; load average before {loads[0]}, after {loads[1]}."
        " Other jobs (other engineers' builds and tests) were running on the same cores, and"
        " the load generator itself shares them with the server.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--ask-clients", type=int, default=4)
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=1, help="tether serve --workers N")
    parser.add_argument(
        "--phases", type=lambda text: tuple(p.strip() for p in text.split(",") if p.strip()),
        default=DEFAULT_PHASES, help=f"comma-separated, of {', '.join(PHASES)}",
    )  # fmt: skip
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds not counted")
    parser.add_argument("--src", type=Path, default=SRC, help="the tether source to serve")
    parser.add_argument("--json", type=Path, default=None, help="append the run as a line")
    parser.add_argument("--out", default=str(HERE / "results" / "serve_load.md"),
                        help="the report (- for none)")  # fmt: skip
    args = parser.parse_args()
    unknown = [p for p in args.phases if p not in PHASES]
    if unknown:
        parser.error(f"unknown phases {unknown}: choose from {', '.join(PHASES)}")
    load_before = load_average()
    questions = [json.loads(line)["question"] for line in QUESTIONS.read_text().splitlines()]
    fresh = itertools.count(1)  # the distinct phases' numbers: never the same query twice

    def distinct(i: int) -> dict:
        q = questions[i % len(questions)]
        return {"query": f"{q} {next(fresh)}", "as_of": "none", "method": "rerank"}

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    extra: tuple[str, ...] = ("--queue", "16")
    if args.workers > 1:
        extra += ("--workers", str(args.workers))
    with tempfile.TemporaryDirectory() as folder:
        index = args.index.resolve() if args.index else None
        server = start_server(index, port, Path(folder), extra, src=args.src.resolve())
        try:
            asyncio.run(wait_ready(base, path="/readyz"))
            loads = [", ".join(f"{x:.2f}" for x in os.getloadavg())]
            rows = []
            for key, name, path, field, clients, method in (
                ("bm25", "/v1/search bm25", "/v1/search", "query", args.clients, "bm25"),
                ("rerank", "/v1/search rerank", "/v1/search", "query", args.clients, "rerank"),
                ("alone", "/v1/search rerank, alone", "/v1/search", "query", 1, "rerank"),
                ("ask", "/v1/ask (extractive)", "/v1/ask", "question", args.ask_clients, ""),
                ("distinct", "/v1/search rerank, distinct queries", "/v1/search", "query",
                 args.clients, "rerank"),
                ("distinct-alone", "/v1/search rerank, distinct queries, alone", "/v1/search",
                 "query", 1, "rerank"),
            ):  # fmt: skip
                if key not in args.phases:
                    continue
                extra_body = {"method": method} if method else {}
                bodies: Bodies = (
                    distinct
                    if key.startswith("distinct")
                    else [{field: q, "as_of": "none", **extra_body} for q in questions]
                )
                before = os.getloadavg()[0]
                result = asyncio.run(phase(base, path, bodies, clients, args.seconds, args.warmup))
                result["load"] = (before, os.getloadavg()[0])
                print(name, json.dumps(result), flush=True)
                rows.append((name, clients, result))
            loads.append(", ".join(f"{x:.2f}" for x in os.getloadavg()))
        finally:
            server.terminate()
            server.wait(30)
    if args.json is not None:
        run = {"at": f"{datetime.now(UTC):%Y-%m-%d %H:%M}", "src": str(args.src),
               "workers": args.workers, "clients": args.clients, "seconds": args.seconds,
               "warmup": args.warmup, "loads": loads,
               "phases": {name: r for name, _, r in rows},
               **provenance(load_before)}  # fmt: skip
        with args.json.open("a", encoding="utf-8") as out:
            out.write(json.dumps(run) + "\n")
    if args.out != "-":
        options = {k: getattr(args, k) for k in ("seconds", "clients", "ask_clients", "workers",
                                                 "phases", "warmup")}  # fmt: skip
        figures = {"options": {**options, "arch": platform.machine()}, "rows": rows, "loads": loads}
        record = make_record("serve_load", figures, load_before)
        write_record(sidecar_path(Path(args.out)), record)
        Path(args.out).write_text(render_page(record, render), encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
