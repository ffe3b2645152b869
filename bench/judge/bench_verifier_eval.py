"""The citation checker measured on the bundled labelled claims, per judge (run on demand:
`python bench/judge/bench_verifier_eval.py [--llm]`).

Ingests the bundled demo collection with the default embedder (the verifier uses the chunk
vectors for `lower_precedence`, the embedding judge the embedder), then runs
`evaluate.run_verifier_eval` (what `tether eval --verifier` runs) with no judge, with the
embedding judge (the default) and, with `--llm`, with the LLM judge on the local model (about
5 s a claim on 2 cores: some 15 minutes). Writes bench/results/verifier-eval.md (and its JSON: the run's date, commit, machine, load): false passes
and false alarms overall, per check and per kind of item, the median time per claim, and the
items each judge gets wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.app import shared_models
from tether.embeddings.embedders import describe
from tether.evaluation.questions import demo_collection
from tether.evaluation.verifier_eval import VerifierResult, load_claims, run_verifier_eval
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.verify.judges import EmbeddingJudge, LLMJudge

ROOT = Path(__file__).resolve().parents[2]


def _wrong(result: VerifierResult) -> str:
    rows = [r for r in result.rows if r.passed == (r.label == "unsupported")]
    return ", ".join(f"{r.item_id} ({r.label}: {', '.join(r.flags) or 'no flag'})" for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", action="store_true", help="also the LLM judge (local model)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "verifier-eval.md")
    args = parser.parse_args()
    load_before = load_average()
    embedder = shared_models().embedder()
    items = load_claims()
    judges: list[tuple[str, object]] = [
        ("none (exact checks, clues, sources)", None),
        ("embedding (default)", EmbeddingJudge(embedder)),
    ]
    if args.llm:
        from tether.config import load_settings
        from tether.providers.factory import make_provider

        judges.append(("llm (local model)", LLMJudge(make_provider(load_settings(), name="local"))))
    load = os.getloadavg()[0]
    results: list[tuple[str, VerifierResult, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "demo.sqlite")
        sync(store, demo_collection(), embedder=embedder, sentences=True)
        for label, judge in judges:
            print(f"checking {len(items)} claims, judge {label} …", file=sys.stderr)
            began = time.perf_counter()
            result = run_verifier_eval(store, items, judge=judge, embedder=embedder)
            results.append((label, result, time.perf_counter() - began))
        store.close()

    counts = {m: sum(i["made"] == m for i in items) for m in sorted({i["made"] for i in items})}
    lines = [
        "# The citation checker on the labelled claims",
        "",
        f"Run on {date.today().isoformat()}, 2 cores, load average {load:.1f} at the start;"
        f" embedder {describe(embedder)}. {len(items)} claims"
        f" ({', '.join(f'{n} {m}' for m, n in counts.items())});"
        " a claim passes when it carries no flag at all.",
        "",
        "| judge | false passes (unsupported marked ok) | false alarms (supported flagged) |"
        " median ms per claim | whole run (s) |",
        "|---|---|---|---|---|",
    ]
    for label, r, seconds in results:
        lines.append(
            f"| {label} | {r.false_passes}/{r.unsupported} ({r.false_pass_rate:.1%}) |"
            f" {r.false_alarms}/{r.supported} ({r.false_alarm_rate:.1%}) | {r.median_ms:.1f} |"
            f" {seconds:.0f} |"
        )
    lines += ["", "Goals: false passes ≤ 5%, false alarms ≤ 10% with the default judge.", ""]
    for label, r, _ in results:
        lines += [
            f"## {label}",
            "",
            "| check | fired on supported claims | fired on unsupported claims |",
            "|---|---|---|",
            *(
                f"| {kind} | {c['fired_on_supported']} | {c['fired_on_unsupported']} |"
                for kind, c in sorted(r.per_check.items())
            ),
            "",
            "| item kind | n | verdict wrong |",
            "|---|---|---|",
            *(f"| {k} | {c['n']} | {c['wrong']} |" for k, c in sorted(r.per_kind.items())),
            "",
            f"Wrong: {_wrong(r) or 'none'}.",
            "",
        ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_page_result(args.out, lines, load_before=load_before)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
