"""The reader (tether's own cross-encoder) measured where it is used, tuned-on and held-out
side by side: `python bench/judge/bench_reader.py` (`make bench-reader`) writes
bench/results/reader.md and reader.json.

- **Claims**: the full claim check (every rule, the alignment, the judge) on each claim set's
  own index, with the judge reading words alone (`words`, the judge before the reader) and
  with the reader (`reader`): false passes, false alarms, the worst error class, and the
  check's median and p95 ms a claim (the answer path without the LLM). Sets and their roles
  come from training/datasets.toml (role for `reader`): the bundled, Maplebrook, Larkfield
  and Coldwater claims are tuned on; the Lakeshore claims (bench/data/reader_heldout) are
  held out, their checksums checked first.
- **Contradictions** (`tether health`'s finder) without and with the reader on each labelled
  health set: the nine the reader was trained on (their labelled pairs are training data)
  and the held-out Granite Self Storage set (bench/health/heldout10).
- **Learning curve**: the reader trained on ¼ and ½ of the written items
  (`training/runs/reader-f25`, `-f50`, made by `make train-reader ARGS="--fraction 0.25
  --run training/runs/reader-f25"` without `--ship`), on the held-out claims, when present.
- **Speed by size**: the reader's forward pass for 2, 4, 6 and 8 layers (the trained
  weights' first layers, or e5's own past them: speed only), at the card's length.

`--only claims|health|curve|speed` runs one part; the others are kept from reader.json.

What it cannot do: each held-out set is meant to be run once, at the end; the script does not
know whether it was run before (the results file's history says).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the repository root: bench.*
sys.path.insert(0, str(ROOT / "training"))

from bench.harness import load_average, make_record, percentile, read_figures, write_record  # noqa: E402

RESULTS = HERE / "results"
READER_HELDOUT = ROOT / "bench" / "data" / "reader_heldout"
HEALTH = HERE / "health"
HEALTH_SETS = [("Northwind", "heldout"), ("Calder", "heldout2"), ("Harrowgate", "heldout3"),
               ("Wyvern", "heldout4"), ("Brackenridge", "heldout5"), ("Thornbury", "heldout6"),
               ("Ferncliffe", "heldout7"), ("Severnside", "heldout8"), ("Kestrel", "heldout9")]  # fmt: skip
HEALTH_HELDOUT = ("Granite", "heldout10")
NOTES = "<!-- the notes below are written by hand; bench_reader.py keeps them -->"


def claim_sets(work: Path, which: str = "all") -> list[tuple[str, str, Path, list[Path]]]:
    from bench.judge.bench_judge import sets

    return sets(which, work)


def run_claims(work: Path, reader_dir: Path | None, which: str = "all") -> list[dict[str, Any]]:
    from tether.app import shared_models
    from tether.embeddings.reader import MODEL_DIR, Reader
    from tether.evaluation.verifier_eval import load_claims, run_verifier_eval
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore
    from tether.verify.learned import AlignmentJudge

    embedder = shared_models().embedder()
    reader = Reader(reader_dir or MODEL_DIR)
    judges = [("words", AlignmentJudge()), ("reader", AlignmentJudge(reader=reader)),
              ("reader across languages", AlignmentJudge(reader=reader, across_only=True))]  # fmt: skip
    rows: list[dict[str, Any]] = []
    for name, status, folder, files in claim_sets(work, which):
        items = load_claims(files or None)
        store = SqliteStore(work / f"{name}.sqlite")
        print(f"{name}: syncing {folder} …", file=sys.stderr, flush=True)
        sync(store, folder, embedder=embedder, sentences=True)
        for label, judge in judges:
            print(f"  {len(items)} claims, judge {label} …", file=sys.stderr, flush=True)
            r = run_verifier_eval(store, items, judge=judge, embedder=embedder)
            kinds = {}
            for k, c in r.per_kind.items():
                kind = k.split(":", 1)[1]
                unsupported = any(
                    i["label"] == "unsupported" and i.get("kind") == kind for i in items
                )
                kinds[kind] = {"n": c["n"], "wrong": c["wrong"], "unsupported": unsupported}
            worst = max(
                ((v["wrong"] / v["n"], k) for k, v in kinds.items() if v["n"]), default=(0.0, "-")
            )
            ms = [1000 * row.seconds for row in r.rows]
            rows.append({
                "set": name, "status": status, "judge": label, "claims": len(items),
                "false_passes": r.false_passes, "unsupported": r.unsupported,
                "false_alarms": r.false_alarms, "supported": r.supported,
                "worst": worst[1], "worst_rate": round(worst[0], 3), "kinds": kinds,
                "median_ms": round(statistics.median(ms), 1), "p95_ms": round(percentile(ms, 95, empty=0.0), 1),
            })  # fmt: skip
        store.close()
    return rows


def run_health(work: Path, reader_dir: Path | None, which: str = "all") -> list[dict[str, Any]]:
    from bench.health.bench_health import ingest, score
    from tether.embeddings.reader import MODEL_DIR, Reader
    from tether.health.contradictions import find_contradictions

    reader = Reader(reader_dir or MODEL_DIR)
    rows: list[dict[str, Any]] = []
    sets = [(n, f, "trained on") for n, f in HEALTH_SETS] if which in ("tuned", "all") else []
    if which in ("heldout", "all"):
        sets.append((*HEALTH_HELDOUT, "held out"))
    for name, folder, status in sets:
        base = HEALTH / folder
        if status == "held out":
            from frozen import changed

            bad = list(changed(base))
            if bad:
                raise SystemExit(f"{bad[0]} changed since the held-out set was frozen")
        labels = json.loads((base / "faults.json").read_text(encoding="utf-8"))
        index = work / f"health-{folder}.sqlite"
        print(f"{name}: ingesting …", file=sys.stderr, flush=True)
        store = ingest(base / "docs", index)
        as_of = date.fromisoformat(labels["as_of"])
        start = time.perf_counter()
        plain = find_contradictions(store, as_of)
        rules_s = time.perf_counter() - start
        start = time.perf_counter()
        # one reading of the candidate pairs: with the rules' findings kept, each finding
        # scored by the reader; the reader's own findings are those at its threshold
        both = find_contradictions(store, as_of, reader=reader, keep_rules=True)
        reader_s = time.perf_counter() - start
        cut = reader.threshold.get("conflict", 0.5)
        own = [c for c in both if c.score >= cut]
        for label, found, seconds in (("rules", plain, rules_s), ("reader", own, reader_s),
                                      ("reader + rules", both, reader_s)):  # fmt: skip
            s = score(found, labels)
            rows.append({"set": name, "status": status, "finder": label, "found": len(found),
                         "right": s["matched_found"], "labelled": s["labelled"],
                         "recalled": len(s["matched_labels"]), "precision": s["precision"],
                         "recall": s["recall"], "distractors_found": len(s["distractors_found"]),
                         "missed": s["missed"], "seconds": round(seconds, 1)})  # fmt: skip
        store.close()
    return rows


def run_curve(work: Path) -> list[dict[str, Any]]:
    """The held-out claims with readers trained on ¼, ½ and all of the written items."""
    from tether.app import shared_models
    from tether.embeddings.reader import MODEL_DIR, Reader
    from tether.evaluation.verifier_eval import load_claims, run_verifier_eval
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore
    from tether.verify.learned import AlignmentJudge

    runs = [("¼", ROOT / "training" / "runs" / "reader-f25"), ("½", ROOT / "training" / "runs" / "reader-f50"),
            ("all", MODEL_DIR)]  # fmt: skip
    embedder = shared_models().embedder()
    items = load_claims([READER_HELDOUT / "claims.jsonl"])
    store = SqliteStore(work / "Lakeshore.sqlite")
    sync(store, READER_HELDOUT / "collection", embedder=embedder, sentences=True)
    rows = []
    for share, folder in runs:
        if not (folder / "card.json").is_file():
            continue
        reader = Reader(folder)
        r = run_verifier_eval(store, items, judge=AlignmentJudge(reader=reader), embedder=embedder)
        card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
        rows.append({"share": share, "written": card.get("training", {}).get("examples", {}).get("written"),
                     "false_passes": r.false_passes, "unsupported": r.unsupported,
                     "false_alarms": r.false_alarms, "supported": r.supported})  # fmt: skip
    store.close()
    return rows


def run_speed(reader_dir: Path | None) -> list[dict[str, Any]]:
    """ms a pair (median of 30) for the reader's forward pass at 2, 4, 6 and 8 layers."""
    import numpy as np

    from tether.embeddings.fast_e5 import q4_dequant
    from tether.embeddings.reader import MODEL_DIR, Reader

    base = Reader(reader_dir or MODEL_DIR)
    f = base.file
    claim = "Visitors may park for up to four hours in the short-stay lot for a flat fee."
    evidence = " ".join(["Short-stay parking is limited to 4 hours and costs $6 per visit."] * 12)
    rows = []
    for layers in (2, 4, 6, 8):
        r = Reader(reader_dir or MODEL_DIR)
        for i in range(base.layers, layers):  # e5's own layers past the trained ones
            p = f"l{i}."
            d = f.hidden
            r.w[p + "qkv.w"] = np.concatenate(
                [q4_dequant(f.q4(p + s, d)) for s in ("q.w", "k.w", "v.w")]
            )
            r.w[p + "qkv.b"] = np.concatenate([f.f32(p + s) for s in ("q.b", "k.b", "v.b")])
            for name, nin in (("ao", d), ("fi", d), ("fo", f.ffn)):
                r.w[p + name + ".w"] = q4_dequant(f.q4(p + name + ".w", nin))
                r.w[p + name + ".b"] = f.f32(p + name + ".b")
            for ln in ("aln", "oln"):
                r.w[p + ln + ".w"], r.w[p + ln + ".b"] = f.f32(p + ln + ".w"), f.f32(p + ln + ".b")
        r.layers = layers
        import onnxruntime as ort

        from tether.embeddings.reader_graph import build_reader_graph

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        model = build_reader_graph(r.w, layers, r.heads, r.eps, r.dim)
        r._session = ort.InferenceSession(
            model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
        ids = r.pair_ids("support", claim, evidence)
        times = []
        for _ in range(30):
            t = time.perf_counter()
            r.probabilities_ids("support", [ids])
            times.append(1000 * (time.perf_counter() - t))
        rows.append({"layers": layers, "tokens": len(ids), "median_ms": round(statistics.median(times), 1),
                     "p95_ms": round(percentile(times, 95, empty=0.0), 1)})  # fmt: skip
    return rows


def render(data: dict[str, Any]) -> str:
    card = data.get("card", {})
    lines = [
        "# The reader: claims and contradictions, tuned-on and held-out side by side",
        "",
        f"Run {data.get('date')} at commit {data.get('commit')}, {data.get('machine')}, load average "
        f"{data.get('load')} at the end. Reader: {card.get('layers')} layers, {card.get('max_len')} tokens, "
        f"weights sha256 {str(card.get('weights_sha256', ''))[:12]}…, thresholds {card.get('thresholds')}. "
        "Script: `python bench/judge/bench_reader.py` (`make bench-reader`).",
        "",
        "## Claims (the full check: rules, alignment and judge)",
        "",
        "A claim passes when it carries no flag. `words`: the judge before the reader (the "
        "alignment's features in a logistic regression); `reader`: the reader on every claim, "
        "its three logits combined with the words model's by a regression fitted on the tuned-on "
        "claims (training/reader/judge.py); `reader across languages`: the default (`align`), "
        "the words model where the claim and its passages share a language, the combination "
        "elsewhere.",
        "",
        "| set | status | judge | claims | false passes | false alarms | worst class (rate wrong) | median ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data.get("claims", []):
        lines.append(
            f"| {r['set']} | {r['status']} | {r['judge']} | {r['claims']} | {r['false_passes']}/{r['unsupported']}"
            f" ({r['false_passes'] / max(1, r['unsupported']):.1%}) | {r['false_alarms']}/{r['supported']}"
            f" ({r['false_alarms'] / max(1, r['supported']):.1%}) | {r['worst']} ({r['worst_rate']:.0%}) |"
            f" {r['median_ms']} | {r['p95_ms']} |"
        )
    held = [r for r in data.get("claims", []) if r["status"] == "held out"]
    for r in held:
        lines += ["", f"### {r['set']} ({r['status']}), judge {r['judge']}: by kind", "",
                  "| kind | n | verdict wrong | rate |", "|---|---|---|---|"]  # fmt: skip
        for k, v in sorted(r["kinds"].items()):
            lines.append(f"| {k} | {v['n']} | {v['wrong']} | {v['wrong'] / max(1, v['n']):.0%} |")
    lines += ["", "## Contradictions (`tether health`)", "",
              "| set | status | finder | found | right | precision | recall | look-alikes reported | seconds |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in data.get("health", []):
        lines.append(f"| {r['set']} | {r['status']} | {r['finder']} | {r['found']} | {r['right']} |"
                     f" {r['precision']:.2f} | {r['recall']:.2f} ({r['recalled']}/{r['labelled']}) |"
                     f" {r['distractors_found']} | {r['seconds']} |")  # fmt: skip
    for finder in ("rules", "reader", "reader + rules"):
        rows = [
            r
            for r in data.get("health", [])
            if r["finder"] == finder and r["status"] == "trained on"
        ]
        if rows:
            right, found = sum(r["right"] for r in rows), sum(r["found"] for r in rows)
            rec, lab = sum(r["recalled"] for r in rows), sum(r["labelled"] for r in rows)
            lines.append(f"| nine trained-on sets, pooled | trained on | {finder} | {found} | {right} |"
                         f" {right / max(1, found):.2f} | {rec / max(1, lab):.2f} ({rec}/{lab}) | | |")  # fmt: skip
    if data.get("curve"):
        lines += ["", "## Learning curve (held-out claims, full check with the reader)", "",
                  "| share of the written items | items | false passes | false alarms |", "|---|---|---|---|"]  # fmt: skip
        for r in data["curve"]:
            lines.append(f"| {r['share']} | {r['written']} | {r['false_passes']}/{r['unsupported']}"
                         f" ({r['false_passes'] / max(1, r['unsupported']):.1%}) | {r['false_alarms']}/{r['supported']}"
                         f" ({r['false_alarms'] / max(1, r['supported']):.1%}) |")  # fmt: skip
    if data.get("speed"):
        lines += ["", "## Speed by size (one claim and its evidence, ONNX Runtime, 2 threads)", "",
                  "| layers | tokens | median ms | p95 ms |", "|---|---|---|---|"]  # fmt: skip
        for r in data["speed"]:
            lines.append(f"| {r['layers']} | {r['tokens']} | {r['median_ms']} | {r['p95_ms']} |")
    return "\n".join(lines) + "\n"


def _merge(
    old: list[dict[str, Any]], new: list[dict[str, Any]], key: tuple[str, ...]
) -> list[dict[str, Any]]:
    """`old` rows with those `new` replaces (same key), in the order first seen."""
    out = {tuple(r[k] for k in key): r for r in old}
    out.update({tuple(r[k] for k in key): r for r in new})
    return list(out.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["claims", "health", "curve", "speed"], default=None)
    ap.add_argument(
        "--sets",
        choices=["tuned", "heldout", "all"],
        default="all",
        help="which sets (claims and health): tuned-on, held-out or both",
    )
    ap.add_argument(
        "--reader", type=Path, default=None, help="a reader folder (default: the shipped one)"
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/tether-bench-reader"))
    ap.add_argument("--out", type=Path, default=RESULTS / "reader.md")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    load_before = load_average()
    json_path = args.out.with_suffix(".json")
    data: dict[str, Any] = dict(read_figures(json_path)) if json_path.is_file() else {}
    for key in ("date", "commit", "machine", "load"):  # a JSON from before the harness
        data.pop(key, None)
    from tether.embeddings.reader import MODEL_DIR

    card_path = (args.reader or MODEL_DIR) / "card.json"
    data["card"] = {k: v for k, v in json.loads(card_path.read_text(encoding="utf-8")).items()
                    if k in ("layers", "max_len", "weights_sha256", "thresholds", "data")}  # fmt: skip
    parts = [args.only] if args.only else ["claims", "health", "curve", "speed"]
    if "claims" in parts:
        data["claims"] = _merge(
            data.get("claims", []), run_claims(args.work, args.reader, args.sets), ("set", "judge")
        )
    if "health" in parts:
        data["health"] = _merge(
            data.get("health", []), run_health(args.work, args.reader, args.sets), ("set", "finder")
        )
    if "curve" in parts:
        data["curve"] = run_curve(args.work)
    if "speed" in parts:
        data["speed"] = run_speed(args.reader)
    record = make_record("reader", data, load_before)
    write_record(json_path, record)
    kept = ""
    if args.out.is_file() and NOTES in (old := args.out.read_text(encoding="utf-8")):
        kept = old.split(NOTES, 1)[1]
    args.out.write_text(page(record) + "\n" + NOTES + kept, encoding="utf-8")
    print(page(record))
    return 0


def page(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.make_record`): `render` of its
    figures with the run's date, commit, machine and load."""
    machine = record["machine"]
    return render({
        **record["figures"], "date": record["date"], "commit": record["commit"],
        "machine": f"{machine['platform']}, {machine['cpus']} cores",
        "load": record["load"]["after"],
    })  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
