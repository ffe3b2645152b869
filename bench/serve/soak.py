"""A bounded soak of one index shared by several processes (run on demand:
`python bench/serve/soak.py [--minutes 5] [--workers 4]`; writes bench/results/soak.md, and its JSON
with the run's date, commit, machine, load and figures).

Each worker process loops, until the deadline or its operation budget, over random:
ingests (a Workspace that writes), edits (new text, sometimes the access label flipped),
deletions and additions of files in the shared folder, public searches and public asks (BM25
and the extractive answerer: no model loads) through a long-lived read-only Workspace, so its
caches must follow the other processes' commits. Every document states its label in its text
(`PUBLIC-NOTE` or `STAFF-SECRET`), so a public read that returns staff content is detected in
the hits and in the whole JSON of an answer. The main process runs `PRAGMA integrity_check`
every 20 s; at the end it ingests once more and checks that the index matches the folder
(same files, each at its last revision and access label).

What it cannot do: it does not kill processes mid-write (tests/integration/test_store.py does), nor fill
the disk (tests/integration/test_store_errors.py does); it measures one machine's scheduling, so the
counts differ from run to run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, make_record, render_page, write_record

WORDS = (
    "return refund delivery warranty frame battery tent stove rental membership points gift"
    " card receipt order bike helmet wheel brake chain tune price discount window policy"
).split()
KINDS = {"ingest": 2, "edit": 4, "add": 1, "delete": 1, "search": 6, "ask": 3, "staff_search": 1}
MAX_OPS = 100_000  # per worker, whatever the deadline
LEAK = "STAFF-SECRET"


def document(doc_id: str, access: str, revision: str, rng: random.Random) -> str:
    """A Markdown file whose every section states its access label and revision."""
    label = "STAFF-SECRET" if access == "staff" else "PUBLIC-NOTE"
    sections = []
    for n in range(rng.randint(1, 4)):
        words = " ".join(rng.choices(WORDS, k=rng.randint(15, 60)))
        sections.append(f"## Part {n}\n\n{label} {revision}: {words}.\n")
    return (
        f"---\ndoc_id: {doc_id}\nversion: '1'\ntitle: {label} {doc_id}\naccess: {access}\n---\n\n"
        f"# {label} {doc_id}\n\n" + "\n".join(sections)
    )


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def seed(folder: Path, n: int, rng: random.Random) -> None:
    for i in range(n):
        access = "staff" if i % 2 else "public"
        write_atomically(folder / f"doc{i:03d}.md", document(f"doc{i:03d}", access, "R0", rng))


def public_leaks_in_hits(hits: list[Any]) -> int:
    return sum(
        1
        for h in hits
        if h.chunk.meta.access != "public" or LEAK in h.chunk.text or LEAK in h.chunk.meta.title
    )


def worker(n: int, folder: str, index: str, deadline: float, lock_timeout: float, out: Any) -> None:
    """One process: random operations until `deadline`; puts its tallies on `out`."""
    from tether.answering.pipeline import AskOptions
    from tether.app import SearchOptions, Workspace
    from tether.config import settings_from_mapping
    from tether.errors import TetherError
    from tether.schemas import WireAskResult

    rng = random.Random(1000 + n)
    settings = settings_from_mapping(
        {"TETHER_LOCK_TIMEOUT": str(lock_timeout), "TETHER_PROVIDER": "extractive"}
    )
    reader = Workspace.open(index, settings=settings)
    writer = Workspace.open(index, settings=settings)
    ops: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    leaks: list[str] = []
    seen: Counter[str] = Counter()  # what the reads returned (the detector's chance to fire)
    times: dict[str, list[float]] = defaultdict(list)
    root = Path(folder)
    made = 0
    for _ in range(MAX_OPS):
        if time.time() >= deadline:
            break
        kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
        start = time.perf_counter()
        try:
            files = sorted(root.glob("*.md"))
            if kind == "ingest":
                writer.ingest(root, embed=False)
            elif kind == "edit" and files:
                path = rng.choice(files)
                access = rng.choice(["public", "staff"])
                revision = f"R{n}-{ops['edit']}"
                write_atomically(path, document(path.stem, access, revision, rng))
            elif kind == "add":
                made += 1
                doc_id = f"w{n}-{made}"
                access = rng.choice(["public", "staff"])
                write_atomically(root / f"{doc_id}.md", document(doc_id, access, "R0", rng))
            elif kind == "delete" and len(files) > 10:
                rng.choice(files).unlink(missing_ok=True)
            elif kind == "search":
                query = " ".join(rng.choices([*WORDS, "secret", "staff"], k=3))
                hits = reader.search(query, SearchOptions(k=8, as_of=None, method="bm25"))
                seen["public hits"] += len(hits)
                if public_leaks_in_hits(hits):
                    leaks.append(f"search {query!r}")
            elif kind == "staff_search":  # the staff audience does see the labelled content
                query = " ".join(rng.choices(WORDS, k=3))
                hits = reader.search(
                    query, SearchOptions(k=8, as_of=None, method="bm25", audience="staff")
                )
                seen["staff hits with STAFF-SECRET"] += sum(LEAK in h.chunk.text for h in hits)
            elif kind == "ask":
                question = f"What is the {rng.choice(WORDS)} {rng.choice(WORDS)} policy?"
                result = reader.ask(question, AskOptions(method="bm25", as_of=None, floor=0.0))
                seen["asks answered"] += not result.refused
                seen["asks refused"] += result.refused
                if LEAK in WireAskResult.from_ask_result(result).model_dump_json():
                    leaks.append(f"ask {question!r}")
            ops[kind] += 1
        except TetherError as exc:
            errors[f"{kind}: {' '.join(str(exc).split()[:5])}"] += 1
        except FileNotFoundError:
            ops[kind] += 1  # another worker deleted the file first: a normal race
        except Exception as exc:  # a defect: counted, and its traceback kept
            errors[f"{kind}: CRASH {type(exc).__name__}: {exc}"[:160]] += 1
            traceback.print_exc(file=sys.stderr)
        times[kind].append(time.perf_counter() - start)
    reader.close()
    writer.close()
    out.put(
        {"ops": dict(ops), "errors": dict(errors), "leaks": leaks, "times": dict(times),
         "seen": dict(seen)}
    )  # fmt: skip


def integrity(index: Path) -> str:
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=30)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


def matches_folder(folder: Path, index: Path) -> list[str]:
    """What differs between the folder and the index (empty when they match)."""
    from tether.stores import open_store

    store = open_store(index)
    indexed = {d.meta.source: d for d in store.documents()}
    problems = []
    files = {p.name: p.read_text() for p in folder.glob("*.md")}
    for name in sorted(set(files) ^ set(indexed)):
        problems.append(f"{name}: {'not indexed' if name in files else 'indexed, not on disk'}")
    for name in sorted(set(files) & set(indexed)):
        doc = indexed[name]
        text = store.document_text(doc.meta.doc_id, doc.meta.version)
        access = "staff" if "access: staff" in files[name] else "public"
        body = files[name].split("---", 2)[2].strip()
        if doc.meta.access != access or body.split("\n")[-1].strip() not in text:
            problems.append(f"{name}: indexed access or text differs from the file")
    store.close()
    return problems


def run(minutes: float, workers: int, docs: int, lock_timeout: float) -> dict[str, Any]:
    from tether.app import Workspace
    from tether.config import settings_from_mapping

    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="tether-soak-"))
    folder, index = tmp / "docs", tmp / "index.sqlite"
    folder.mkdir()
    seed(folder, docs, rng)
    settings = settings_from_mapping({})
    Workspace.open(index, settings=settings).ingest(folder, embed=False)
    started = time.time()
    deadline = started + minutes * 60
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(n, str(folder), str(index), deadline, lock_timeout, out))
        for n in range(workers)
    ]
    for p in procs:
        p.start()
    checks: Counter[str] = Counter()
    while time.time() < deadline and any(p.is_alive() for p in procs):
        time.sleep(min(20, max(0.0, deadline - time.time())))
        checks[integrity(index)] += 1
    results = [out.get(timeout=120 + lock_timeout) for _ in procs]
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.terminate()
    report = Workspace.open(index, settings=settings).ingest(folder, embed=False)
    checks[integrity(index)] += 1
    return {
        "asked_minutes": minutes,
        "minutes": round((time.time() - started) / 60, 2),
        "workers": workers,
        "docs_at_start": docs,
        "docs_at_end": len(list(folder.glob("*.md"))),
        "results": results,
        "integrity": dict(checks),
        "final_sync": {"added": len(report.added), "updated": len(report.updated),
                       "removed": len(report.removed), "problems": len(report.problems)},
        "mismatches": matches_folder(folder, index),
    }  # fmt: skip


def render(r: dict[str, Any]) -> str:
    ops: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    times: dict[str, list[float]] = defaultdict(list)
    leaks: list[str] = []
    seen: Counter[str] = Counter()
    for w in r["results"]:
        seen.update(w["seen"])
        ops.update(w["ops"])
        errors.update(w["errors"])
        leaks += w["leaks"]
        for k, v in w["times"].items():
            times[k] += v
    lines = [
        "# Soak: one index, several processes",
        "",
        f"`python bench/serve/soak.py --minutes {r['asked_minutes']:g} --workers {r['workers']}`:"
        f" {r['minutes']} minutes, {r['workers']} processes, {r['docs_at_start']} documents at"
        f" the start ({r['docs_at_end']} at the end), half of them staff-only; BM25 and the"
        " extractive answerer (no model loaded).",
        "",
        "| operation | done | errors | median ms | p95 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        t = sorted(times.get(kind, [0.0]))
        p95 = t[min(len(t) - 1, int(0.95 * len(t)))]
        failed = sum(n for e, n in errors.items() if e.startswith(f"{kind}:"))
        lines.append(
            f"| {kind} | {ops[kind]} | {failed} | {statistics.median(t) * 1000:.1f}"
            f" | {p95 * 1000:.1f} |"
        )
    lines += ["", "Errors by kind (one line each, as the user would see them):", ""]
    lines += [f"- {n} × {e}" for e, n in errors.most_common()] or ["- none"]
    lines += [
        "",
        "What the reads returned: " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items())),
        "",
        f"- public reads that returned staff content: **{len(leaks)}**"
        + (f" ({'; '.join(leaks[:5])})" if leaks else ""),
        f"- `PRAGMA integrity_check`: {json.dumps(r['integrity'])}",
        f"- final ingest: {json.dumps(r['final_sync'])}; index against the folder:"
        f" {'matches' if not r['mismatches'] else '; '.join(r['mismatches'][:5])}",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--lock-timeout", type=float, default=30.0)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parents[1] / "results" / "soak.md"
    )
    args = parser.parse_args()
    load_before = load_average()
    result = run(args.minutes, args.workers, args.docs, args.lock_timeout)
    record = make_record(args.out.stem, result, load_before)
    write_record(args.out.with_suffix(".json"), record)
    text = render_page(record, lambda r: render(r["figures"]))
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
