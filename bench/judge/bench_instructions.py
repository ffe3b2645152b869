"""What the instruction detector catches, and what it flags on real manuals (run on demand:
`python bench/judge/bench_instructions.py [--before REF] [--lists]`).

Reads the labelled set tests/data/instructions.jsonl (instruction phrasings in English and
French, as written and disguised with invisible characters, look-alike letters or
compatibility forms; benign sentences that talk about instructions or about assistants) and
reports, for the detector of this tree (`tether.instructions.find_instructions`) and, with
`--before REF`, for the detector of git revision REF (loaded from that revision's
`src/tether/instructions.py`, or `src/tether/verify/instructions.py` where it lived before):
- the detection rate (instruction phrasings with at least one span found), overall, as
  written and disguised, per language, per disguise; the precision on the set;
- the false-alarm rate (benign sentences with a span found);
- the flags on real manuals: every chunk (what ingest scans) of every HTML page of the
  Debian documentation packages of bench/corpora (PostgreSQL 15, Python 3.11, SQLite, Git,
  flex, gettext, MkDocs, Doxygen: `bench/corpora/setup.py` installs them) and of the Apache
  HTTP Server 2.4 manual (`apache2-doc`, English and French), parsed and chunked as ingest
  does (`--lists`: only the pages listed in bench/corpora/NAME/pages.txt). None of these
  manuals addresses an AI assistant, so every flag there is a false alarm. The bundled demo
  collection is counted apart: one of its documents carries a planted instruction
  (src/tether/demo/difficulties.md, section 8), which must stay flagged;
- the time per 1,000 sentences, and over the demo collection's chunks (what ingest adds).
Writes bench/results/instructions.md (and its JSON: the run's date, commit, machine, load and
figures) and lists what is missed and what alarms.

What it cannot do: the set is small and written by the people who wrote the patterns, so the
rates say what the detector does on these phrasings, not on an attacker's next one; the
manuals are software manuals in two languages, so their count says little about other kinds
of documents (a support site, a policy), and a manual that is not installed is reported as
missing, not measured.
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
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.instructions import find_instructions

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "instructions.jsonl"
OUT = HERE / "results" / "instructions.md"
OLD_MODULES = ("src/tether/instructions.py", "src/tether/verify/instructions.py")

Detector = Callable[[str], list[tuple[int, int]]]
# the Apache manual: its English and French folders only (the detector reads EN and FR; the
# other languages repeat the English text they leave untranslated)
APACHE = (
    "apache2-doc",
    [Path("/usr/share/doc/apache2-doc/manual/en"), Path("/usr/share/doc/apache2-doc/manual/fr")],
)


@dataclass
class Manual:
    """The chunks of one manual's pages: (page, chunk text) each."""

    name: str
    package: str
    pages: int = 0
    passages: list[tuple[str, str]] = field(default_factory=list)
    missing: str = ""  # why it was not read


def load_rows(path: Path = DATA) -> list[dict]:
    """The labelled sentences: text, instruction (bool), lang, obfuscation, split ("tuned":
    the patterns were adjusted on these; "held out": written afterwards, not tuned on)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def detector_at(ref: str) -> Detector:
    """`find_instructions` as it was at git revision `ref`."""
    for path in OLD_MODULES:
        shown = subprocess.run(
            ["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True, check=False
        )
        if shown.returncode == 0:
            source = shown.stdout
            break
    else:
        raise SystemExit(f"error: {ref} has no instruction detector ({' or '.join(OLD_MODULES)})")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("instructions_before", f.name)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
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


def demo_texts() -> list[tuple[str, str]]:
    """(document id, chunk text) of the bundled demo collection's chunks, as ingest makes them."""
    from tether.evaluation.questions import demo_collection
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "index.sqlite")
        sync(store, demo_collection())
        texts = [(c.doc_id, c.text) for c in store.chunks()]
        store.close()
    return texts


