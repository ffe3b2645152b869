"""Start-up time of the `tether` command as a process (run on demand:
`python bench/bench_startup.py [--compare OTHER_SRC]`).

Measures the median wall time of 10 runs (after one warm-up run) of `tether --help`,
`tether version` and a one-shot `tether search QUERY --method bm25 --index X`, each a fresh
`python -m tether` process, on a small index it builds once from the bundled demo collection
with bm25 only (no embeddings). Records the load average before and after, and writes
bench/results/startup.md. `--compare DIR` also measures another source tree (a `src` folder,
e.g. an older checkout's) on the same index, for before/after figures.

What it cannot do: it measures this machine at this moment (other work on the machine shows in
the load average and in the figures); it does not break the time down (use
`python -X importtime -m tether ...` for that).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

# ingest times measured here are of embedding, never of vectors kept by an earlier run
os.environ.setdefault("TETHER_VECTOR_CACHE", "off")

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
RUNS = 10
LIMITS = {"--help": 0.3, "version": 0.3, "search (bm25)": 0.6}


def tether(*args: str) -> list[str]:
    return [sys.executable, "-m", "tether", *args]


def run_env(src: Path) -> dict[str, str]:
    """This environment with `src` first on the import path (and no TETHER_INDEX)."""
    env = {k: v for k, v in os.environ.items() if k != "TETHER_INDEX"}
    return {**env, "PYTHONPATH": str(src)}


def median_seconds(src: Path, args: list[str], runs: int = RUNS) -> float:
    """The median wall time of `runs` fresh processes running `tether ARGS` (one warm-up)."""
    env = run_env(src)
    times = []
    for i in range(runs + 1):
        began = time.perf_counter()
        subprocess.run(tether(*args), env=env, check=True, capture_output=True)
        if i:  # the first run warms the file cache and writes bytecode
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def build_index(folder: Path, src: Path = SRC) -> Path:
    """A bm25-only index of the demo collection, built once with the CLI of `src` (each tree
    reads an index of its own schema)."""
    index = folder / "index.sqlite"
    collection = SRC / "tether" / "demo" / "collection"
    subprocess.run(
        tether("ingest", str(collection), "--index", str(index), "--no-embed"),
        env=run_env(src),
        check=True,
        capture_output=True,
    )
    return index


def measure(src: Path, index: Path) -> dict[str, float]:
    commands = {
        "--help": ["--help"],
        "version": ["version"],
        "search (bm25)": ["search", "delivery fee", "--method", "bm25", "--index", str(index)],
    }
    return {name: median_seconds(src, args) for name, args in commands.items()}


def report(results: dict[str, dict[str, float]], load: tuple[float, float]) -> str:
    trees = list(results)
    lines = [
        "# Start-up of the `tether` command",
        "",
        f"Run on {date.today().isoformat()}, {platform.system().lower()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}; median of {RUNS} runs (after one warm-up) of"
        " `python -m tether ...` as a fresh process; the search runs on the demo collection"
        " indexed with bm25 only.",
        f"Load average (1 min) before: {load[0]:.2f}, after: {load[1]:.2f}.",
        "",
        "| command | " + " | ".join(f"{t} (s)" for t in trees) + " | limit (s) |",
        "|---|" + "---|" * len(trees) + "---|",
    ]
    for name, limit in LIMITS.items():
        cells = " | ".join(f"{results[t][name]:.3f}" for t in trees)
        lines.append(f"| {name} | {cells} | {limit} |")
    lines += [
        "",
        "`--help` and `version` import no engine module and no numpy (`version`, like every"
        " command, imports pydantic through typer's option parsing); each command imports"
        " what it needs when it runs. What remains of a bm25 search is mostly the store's"
        " module (numpy and the ingest parsers at its top) and typer's pydantic-based option"
        " parsing.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", type=Path, help="another source tree (a src folder)")
    parser.add_argument("--compare-label", default="before", help="its column's name")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "startup.md")
    options = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        if options.compare is not None:
            other = options.compare.resolve()
            (Path(tmp) / "other").mkdir()
            results[options.compare_label] = measure(other, build_index(Path(tmp) / "other", other))
        results["this tree"] = measure(SRC, build_index(Path(tmp)))
    text = report(results, (load_before, os.getloadavg()[0]))
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
