"""The claim judge measured on every labelled claim set, tuned-on and held-out side by side
(`python bench/judge/bench_judge.py [--sets tuned|heldout|all] [--judges none,embedding,align]
[--llm]`; writes bench/results/judge.md, or --out).

Sets, each on its own index (default embedder, sentence vectors, as `tether eval --verifier`
builds it; kept under --work between runs so only changed files are embedded again):
- tuned on: the bundled claims (demo collection), the Maplebrook claims and the Larkfield
  claims (bench/data/verifier_heldout/; held out once, looked at since);
- the Coldwater Valley Transit claims (bench/data/judge_heldout/, written and frozen by
  checksum before the learned judge existed, held out for it; tuned on since the reader
  used them to watch its training);
- held out: the Lakeshore Regional Hospital claims (bench/data/reader_heldout/, written and
  frozen before the reader was trained; the script checks the checksums first and refuses a
  set whose files changed).
Judges: `none` (the rules alone), `embedding`, `words` (the learned alignment judge alone,
the default before the reader), `reader` (the reader reading each claim against its cited
sentences: `--reader DIR` for another folder than the shipped one), `align+llm` with --llm (the local model as a second
opinion inside the uncertain band). Reported per set and judge: false passes, false alarms,
per kind (error class), median and p95 ms a claim, and every wrong verdict.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*

from bench.frozen import changed
from bench.harness import load_average, percentile, write_page_result
from bench.judge.verifier_heldout import HELDOUT, LARKFIELD, MARKER, _expected_hits, _wrong_lines
from tether.app import shared_models
from tether.embeddings.embedders import describe
from tether.evaluation.questions import demo_collection, larkfield_collection
from tether.evaluation.verifier_eval import (
    VerifierResult,
    load_claims,
    run_verifier_eval,
)
from tether.ingest.sync import sync
from tether.protocols import Judge
from tether.stores.sqlite import SqliteStore
from tether.verify.judges import EmbeddingJudge, LLMJudge
from tether.verify.learned import AlignmentJudge

ROOT = Path(__file__).resolve().parents[2]
JUDGE_HELDOUT = ROOT / "bench" / "data" / "judge_heldout"
READER_HELDOUT = ROOT / "bench" / "data" / "reader_heldout"


def verify_frozen(folder: Path) -> None:
    """Raise SystemExit when a file listed in folder/SHA256SUMS changed."""
    for path in changed(folder):
        raise SystemExit(f"{path} changed since the held-out set was frozen")


def sets(which: str, work: Path) -> list[tuple[str, str, Path, list[Path]]]:
    """(name, 'tuned'|'held out', collection, claim files) for each set asked for."""
    out: list[tuple[str, str, Path, list[Path]]] = []
    if which in ("tuned", "all"):
        out.append(("bundled", "tuned on", demo_collection(), []))
        out.append(
            ("Maplebrook", "tuned on", HELDOUT / "collection", [HELDOUT / "claims-own.jsonl"])
        )
        if LARKFIELD.is_dir():
            lark = larkfield_collection(LARKFIELD, work / "larkfield-docs")
            out.append(("Larkfield", "tuned on", lark, [HELDOUT / "claims-larkfield.jsonl"]))
        verify_frozen(JUDGE_HELDOUT)
        out.append(("Coldwater", "tuned on", JUDGE_HELDOUT / "collection",
                    [JUDGE_HELDOUT / "claims.jsonl"]))  # fmt: skip
    if which in ("heldout", "all"):
        verify_frozen(READER_HELDOUT)
        out.append(("Lakeshore", "held out", READER_HELDOUT / "collection",
                    [READER_HELDOUT / "claims.jsonl"]))  # fmt: skip
    return out


def _kinds_table(items: list[dict], r: VerifierResult) -> list[str]:
    lines = ["| kind of claim | n | verdict wrong | rate |", "|---|---|---|---|"]
    for k, c in sorted(r.per_kind.items()):
        lines.append(
            f"| {k.split(':', 1)[1]} | {c['n']} | {c['wrong']} | {c['wrong'] / c['n']:.0%} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", choices=["tuned", "heldout", "all"], default="all")
    parser.add_argument("--judges", default="none,embedding,align")
    parser.add_argument("--llm", action="store_true", help="also align+llm (local model)")
    parser.add_argument(
        "--reader", type=Path, default=None, help="the reader's folder (default: the shipped one)"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/tether-bench-judge"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "judge.md")
    args = parser.parse_args()
    load_before = load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    embedder = shared_models().embedder()
    judges: list[tuple[str, Judge | None]] = []
    for name in args.judges.split(","):
        if name == "none":
            judges.append(("none", None))
        elif name == "embedding":
            judges.append(("embedding", EmbeddingJudge(embedder)))
        elif name in ("align", "words"):
            judges.append((name, AlignmentJudge()))
        elif name == "reader":
            from tether.embeddings.reader import MODEL_DIR, load_reader

            judges.append(("reader", AlignmentJudge(reader=load_reader(args.reader or MODEL_DIR))))
    if args.llm:
        from tether.config import load_settings
        from tether.providers.factory import make_provider

        llm = LLMJudge(make_provider(load_settings(), name="local"))
        judges.append(("align+llm", AlignmentJudge(second=llm)))
    runs: list[tuple[str, str, str, list[dict], VerifierResult]] = []
    for name, status, folder, files in sets(args.sets, args.work):
        items = load_claims(files or None)
        store = SqliteStore(args.work / f"{name}.sqlite")
        print(f"{name}: syncing {folder} …", file=sys.stderr)
        sync(store, folder, embedder=embedder, sentences=True)
        for label, judge in judges:
            print(f"  {len(items)} claims, judge {label} …", file=sys.stderr)
            result = run_verifier_eval(store, items, judge=judge, embedder=embedder)
            runs.append((name, status, label, items, result))
        store.close()
    lines = [
        "# The claim judge, tuned-on and held-out sets side by side",
        "",
        f"Run on {date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores"
        f" (load average {os.getloadavg()[0]:.1f} at the end); embedder {describe(embedder)}."
        " A claim passes when it carries no flag at all. Script: `python bench/judge/bench_judge.py`.",
        "",
        "| set | status | judge | claims | false passes | false alarms | worst error class"
        " (false passes) | median ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, status, label, items, r in runs:
        worst = max(
            (
                (c["wrong"] / c["n"], k.split(":", 1)[1])
                for k, c in r.per_kind.items()
                if any(
                    i["label"] == "unsupported" and i.get("kind") == k.split(":", 1)[1]
                    for i in items
                )
            ),
            default=(0.0, "–"),
        )
        ms = [1000 * row.seconds for row in r.rows]
        lines.append(
            f"| {name} | {status} | {label} | {len(items)} | {r.false_passes}/{r.unsupported}"
            f" ({r.false_pass_rate:.1%}) | {r.false_alarms}/{r.supported}"
            f" ({r.false_alarm_rate:.1%}) | {worst[1]} {worst[0]:.0%} |"
            f" {statistics.median(ms):.1f} | {percentile(ms, 95, empty=0.0):.1f} |"
        )
    lines.append("")
    for name, status, label, items, r in runs:
        hit, total = _expected_hits(items, r)
        lines += [f"## {name} ({status}), judge {label}", "",
                  f"Expected flag fired: {hit}/{total}.", "",
                  *_kinds_table(items, r), "", "Wrong:", "", *_wrong_lines(items, r), ""]  # fmt: skip
    kept = ""
    if args.out.is_file() and MARKER in (old := args.out.read_text(encoding="utf-8")):
        kept = old.split(MARKER, 1)[1]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_page_result(args.out, [*lines, MARKER + kept], load_before=load_before)
    print("\n".join(lines[: 8 + len(runs)]))


if __name__ == "__main__":
    main()
