"""What the instruction detector catches (run on demand: `python bench/bench_instructions.py`).

Reads the labelled set tests/data/instructions.jsonl (instruction phrasings in English and
French, as written and disguised with invisible characters, look-alike letters or
compatibility forms; benign sentences that talk about instructions or about assistants) and
reports, for the detector of this tree (`tether.instructions.find_instructions`) and, with
`--before REF`, for the detector of git revision REF (loaded from that revision's
`src/tether/verify/instructions.py`):
- the detection rate (instruction phrasings with at least one span found), overall, as
  written and disguised, per language, per disguise;
- the false-alarm rate (benign sentences with a span found);
- the time per 1,000 sentences, and over the demo collection's chunks (what ingest adds).
Writes bench/results/instructions.md and lists what is missed and what alarms.

What it cannot do: the set is small and written by the people who wrote the patterns, so the
rates say what the detector does on these phrasings, not on an attacker's next one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from tether.instructions import find_instructions

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "instructions.jsonl"
OUT = HERE / "results" / "instructions.md"
OLD_MODULE = "src/tether/verify/instructions.py"

Detector = Callable[[str], list[tuple[int, int]]]


def load_rows(path: Path = DATA) -> list[dict]:
    """The labelled sentences: text, instruction (bool), lang, obfuscation, split ("tuned":
    the patterns were adjusted on these; "held out": written afterwards, not tuned on)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def detector_at(ref: str) -> Detector:
    """`find_instructions` as it was at git revision `ref`."""
    source = subprocess.run(
        ["git", "show", f"{ref}:{OLD_MODULE}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("instructions_before", f.name)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    Path(f.name).unlink()
    return module.find_instructions  # type: ignore[no-any-return]


def score(detect: Detector, rows: list[dict]) -> dict:
    """Rates of one detector on the rows, with the misses and false alarms."""
    groups: dict[str, list[bool]] = defaultdict(list)
    misses: list[dict] = []
    alarms: list[dict] = []
    began = time.perf_counter()
    for _ in range(5):
        found = [bool(detect(r["text"])) for r in rows]
    per_1000 = (time.perf_counter() - began) / 5 / len(rows) * 1_000_000  # ms
    for row, hit in zip(rows, found, strict=True):
        held = row["split"] == "held-out"
        if row["instruction"]:
            written = row["obfuscation"] == "none"
            keys = ["all", "as written" if written else "disguised", f"lang {row['lang']}"]
            keys += [f"disguise: {row['obfuscation']}"] if not written else []
            for key in [*keys, "held out" if held else "tuned"]:
                groups[key].append(hit)
            if not hit:
                misses.append(row)
        else:
            for key in ["benign"] + (["benign held out"] if held else []):
                groups[key].append(hit)
            if hit:
                alarms.append(row)
    return {"groups": dict(groups), "misses": misses, "alarms": alarms, "seconds": per_1000}


def demo_chunk_ms(detect: Detector) -> tuple[int, int, float]:
    """(chunks, characters, ms to read them all) over the bundled demo collection's chunks:
    what detection adds to an ingest (best of 5)."""
    from tether.evaluation.questions import demo_collection
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "index.sqlite")
        sync(store, demo_collection())
        texts = [c.text for c in store.chunks()]
        store.close()
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for text in texts:
            detect(text)
        best = min(best, time.perf_counter() - began)
    return len(texts), sum(map(len, texts)), best * 1000


def rate(values: list[bool]) -> str:
    return f"{sum(values)}/{len(values)} ({100 * sum(values) / len(values):.0f}%)"


def report(after: dict, before: dict | None, ref: str | None) -> str:
    n_pos = len(after["groups"]["all"])
    n_neg = len(after["groups"]["benign"])
    lines = [
        "# Instructions hidden in documents",
        "",
        f"Run on {time.strftime('%Y-%m-%d')}, {sys.platform}: {n_pos} instruction phrasings and"
        f" {n_neg} benign sentences (tests/data/instructions.jsonl).",
        "",
    ]
    cols = ["measure", *([f"before ({ref})"] if before else []), "after"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    keys = ["all", "tuned", "held out", "as written", "disguised", "lang en", "lang fr"]
    keys += sorted(k for k in after["groups"] if k.startswith("disguise:"))
    for key in keys:
        label = "detection, " + key if key != "all" else "**detection rate**"
        cells = [rate(r["groups"][key]) for r in (before, after) if r]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for key, label in (
        ("benign", "**false-alarm rate**"),
        ("benign held out", "false alarms, held out"),
    ):
        cells = [rate(r["groups"][key]) for r in (before, after) if r]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = [f"{r['seconds']:.1f}" for r in (before, after) if r]
    lines.append("| ms per 1,000 sentences | " + " | ".join(cells) + " |")
    n, chars = after["demo"][0], after["demo"][1]
    cells = [f"{r['demo'][2]:.1f}" for r in (before, after) if r]
    lines.append(
        f"| ms for the demo's {n} chunks ({chars:,} characters) | " + " | ".join(cells) + " |"
    )
    lines += [
        "",
        "Detection: instruction phrasings with at least one span found; false alarms: benign"
        " sentences with one. Disguises: invisible characters (zero-width space and joiners,"
        " soft hyphen, bidi marks, word joiner, tag characters, variation selectors), Cyrillic"
        " and Greek look-alike letters, fullwidth and mathematical letters, combining marks."
        " The patterns were adjusted on the rows marked `tuned`; the `held out` rows were"
        " written afterwards and not tuned on, so their rate is the fairer estimate for"
        " phrasings nobody has seen.",
    ]
    if before:
        lines.append(
            f"Before: the detector of {ref}, which matched the text as written (accents"
            " folded only)."
        )
    lines += ["", "Missed now:", ""]
    lines += [
        f"- ({m['lang']}, {m['obfuscation']}) {json.dumps(m['text'])}" for m in after["misses"]
    ]
    lines += ["", "False alarms now:", ""]
    lines += [f"- ({m['lang']}) {json.dumps(m['text'])}" for m in after["alarms"]] or ["- none"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="a git revision whose detector to compare with")
    args = parser.parse_args()
    rows = load_rows()
    old = detector_at(args.before) if args.before else None
    before = score(old, rows) | {"demo": demo_chunk_ms(old)} if old else None
    after = score(find_instructions, rows) | {"demo": demo_chunk_ms(find_instructions)}
    text = report(after, before, args.before)
    OUT.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
