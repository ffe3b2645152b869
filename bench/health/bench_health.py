"""The contradiction finder of `tether health` (`tether.health.contradictions`): precision and
recall against a labelled set, and its run time.

`python bench/health/bench_health.py` (default) copies the bundled demo collection into a temporary
folder, plants contradictions in copies of a few of its documents (`plant_contradictions`:
number and rule kinds, plus two planted look-alikes that are not contradictions), ingests the
copy with the default embedder (chunk and sentence vectors), runs `find_contradictions` on
2026-11-30 and scores it against the planted labels together with the demo's own
contradictions (`DEMO_CONTRADICTIONS`: written into the demo on purpose, see
`src/tether/demo/difficulties.md` section 7) and its distractors (`DEMO_DISTRACTORS`:
versions, notices, near-duplicate guides, staff exceptions). It writes
bench/results/health_contradictions.md and its JSON (the run's date, commit, machine, load and
figures).

`python bench/health/bench_health.py --collection FOLDER --labels FILE [--index FILE]` scores a
labelled collection instead (the held-out set: run by the lead engineer, once). FILE is JSON:
{"as_of": "YYYY-MM-DD", "contradictions": [{"id", "kind", "a": {"doc_id", "quote"},
"b": {"doc_id", "quote"}}], "distractors": [{"id", "a": {...}, "b": {...}}]}. A found
contradiction matches a labelled one when its two doc_ids are the labelled ones (either
order) and each found quote holds most (`QUOTE_SHARE`) of its labelled quote's words, or the
labelled quote most of the found one's (lenient on sentence boundaries). Precision = matched
found / found; recall = matched labelled / labelled; a distractor found is listed.

`--timing INDEX...` also times the finder on existing indexes (e.g. /work/corpora/git).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.health.contradictions import find_contradictions
from tether.types import Contradiction

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "health_contradictions.md"
AS_OF = "2026-11-30"
QUOTE_SHARE = 0.6

# (file, heading, text added at the end, label): label None for a planted look-alike that is
# not a contradiction (a distractor); else (id, kind, other doc_id, the other's quote).
PLANTS: tuple[tuple[str, str, str, tuple[str, str, str, str] | None], ...] = (
    ("policies/refunds-and-payments.md", "Return window",
     "Most items can be returned within 60 days of purchase.",
     ("P1", "number", "returns-policy", "You can return most items within 45 days.")),
    ("policies/pine-club-rewards.md", "Tune-ups for members",
     "A full tune-up costs $129 and includes wheel truing and drivetrain cleaning.",
     ("P2", "number", "bike-assembly-and-tune-ups",
      "Full tune-up | $149 | basic tune-up plus wheel truing, hub and headset adjustment, "
      "drivetrain cleaning")),
    ("guides/ridgeline-2-tent.md", "Warranty",
     "The warranty period for tents and shelters is 5 years.",
     ("P3", "number", "warranty-policy", "Tents and shelters | 3 years")),
    ("policies/gift-cards.md", "Price match",
     "Ask for a price match within 10 days after your purchase, with your proof of purchase.",
     ("P4", "number", "price-match-policy",
      "Ask before you pay, or within 7 days after your purchase with your proof of purchase.")),
    ("policies/pine-club-rewards.md", "Gift cards and points",
     "Gift cards can be used to buy other gift cards.",
     ("P5", "rule", "gift-cards",
      "Gift cards cannot be used to buy other gift cards or to pay SplitPay instalments.")),
    ("policies/bike-assembly-and-tune-ups.md", "Crash damage",
     "The warranty covers damage from crashes and falls.",
     ("P6", "rule", "warranty-policy",
      "The warranty does not cover damage from crashes, falls or accidents")),
    # look-alikes: the same value in other words, and an exception stated as a condition
    ("policies/pine-club-rewards.md", "Store pickup",
     "We hold pickup orders for two weeks after sending the ready-for-pickup email.", None),
    ("policies/trade-in-program.md", "Returns for members",
     "Pine Club members can return most items within 90 days, provided they keep the receipt.",
     None),
)  # fmt: skip

# The demo's own contradictions (difficulties.md section 7), as they stand on 2026-11-30.
DEMO_CONTRADICTIONS: tuple[dict[str, Any], ...] = (
    {"id": "D1", "kind": "number",
     "a": {"doc_id": "help-faq", "quote": "Standard delivery is free on orders of $75 or more "
           "to the Atlantic provinces, Quebec and Ontario."},
     "b": {"doc_id": "delivery-policy", "quote": "Quebec and Ontario | $8.95 | $17.95 | $99"}},
    {"id": "D2", "kind": "rule",
     "a": {"doc_id": "help-faq", "quote": "Pine Points never expire as long as your Pine Club "
           "account stays open"},
     "b": {"doc_id": "pine-club-rewards", "quote": "Points expire on the last day of the 24th "
           "month after the month in which they were earned."}},
)  # fmt: skip
DEMO_DISTRACTORS: tuple[dict[str, Any], ...] = (
    {"id": "X1", "a": {"doc_id": "guide-ridgeline-2", "quote": "The tent comes with 8 stakes"},
     "b": {"doc_id": "guide-ridgeline-3", "quote": "The tent comes with 10 stakes"}},
    {"id": "X2", "a": {"doc_id": "winter-rentals-2026", "quote": "get 20% off the rental price"},
     "b": {"doc_id": "rentals-policy", "quote": "Pine Club members get 10% off rental prices."}},
    {"id": "X3", "a": {"doc_id": "price-match-exceptions", "quote": "Differences above $75 need "
                       "the regional manager's approval"},
     "b": {"doc_id": "price-match-policy", "quote": "We match the current advertised price"}},
    {"id": "X4", "a": {"doc_id": "bike-assembly-and-tune-ups",
                       "quote": "Please collect your bike within 14 days of our ready message."},
     "b": {"doc_id": "delivery-policy", "quote": "We hold the order for 14 days after sending "
           "the ready-for-pickup email"}},
)  # fmt: skip


def plant_contradictions(folder: Path) -> dict[str, Any]:
    """Add the `PLANTS` sentences to the documents of a copy of the demo collection at
    `folder` (each as a new section at the end of its file) and return the labels: the
    planted contradictions (with the demo's own), the planted look-alikes and the demo's
    distractors, in the labelled set's JSON shape."""
    contradictions: list[dict[str, Any]] = []
    distractors: list[dict[str, Any]] = [dict(d) for d in DEMO_DISTRACTORS]
    for n, (path, heading, text, label) in enumerate(PLANTS, start=1):
        file = folder / path
        file.write_text(file.read_text(encoding="utf-8").rstrip() + f"\n\n## {heading}\n\n{text}\n",
                        encoding="utf-8")  # fmt: skip
        doc_id = _doc_id(file)
        if label is None:
            distractors.append({"id": f"L{n}", "a": {"doc_id": doc_id, "quote": text}, "b": None})
            continue
        ident, kind, other, quote = label
        contradictions.append({
            "id": ident, "kind": kind,
            "a": {"doc_id": doc_id, "quote": text}, "b": {"doc_id": other, "quote": quote},
        })  # fmt: skip
    contradictions += [dict(c) for c in DEMO_CONTRADICTIONS]
    return {"as_of": AS_OF, "contradictions": contradictions, "distractors": distractors}


def _doc_id(file: Path) -> str:
    m = re.search(r"^doc_id:\s*(\S+)", file.read_text(encoding="utf-8"), re.M)
    assert m, file
    return m.group(1)


def planted_collection(target: Path) -> dict[str, Any]:
    """A copy of the demo collection at `target` with the contradictions planted; the labels."""
    from tether.evaluation.questions import demo_collection

    shutil.copytree(demo_collection(), target)
    return plant_contradictions(target)


# ------------------------------------------------------------------ scoring


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def quote_overlaps(found: str, labelled: str) -> bool:
    """True when one text holds most (`QUOTE_SHARE`) of the other's words."""
    f, g = _words(found), _words(labelled)
    if not f or not g:
        return False
    common = len(f & g)
    return common >= QUOTE_SHARE * len(g) or common >= QUOTE_SHARE * len(f)


def _side_matches(c: Contradiction, a: dict[str, Any], b: dict[str, Any] | None) -> bool:
    for x, y in ((c.a, c.b), (c.b, c.a)):
        if x.doc_id != a["doc_id"] or not quote_overlaps(x.text, a["quote"]):
            continue
        if b is None or (y.doc_id == b["doc_id"] and quote_overlaps(y.text, b["quote"])):
            return True
    return False


def score(found: list[Contradiction], labels: dict[str, Any]) -> dict[str, Any]:
    """Precision, recall, what matched what, and the distractors found."""
    labelled = labels["contradictions"]
    matched_found = [
        i
        for i, c in enumerate(found)
        if any(_side_matches(c, lab["a"], lab["b"]) for lab in labelled)
    ]
    matched_labels = [
        lab["id"] for lab in labelled if any(_side_matches(c, lab["a"], lab["b"]) for c in found)
    ]
    hits = [
        d["id"] for d in labels.get("distractors", [])
        if any(_side_matches(c, d["a"], d.get("b")) for c in found)
    ]  # fmt: skip
    return {
        "found": len(found),
        "labelled": len(labelled),
        "matched_found": len(matched_found),
        "matched_labels": matched_labels,
        "missed": [lab["id"] for lab in labelled if lab["id"] not in matched_labels],
        "precision": len(matched_found) / len(found) if found else 1.0,
        "recall": len(matched_labels) / len(labelled) if labelled else 1.0,
        "distractors_found": hits,
        "unmatched": [c for i, c in enumerate(found) if i not in matched_found],
    }


def ingest(collection: Path, index: Path) -> Any:
    """A SqliteStore of `collection` at `index`, with chunk and sentence vectors."""
    from tether.app import shared_models
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    store = SqliteStore(index)
    report = sync(store, collection, embedder=shared_models().embedder(), sentences=True)
    assert report.committed, report.problems
    return store


def run(store: Any, labels: dict[str, Any]) -> tuple[dict[str, Any], float, list[Contradiction]]:
    start = time.perf_counter()
    found = find_contradictions(store, date.fromisoformat(labels["as_of"]))
    seconds = time.perf_counter() - start
    return score(found, labels), seconds, found


def _show(c: Contradiction) -> str:
    return (f"[{c.kind}] {c.score:.2f} {c.subject!r}: {c.detail}\n"
            f"    {c.a.doc_id}: {c.a.text[:150]!r}\n    {c.b.doc_id}: {c.b.text[:150]!r}")  # fmt: skip


class _Merged:
    """Several indexes read as one (what the finder reads: chunks and sentence vectors), to
    time it on a collection of ~2,000 chunks made of two manuals."""

    def __init__(self, stores: list[Any]) -> None:
        self.stores = stores

    def chunks(self) -> list[Any]:
        return [c for s in self.stores for c in s.chunks()]

    def has_vectors(self) -> bool:
        return all(s.has_vectors() for s in self.stores)

    def sentence_vectors(self, chunk_ids: Any) -> dict[str, Any]:
        ids = list(chunk_ids)
        return {k: v for s in self.stores for k, v in s.sentence_vectors(ids).items()}

    def vectors_of(self, chunk_ids: Any) -> dict[str, Any]:
        ids = list(chunk_ids)
        return {k: v for s in self.stores for k, v in s.vectors_of(ids).items()}

    def close(self) -> None:
        for s in self.stores:
            s.close()


def timing(index: str, as_of: date) -> tuple[int, float, int]:
    """(chunks in force, seconds, findings) of the finder on an existing index (several
    joined by "+" are read as one)."""
    from tether.stores.sqlite import SqliteStore

    store = _Merged([SqliteStore(Path(p)) for p in str(index).split("+")])
    chunks = sum(1 for c in store.chunks() if c.meta.in_force(as_of))
    start = time.perf_counter()
    found = find_contradictions(store, as_of)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    store.close()
    return chunks, seconds, len(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path)
    parser.add_argument("--labels", type=Path)
    parser.add_argument("--index", type=Path, help="an index of --collection (else built)")
    parser.add_argument("--timing", nargs="*", default=[], help="indexes to time (a+b: joined)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    load_before = load_average()
    os.environ.setdefault("TETHER_VECTOR_CACHE", "off")
    with tempfile.TemporaryDirectory() as tmp:
        if args.collection is not None:
            if args.labels is None:
                parser.error("--collection needs --labels")
            labels = json.loads(args.labels.read_text(encoding="utf-8"))
            store = ingest(args.collection, args.index or Path(tmp) / "index.sqlite")
            result, seconds, found = run(store, labels)
            _print(result, seconds, found, len(store.chunks()))
            return 0
        labels = planted_collection(Path(tmp) / "collection")
        store = ingest(Path(tmp) / "collection", Path(tmp) / "index.sqlite")
        result, seconds, found = run(store, labels)
        chunks = len(store.chunks())
        _print(result, seconds, found, chunks)
    times = [(p, *timing(p, date.fromisoformat(AS_OF))) for p in args.timing]
    for p, n, s, k in times:
        print(f"timing {p}: {n} chunks, {s:.1f} s, {k} findings")
    _write(args.out, result, seconds, chunks, times, load_before)
    return 0


def _print(result: dict[str, Any], seconds: float, found: list[Contradiction], chunks: int) -> None:
    print(f"{len(found)} found in {seconds:.1f} s ({chunks} chunks); precision "
          f"{result['precision']:.2f}, recall {result['recall']:.2f}; missed {result['missed']};"
          f" distractors found {result['distractors_found']}")  # fmt: skip
    for c in found:
        print(_show(c))


def _write(
    out: Path, result: dict[str, Any], seconds: float, chunks: int,
    times: list[tuple[str, int, float, int]], load_before: float | None = None,
) -> None:  # fmt: skip
    lines = [
        "# Contradiction finder (`tether.health.contradictions`)",
        "",
        "`python bench/health/bench_health.py` — the bundled demo collection with contradictions "
        "planted in a copy (`plant_contradictions`: 6 planted, 4 number and 2 rule, plus 2 "
        "planted look-alikes that are not contradictions) and the demo's own 2 contradictions "
        f"(difficulties.md section 7); as_of {AS_OF}. Tuned on: this set.",
        "",
        "| Set | Labelled | Found | Matched | Precision | Recall | Distractors found | Seconds |",
        "|---|---|---|---|---|---|---|---|",
        f"| demo + planted (tuned on) | {result['labelled']} | {result['found']} | "
        f"{result['matched_found']} | {result['precision']:.2f} | {result['recall']:.2f} | "
        f"{', '.join(result['distractors_found']) or 'none'} | {seconds:.1f} ({chunks} chunks) |",
        "| the labelled collections (bench/health/) | see bench/results/health.md"
        " (bench/health/bench_health_report.py) | | | | | | |",
        "",
        f"Missed: {', '.join(result['missed']) or 'none'}.",
        "",
    ]
    if result["unmatched"]:
        lines += ["Found and not labelled:", ""]
        lines += [
            f"- {c.kind}: {c.a.doc_id} / {c.b.doc_id}: {c.detail}" for c in result["unmatched"]
        ]
        lines.append("")
    lines += [
        "D2 (help FAQ: Pine Points never expire *as long as your Pine Club account stays "
        "open*, against the rewards policy's 24 months) is a true contradiction of the demo "
        "that the finder misses by design: a condition stated on one side only stops a "
        "finding (the issue lists conditions among what is not a contradiction). D1 (help "
        "FAQ $75 against delivery v5 $99) is found.",
        "",
    ]
    if times:
        lines += ["Run time on indexed manuals (2-core machine, shared):", "",
                  "| Index | Chunks in force | Seconds | Findings |", "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {p} | {n} | {s:.1f} | {k} |" for p, n, s, k in times]
        lines += [
            "",
            "The manuals are not policy collections: their findings (not labelled) are mostly "
            "not contradictions (numbers of code examples, per-setting defaults written alike "
            'under two headings, "This syntax is not standard" against another command\'s '
            "standard syntax). The times are what counts there: the goal is 2 minutes for "
            "2,000 chunks on 2 cores.",
            "",
        ]
    figures = {"result": result, "seconds": seconds, "chunks": chunks, "timing": times}
    write_page_result(out, lines, load_before=load_before, figures=figures)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
