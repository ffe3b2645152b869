"""The citation checker measured where it was not tuned (run on demand:
`python bench/judge/verifier_heldout.py [--llm]`).

Three labelled claim sets, each on its own freshly ingested index (default embedder, sentence
vectors, as `tether eval --verifier` does):
- the bundled set (src/tether/demo/claims-*.jsonl) on the demo collection: the set the
  verifier's clue rules were tuned with;
- the held-out set on a collection written for it (bench/data/verifier_heldout/: a small EN/FR
  library collection with two versions of one policy, staff-only procedures and a sentence
  addressed to AI assistants);
- the held-out set on Larkfield (../shared/benchmarks/larkfield, staged as its README says;
  skipped with a line in the report when it is absent).
Judges: none and the embedding judge (the default); with `--llm` also the LLM judge on the
local model (about 5 s a claim on 2 cores). Writes bench/results/verifier_heldout.md: false
passes and false alarms per set and judge, per kind of claim, whether the flag the author
expected fired, and every claim each judge gets wrong. The text after the ANALYSIS marker in
that file (the failure classes, written by hand) is kept when the figures are rewritten.

The held-out set must stay out of tuning: read bench/data/verifier_heldout/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.app import shared_models
from tether.embeddings.embedders import describe
from tether.evaluation.questions import demo_collection, larkfield_collection
from tether.evaluation.verifier_eval import VerifierResult, load_claims, run_verifier_eval
from tether.ingest.sync import sync
from tether.protocols import Embedder, Judge
from tether.stores.sqlite import SqliteStore
from tether.verify.check import flag_kind
from tether.verify.judges import EmbeddingJudge, LLMJudge

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "bench" / "data" / "verifier_heldout"
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"
MARKER = "<!-- ANALYSIS: written by hand, kept when the figures are rewritten -->"


def _sets(tmp: Path) -> list[tuple[str, Path | None, list[Path]]]:
    """(name, collection folder or None when absent, claim files) for each set."""
    lark = larkfield_collection(LARKFIELD, tmp / "larkfield") if LARKFIELD.is_dir() else None
    return [
        ("bundled (tuned on)", demo_collection(), []),
        ("held-out: own collection", HELDOUT / "collection", [HELDOUT / "claims-own.jsonl"]),
        ("held-out: Larkfield", lark, [HELDOUT / "claims-larkfield.jsonl"]),
    ]


def _expected_hits(items: list[dict], result: VerifierResult) -> tuple[int, int]:
    """Unsupported claims with an `expect` flag: how many got that very flag, of how many."""
    by_id = {i["id"]: i for i in items}
    rows = [r for r in result.rows if r.label == "unsupported" and by_id[r.item_id].get("expect")]
    hit = sum(by_id[r.item_id]["expect"] in {flag_kind(f) for f in r.flags} for r in rows)
    return hit, len(rows)


def _wrong_lines(items: list[dict], result: VerifierResult) -> list[str]:
    by_id = {i["id"]: i for i in items}
    lines = ["| id | kind | label | claim | flags | expected |", "|---|---|---|---|---|---|"]
    for r in result.rows:
        if r.passed == (r.label == "unsupported"):
            item = by_id[r.item_id]
            lines.append(
                f"| {r.item_id} | {r.kind} | {r.label} | {item['claim']} |"
                f" {', '.join(r.flags) or 'none'} | {item.get('expect', '')} |"
            )
    return lines


def _report(
    runs: list[tuple[str, str, list[dict], VerifierResult]], skipped: list[str], embedder: Embedder
) -> list[str]:
    lines = [
        "# The citation checker where it was not tuned",
        "",
        f"Run on {date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores shared"
        f" with other jobs (load average {os.getloadavg()[0]:.1f} at the end); embedder"
        f" {describe(embedder)}. A claim passes when it carries no flag at all. Script:"
        " `python bench/judge/verifier_heldout.py`; held-out set: bench/data/verifier_heldout/"
        " (labels written before the first run; keep it out of tuning).",
        "",
        "| set | judge | claims | false passes (unsupported marked ok) |"
        " false alarms (supported flagged) | expected flag fired | median ms per claim |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, judge, items, r in runs:
        hit, n = _expected_hits(items, r)
        lines.append(
            f"| {name} | {judge} | {len(items)} | {r.false_passes}/{r.unsupported}"
            f" ({r.false_pass_rate:.1%}) | {r.false_alarms}/{r.supported}"
            f" ({r.false_alarm_rate:.1%}) | {f'{hit}/{n}' if n else '–'} | {r.median_ms:.1f} |"
        )
    lines += [f"Skipped: {s}" for s in skipped] + [""]
    for name, judge, items, r in runs:
        lines += [
            f"## {name}, judge {judge}",
            "",
            "| kind of claim | n | verdict wrong |",
            "|---|---|---|",
            *(
                f"| {k.split(':', 1)[1]} | {c['n']} | {c['wrong']} |"
                for k, c in sorted(r.per_kind.items())
            ),
            "",
            "| check | fired on supported | fired on unsupported |",
            "|---|---|---|",
            *(
                f"| {k} | {c['fired_on_supported']} | {c['fired_on_unsupported']} |"
                for k, c in sorted(r.per_check.items())
            ),
            "",
            "Wrong:",
            "",
            *_wrong_lines(items, r),
            "",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", action="store_true", help="also the LLM judge (local model)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "verifier_heldout.md"
    )
    args = parser.parse_args()
    load_before = load_average()
    embedder = shared_models().embedder()
    judges: list[tuple[str, Judge | None]] = [
        ("none", None),
        ("embedding", EmbeddingJudge(embedder)),
    ]
    if args.llm:
        from tether.config import load_settings
        from tether.providers.factory import make_provider

        judges.append(("llm", LLMJudge(make_provider(load_settings(), name="local"))))
    runs: list[tuple[str, str, list[dict], VerifierResult]] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (name, folder, files) in enumerate(_sets(Path(tmp))):
            if folder is None:
                skipped.append(f"{name}: no corpus at {LARKFIELD}")
                continue
            items = load_claims(files or None)
            store = SqliteStore(Path(tmp) / f"set{n}.sqlite")
            print(f"{name}: ingesting {folder} …", file=sys.stderr)
            sync(store, folder, embedder=embedder, sentences=True)
            for label, judge in judges:
                print(f"  {len(items)} claims, judge {label} …", file=sys.stderr)
                result = run_verifier_eval(store, items, judge=judge, embedder=embedder)
                runs.append((name, label, items, result))
            store.close()
    kept = ""
    if args.out.is_file() and MARKER in (old := args.out.read_text(encoding="utf-8")):
        kept = old.split(MARKER, 1)[1]
    lines = _report(runs, skipped, embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_page_result(args.out, [*lines, MARKER + kept], load_before=load_before)
    print("\n".join(lines[:20]))


if __name__ == "__main__":
    main()
