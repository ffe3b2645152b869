"""A bounded load test of `tether serve` over loopback (run on demand:
`python bench/serve_load.py [--seconds 60] [--clients 32] [--ask-clients 4] [--index FILE]`;
writes bench/results/serve_load.md).

Starts `tether serve` as its own process (the extractive answerer, no rate limit, the
demo collection's index with vectors, built in a temporary folder unless `--index` is
given), waits for /healthz, then runs the phases one after the other, each for `--seconds`:
`--clients` concurrent clients on POST /v1/search with bm25, the same with rerank, and
`--ask-clients` on POST /v1/ask; then one client alone on rerank (the service time without
queueing). Each client sends its next request when the last one
answered (closed loop), cycling through the bundled questions. Records per phase: requests,
throughput, p50/p95/p99 latency, errors (any status but 200, or a transport error) by kind,
and the load average before and after.

What it cannot do: client and server share the machine (the clients' own CPU time shows in
the latencies); it measures one machine at one moment, other jobs included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
QUESTIONS = SRC / "tether" / "demo" / "questions.jsonl"
GOAL_P95_MS = 150.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    index: Path | None, port: int, folder: Path, extra: tuple[str, ...] = ("--queue", "16"),
    stderr: Any = None,
) -> subprocess.Popen[bytes]:  # fmt: skip
    """`tether serve` on 127.0.0.1:`port` (the extractive answerer, no rate limit), over
    `index` or the demo index built in `folder`; `extra` flags; its stderr to `stderr`."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "TETHER_PROVIDER": "extractive"}
    where = ["--index", str(index)] if index else ["--demo"]
    command = [sys.executable, "-m", "tether", "--quiet", "serve", *where, "--port", str(port),
               "--rate", "0", *extra]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, env=env, stderr=stderr)


async def wait_ready(base: str, seconds: float = 600) -> None:
    async with httpx.AsyncClient() as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if (await client.get(base + "/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.5)
    raise SystemExit("the server did not start")


async def phase(base: str, path: str, bodies: list[dict], clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client_loop(n: int, client: httpx.AsyncClient) -> None:
        i = n
        while time.monotonic() < stop:
            body = bodies[i % len(bodies)]
            i += clients
            began = time.perf_counter()
            try:
                r = await client.post(base + path, json=body)
                if r.status_code != 200:
                    errors[f"HTTP {r.status_code}"] += 1
                    continue
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1
                continue
            latencies.append(time.perf_counter() - began)

    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        # one warm-up request per phase (loads the embedder and reranker once)
        await client.post(base + path, json=bodies[0])
        began = time.monotonic()
        await asyncio.gather(*(client_loop(n, client) for n in range(clients)))
        elapsed = time.monotonic() - began
    ms = sorted(x * 1000 for x in latencies)

    def pct(p: float) -> float:
        return ms[min(len(ms) - 1, int(p / 100 * len(ms)))] if ms else float("nan")

    return {
        "requests": len(ms), "errors": dict(errors), "seconds": elapsed,
        "throughput": len(ms) / elapsed, "p50": statistics.median(ms) if ms else float("nan"),
        "p95": pct(95), "p99": pct(99),
    }  # fmt: skip


def report(rows: list[tuple[str, int, dict]], args: argparse.Namespace, loads: list) -> str:
    lines = [
        "# `tether serve` under load (loopback)",
        "",
        f"`python bench/serve_load.py --seconds {args.seconds:g} --clients {args.clients}"
        f" --ask-clients {args.ask_clients}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. One"
        " uvicorn process (4 reader threads, one model lane), the demo collection with"
        " vectors, the extractive answerer, closed-loop clients in one asyncio process on the"
        " same machine.",
        "",
        "| phase | clients | requests | req/s | p50 ms | p95 ms | p99 ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, clients, r in rows:
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        lines.append(
            f"| {name} | {clients} | {r['requests']} | {r['throughput']:.1f} | {r['p50']:.0f}"
            f" | {r['p95']:.0f} | {r['p99']:.0f} | {errors} |"
        )
    rerank = next(r for name, clients, r in rows if "rerank" in name and clients == args.clients)
    verdict = "met" if rerank["p95"] <= GOAL_P95_MS else "not met"
    lines += [
        "",
        f"Goal: 0 errors; /v1/search rerank p95 ≤ {GOAL_P95_MS:.0f} ms at {args.clients}"
        f" clients: **{verdict}** (p95 {rerank['p95']:.0f} ms).",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python"
        f" {platform.python_version()}; load average before {loads[0]}, after {loads[1]}."
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
    parser.add_argument("--out", type=Path, default=HERE / "results" / "serve_load.md")
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in QUESTIONS.read_text().splitlines()]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as folder:
        index = args.index.resolve() if args.index else None
        server = start_server(index, port, Path(folder))
        try:
            asyncio.run(wait_ready(base))
            loads = [", ".join(f"{x:.2f}" for x in os.getloadavg())]
            rows = []
            for name, path, key, clients, extra in (
                ("/v1/search bm25", "/v1/search", "query", args.clients, {"method": "bm25"}),
                ("/v1/search rerank", "/v1/search", "query", args.clients, {"method": "rerank"}),
                ("/v1/search rerank, alone", "/v1/search", "query", 1, {"method": "rerank"}),
                ("/v1/ask (extractive)", "/v1/ask", "question", args.ask_clients, {}),
            ):
                bodies = [{key: q, "as_of": "none", **extra} for q in questions]
                result = asyncio.run(phase(base, path, bodies, clients, args.seconds))
                print(name, json.dumps(result), flush=True)
                rows.append((name, clients, result))
            loads.append(", ".join(f"{x:.2f}" for x in os.getloadavg()))
        finally:
            server.terminate()
            server.wait(30)
    args.out.write_text(report(rows, args, loads), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
