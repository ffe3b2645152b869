"""Start-up time of the `tether` command as a process (run on demand:
`python bench/run.py startup [-- --compare OTHER_SRC]`).

Measures the median wall time of 10 runs (after one warm-up run) of `tether --help`,
`tether version` and a one-shot `tether search QUERY --method bm25 --index X`, each a fresh
`python -m tether` process, on a small index it builds once from the bundled demo collection
with bm25 only (no embeddings). Writes bench/results/startup.json (the figures, with the
run's date, commit, machine and load before and after) and startup.md rendered from it. `--compare DIR` also measures another source tree (a `src` folder,
e.g. an older checkout's) on the same index, for before/after figures.

What it cannot do: it measures this machine at this moment (other work on the machine shows in
the load average and in the figures); it does not break the time down (use
`python -X importtime -m tether ...` for that).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import RESULTS, SRC, load_average, write_result

# ingest times measured here are of embedding, never of vectors kept by an earlier run
os.environ.setdefault("TETHER_VECTOR_CACHE", "off")

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


def report(record: dict[str, Any]) -> str:
    """The Markdown of a run, from its JSON record (`harness.write_result`)."""
    results: dict[str, dict[str, float]] = record["figures"]["seconds"]
    trees = list(results)
    lines = [
        "# Start-up of the `tether` command",
        "",
        f"Median of {record['figures']['runs']} runs (after one warm-up) of"
        " `python -m tether ...` as a fresh process; the search runs on the demo collection"
        " indexed with bm25 only.",
        "",
        "| command | " + " | ".join(f"{t} (s)" for t in trees) + " | limit (s) |",
        "|---|" + "---|" * len(trees) + "---|",
    ]
    for name, limit in record["figures"]["limits"].items():
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
    parser.add_argument("--out", type=Path, default=RESULTS, help="the results folder")
    options = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        if options.compare is not None:
            other = options.compare.resolve()
            (Path(tmp) / "other").mkdir()
            results[options.compare_label] = measure(other, build_index(Path(tmp) / "other", other))
        results["this tree"] = measure(SRC, build_index(Path(tmp)))
    figures = {"seconds": results, "runs": RUNS, "limits": LIMITS}
    out = write_result("startup", figures, report, load_before=load_before, folder=options.out)
    print(out.with_suffix(".md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
