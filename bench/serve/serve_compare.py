"""Two versions of `tether serve` under the same load, back to back (run on demand:
`python bench/serve/serve_compare.py --against DIR [--seconds 30] [--repeat 2] [--clients 32]
[--workers N] [--phases rerank,alone,distinct,distinct-alone] [--index FILE] [--json FILE]`).

Starts two servers at once over the same index (`bench/serve/serve_load.py`'s `start_server`):
the tether of `--against` (a `src` folder, such as an exported older commit: the baseline)
and this checkout's, each with `--workers N` processes, and waits until both answer /readyz.
Then, for each phase and each of `--repeat` rounds, it runs the phase's load on one server
and then on the other (baseline first in even rounds, this checkout first in odd ones), so
the two meet the same moment's machine: the idle one waits on its socket and takes no CPU.
Each run has `--warmup` seconds not counted. Per phase and version it pools the rounds'
latencies (p50/p95/p99) and requests (throughput: requests over counted seconds), and gives
the ratio this/baseline of throughput and of p95 per round and pooled. The phases are those
of `serve_load.py`. Prints a markdown table under a line naming the run (date, commit, machine, load); `--json`
appends the run as one line, with the same.

What it cannot do: each server keeps what its earlier phases left (its caches, as a server
would); the phases' order is the same for both. The load generator and both servers share
the machine with whatever else runs on it; the load average is recorded, not controlled.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import (
    QUESTIONS,
    SRC,
    free_port,
    load_average,
    provenance,
    run_line,
    start_server,
    wait_ready,
)  # fmt: skip
from bench.serve.serve_load import PHASES, latencies_of, summary

DEFAULT = ("rerank", "alone", "distinct", "distinct-alone")
NAMES = {
    "bm25": "/v1/search bm25",
    "rerank": "/v1/search rerank",
    "alone": "/v1/search rerank, alone",
    "ask": "/v1/ask (extractive)",
    "distinct": "/v1/search rerank, distinct queries",
    "distinct-alone": "/v1/search rerank, distinct queries, alone",
}


def phase_spec(key: str, args: argparse.Namespace, questions: list[str], fresh: Any) -> tuple:
    """(path, bodies, clients) of phase `key` (`fresh`: the distinct phases' numbers)."""
    if key.startswith("distinct"):

        def bodies(i: int) -> dict:
            q = questions[i % len(questions)]
            return {"query": f"{q} {next(fresh)}", "as_of": "none", "method": "rerank"}

        return "/v1/search", bodies, 1 if key.endswith("alone") else args.clients
    if key == "ask":
        listed = [{"question": q, "as_of": "none"} for q in questions]
        return "/v1/ask", listed, args.ask_clients
    method = "bm25" if key == "bm25" else "rerank"
    listed = [{"query": q, "as_of": "none", "method": method} for q in questions]
    return "/v1/search", listed, 1 if key == "alone" else args.clients


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the baseline's src")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--ask-clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--phases", type=lambda text: tuple(p.strip() for p in text.split(",") if p.strip()),
        default=DEFAULT,
    )  # fmt: skip
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    load_before = load_average()
    unknown = [p for p in args.phases if p not in PHASES]
    if unknown:
        parser.error(f"unknown phases {unknown}: choose from {', '.join(PHASES)}")
    questions = [json.loads(line)["question"] for line in QUESTIONS.read_text().splitlines()]
    fresh = itertools.count(1)
    extra: tuple[str, ...] = ("--queue", "16")
    if args.workers > 1:
        extra += ("--workers", str(args.workers))
    versions = {"baseline": args.against.resolve(), "this": SRC}
    pooled: dict[str, dict[str, list[float]]] = {}
    errors: dict[str, dict[str, Counter[str]]] = {}
    rounds: dict[str, list[dict[str, Any]]] = {}
    loads = [load_average()]
    with tempfile.TemporaryDirectory() as folder:
        index = args.index.resolve() if args.index else None
        servers, bases = [], {}
        try:
            for name, src in versions.items():
                port = free_port()
                bases[name] = f"http://127.0.0.1:{port}"
                work = Path(folder) / name
                work.mkdir()
                servers.append(start_server(index, port, work, extra, src=src))
            for base in bases.values():
                asyncio.run(wait_ready(base, path="/readyz"))
            for key in args.phases:
                path, bodies, clients = phase_spec(key, args, questions, fresh)
                pooled[key] = {name: [] for name in versions}
                errors[key] = {name: Counter() for name in versions}
                rounds[key] = []
                for r in range(args.repeat):
                    order = list(versions) if r % 2 == 0 else list(reversed(versions))
                    this_round: dict[str, Any] = {}
                    for name in order:
                        before = load_average()
                        ms, errs = asyncio.run(
                            latencies_of(bases[name], path, bodies, clients, args.seconds,
                                         args.warmup)
                        )  # fmt: skip
                        pooled[key][name] += ms
                        errors[key][name] += errs
                        s = summary(ms, errs, args.seconds)
                        s["load"] = (before, load_average())
                        this_round[name] = s
                        print(key, r, name, json.dumps(s), flush=True)
                    rounds[key].append(this_round)
            loads.append(load_average())
        finally:
            for server in servers:
                server.terminate()
            for server in servers:
                server.wait(30)
    results = {
        key: {
            name: summary(pooled[key][name], errors[key][name], args.seconds * args.repeat)
            for name in versions
        }
        for key in args.phases
    }
    run_of = provenance(load_before)
    print(run_line(run_of) + "\n\n" + table(results, rounds, args))
    if args.json is not None:
        run = {"at": f"{datetime.now(UTC):%Y-%m-%d %H:%M}", "against": str(args.against),
               "workers": args.workers, "clients": args.clients, "seconds": args.seconds,
               "repeat": args.repeat, "warmup": args.warmup, "loads": loads,
               "pooled": results, "rounds": rounds, **run_of}  # fmt: skip
        with args.json.open("a", encoding="utf-8") as out:
            out.write(json.dumps(run) + "\n")