def demo_chunk_ms(detect: Detector, texts: list[str]) -> tuple[int, int, float]:
    """(chunks, characters, ms to read them all) over the demo collection's chunks: what
    detection adds to an ingest (best of 5)."""
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for text in texts:
            detect(text)
        best = min(best, time.perf_counter() - began)
    return len(texts), sum(map(len, texts)), best * 1000


def manual_folders() -> dict[str, tuple[str, list[Path]]]:
    """name -> (Debian package, HTML folders) of every manual measured."""
    spec = importlib.util.spec_from_file_location("corpora_setup", HERE / "corpora" / "setup.py")
    assert spec and spec.loader
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    folders = {name: (pkg, [folder]) for name, (pkg, folder) in setup.CORPORA.items()}
    return {"apache": APACHE, **{k: v for k, v in folders.items() if k != "apache"}}


def read_manuals(lists_only: bool) -> list[Manual]:
    """Every manual's chunks: each HTML page of its folders (or only those listed in
    bench/corpora/NAME/pages.txt) parsed and chunked as ingest does; a page the parser refuses
    (a redirect) is skipped."""
    from tether.errors import ParseError
    from tether.ingest.chunking import chunk_document
    from tether.ingest.parse.dispatch import parse_bytes

    manuals = []
    for name, (package, folders) in manual_folders().items():
        manual = Manual(name, package)
        manuals.append(manual)
        if not all(f.is_dir() for f in folders):
            manual.missing = f"not installed (apt-get install {package})"
            continue
        if lists_only:
            listed = HERE / "corpora" / name / "pages.txt"
            lines = listed.read_text(encoding="utf-8").splitlines()
            base = folders[0].parent if name == "apache" else folders[0]
            pages = [base / n.strip() for n in lines if n.strip() and not n.startswith("#")]
        else:
            pages = sorted(
                p for f in folders for p in f.rglob("*") if p.suffix in (".html", ".htm")
            )
        for page in pages:
            try:
                doc = parse_bytes(
                    page.read_bytes(), page.name, "html", None, default_access="public"
                )
            except (ParseError, OSError):
                continue
            manual.pages += 1
            shown = str(page.relative_to(folders[0].parent))
            manual.passages += [(shown, c.text) for c in chunk_document(doc)]
    return manuals