def table(results: dict, rounds: dict, args: argparse.Namespace) -> str:
    """The markdown table: per phase, the baseline's and this checkout's pooled figures and
    the ratios (throughput this/baseline; p95 baseline/this, so above 1 is better for both)."""
    lines = [
        f"workers {args.workers}, {args.clients} clients, {args.repeat} rounds of"
        f" {args.seconds:g} s per version and phase (+{args.warmup:g} s not counted)",
        "",
        "| phase | clients | version | requests | req/s | p50 ms | p95 ms | p99 ms | errors"
        " | req/s ratio | p95 ratio | load |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for key, by in results.items():
        clients = 1 if key.endswith("alone") else args.clients
        base, this = by["baseline"], by["this"]
        per_round = [
            f"{r['this']['throughput'] / max(r['baseline']['throughput'], 1e-9):.2f}"
            for r in rounds[key]
        ]
        p95s = [f"{r['baseline']['p95'] / max(r['this']['p95'], 1e-9):.2f}" for r in rounds[key]]
        span = [x for r in rounds[key] for s in r.values() for x in s["load"]]
        for name, r in (("baseline", base), ("this", this)):
            errs = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
            ratio = p95 = load_cell = ""
            if name == "this":
                ratio = (
                    f"{r['throughput'] / max(base['throughput'], 1e-9):.2f}"
                    f" ({', '.join(per_round)})"
                )
                p95 = f"{base['p95'] / max(r['p95'], 1e-9):.2f} ({', '.join(p95s)})"
                load_cell = f"{min(span):.1f}-{max(span):.1f}"
            lines.append(
                f"| {NAMES[key]} | {clients} | {name} | {r['requests']} |"
                f" {r['throughput']:.1f} | {r['p50']:.0f} | {r['p95']:.0f} | {r['p99']:.0f} |"
                f" {errs} | {ratio} | {p95} | {load_cell} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