def flags(detect: Detector, passages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(page, flagged text) of every span the detector finds in the passages."""
    return [(page, " ".join(text[a:b].split())) for page, text in passages for a, b in detect(text)]


def rate(values: list[bool]) -> str:
    return f"{sum(values)}/{len(values)} ({100 * sum(values) / len(values):.0f}%)"


def precision(r: dict) -> str:
    found, alarms = sum(r["groups"]["all"]), sum(r["groups"]["benign"])
    return f"{found}/{found + alarms} ({100 * found / max(1, found + alarms):.0f}%)"


def report(
    after: dict, before: dict | None, ref: str | None, manuals: list[Manual], lists_only: bool
) -> str:
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
        label = "detection, " + key if key != "all" else "**detection rate** (recall)"
        cells = [rate(r["groups"][key]) for r in (before, after) if r]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for key, label in (
        ("benign", "**false-alarm rate**"),
        ("benign held out", "false alarms, held out"),
    ):
        cells = [rate(r["groups"][key]) for r in (before, after) if r]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = [precision(r) for r in (before, after) if r]
    lines.append("| precision on the set | " + " | ".join(cells) + " |")
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
        " sentences with one; precision: the phrasings found over all sentences with a span."
        " Disguises: invisible characters (zero-width space and joiners,"
        " soft hyphen, bidi marks, word joiner, tag characters, variation selectors), Cyrillic"
        " and Greek look-alike letters, fullwidth and mathematical letters, combining marks."
        " The patterns were adjusted on the rows marked `tuned`; the `held out` rows were"
        " written afterwards and not tuned on, so their rate is the fairer estimate for"
        " phrasings nobody has seen.",
    ]
    if before:
        lines.append(f"Before: the detector of {ref}.")
    lines += ["", "Missed now:", ""]
    lines += [
        f"- ({m['lang']}, {m['obfuscation']}) {json.dumps(m['text'])}" for m in after["misses"]
    ]
    lines += ["", "False alarms now:", ""]
    lines += [f"- ({m['lang']}) {json.dumps(m['text'])}" for m in after["alarms"]] or ["- none"]
    lines += manual_report(after, before, ref, manuals, lists_only)
    return "\n".join(lines) + "\n"


def manual_report(
    after: dict, before: dict | None, ref: str | None, manuals: list[Manual], lists_only: bool
) -> list[str]:
    """The section on real manuals: flags per manual, before and after, and what they were."""
    which = "the pages listed in bench/corpora/NAME/pages.txt" if lists_only else "every page"
    lines = [
        "",
        "## Flags on real manuals (every one a false alarm)",
        "",
        f"Every chunk of {which} of each manual's HTML, parsed and chunked as ingest does (the"
        " structure chunker); the detector reads each chunk. The demo collection's one planted"
        " instruction (kestrel-tr2200-sheet) is a true flag, counted apart.",
        "",
    ]
    cols = [
        "manual",
        "package",
        "pages",
        "passages",
        *([f"flags before ({ref})"] if before else []),
        "flags after",
    ]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    total = [0, 0, 0, 0]
    for m in manuals:
        if m.missing:
            lines.append(f"| {m.name} | {m.package} | {m.missing} |" + " |" * (len(cols) - 3))
            continue
        counts = [len(r["manuals"][m.name]) for r in (before, after) if r]
        lines.append(
            f"| {m.name} | {m.package} | {m.pages:,} | {len(m.passages):,} | "
            + " | ".join(map(str, counts))
            + " |"
        )
        total[0] += m.pages
        total[1] += len(m.passages)
        for i, c in enumerate(counts):
            total[2 + i] += c
    cells = [str(t) for t in total[2 : 2 + (2 if before else 1)]]
    lines.append(f"| **all manuals** | | {total[0]:,} | {total[1]:,} | " + " | ".join(cells) + " |")
    demo = [f"{len(r['demo_flags'])} (planted)" for r in (before, after) if r]
    lines.append(
        f"| demo collection | (bundled) | {after['demo_documents']} documents |"
        f" {after['demo'][0]} | " + " | ".join(demo) + " |"
    )
    for label, r in ((f"Flags before ({ref})", before), ("Flags now", after)):
        if r is None:
            continue
        found = [
            (m.name, page, text) for m in manuals for page, text in r["manuals"].get(m.name, [])
        ]
        lines += ["", f"{label}:", ""]
        lines += [f"- {name}, {page}: {json.dumps(text[:300])}" for name, page, text in found]
        lines += [] if found else ["- none on the manuals"]
        lines += [f"- demo, {doc}: {json.dumps(text[:300])}" for doc, text in r["demo_flags"]]
    return lines


def run(
    detect: Detector, rows: list[dict], manuals: list[Manual], demo: list[tuple[str, str]]
) -> dict:
    """Everything measured of one detector."""
    return score(detect, rows) | {
        "demo": demo_chunk_ms(detect, [t for _, t in demo]),
        "demo_flags": flags(detect, demo),
        "demo_documents": len({doc for doc, _ in demo}),
        "manuals": {m.name: flags(detect, m.passages) for m in manuals if not m.missing},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="a git revision whose detector to compare with")
    parser.add_argument(
        "--lists", action="store_true", help="only the pages of bench/corpora/NAME/pages.txt"
    )
    args = parser.parse_args()
    load_before = load_average()
    rows = load_rows()
    old = detector_at(args.before) if args.before else None
    demo = demo_texts()
    manuals = read_manuals(args.lists)
    before = run(old, rows, manuals, demo) if old else None
    after = run(find_instructions, rows, manuals, demo)
    text = report(after, before, args.before, manuals, args.lists)
    figures = {"before_revision": args.before, "after": after, "before": before}
    write_page_result(OUT, text.split("\n"), load_before=load_before, figures=figures)
    print(OUT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
