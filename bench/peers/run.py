"""The peers benchmark: tether side by side with LlamaIndex, Haystack and txtai on the same
documents, questions, embedder and machine (`make bench-peers`; results in
bench/results/peers.md, peers.json (a record: the run's date, commit, machine, load and
figures) and peers.html).

Each system runs in its own process (so its peak memory is its own): it is built over the
files tether indexed (its own parsing and chunking, and again over tether's chunks with
tether's vectors, to separate chunking from ranking), asked every scorable question at depth
50, then asked again at k = 5 for the latency figures. The parent scores every ranking with
the same rules (see `common.py`). Needs the `peers` extra (`pip install -e '.[peers]'`).

`--answers N` then compares answers with citations on N questions (`answers.py`: tether and
LlamaIndex's CitationQueryEngine with the same local model behind one loopback endpoint; also
`make bench-peers-answers`); a run without it keeps the answers section of the run before.

What it cannot do: timings are medians on whatever else the machine was running (the load is
recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.harness import load_average, make_record, read_figures, render_page, write_record
from bench.peers.common import (
    DEPTH,
    ROOT,
    K,
    Passage,
    QuestionSet,
    Reference,
    question_sets,
    score_question,
)

# ingest times measured here are of embedding, never of vectors kept by an earlier run
os.environ.setdefault("TETHER_VECTOR_CACHE", "off")

SYSTEMS = (
    "tether-bm25", "tether-dense", "tether-hybrid", "tether-rerank",
    "llamaindex", "llamaindex@tether-chunks", "haystack", "haystack@tether-chunks",
    "txtai@tether-chunks",
)  # fmt: skip
MODULES = {
    "tether": "tether_system.py", "llamaindex": "llamaindex_system.py",
    "haystack": "haystack_system.py", "txtai": "txtai_system.py",
}  # fmt: skip


def code_lines(path: Path) -> int:
    """Lines of code in a system's module: no blank lines, comments or module docstring."""
    text = path.read_text()
    if text.startswith('"""'):
        text = text[text.index('"""', 3) + 3 :]
    return sum(1 for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#"))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _tether_chunks(store) -> list[tuple[str, str, object]]:
    from tether.text import embed_text

    ids, matrix = store.vectors()
    row = {cid: i for i, cid in enumerate(ids)}
    return [
        (c.meta.source, embed_text(c), matrix[row[c.chunk_id]])
        for c in store.chunks() if c.chunk_id in row
    ]  # fmt: skip


def _build(system: str, qset: QuestionSet, index: Path, store, emb) -> tuple[object, dict]:
    """The system's searcher and its build figures."""
    from bench.peers.common import Reference as _R  # noqa: F401 (same process)

    began = time.perf_counter()
    figures: dict = {}
    if system.startswith("tether-"):
        from bench.peers.systems.tether_system import TetherSearch

        return TetherSearch(qset.folder, index, system.split("-", 1)[1]), figures
    sources = Reference(store, qset).sources()
    if system.endswith("@tether-chunks"):
        given = _tether_chunks(store)
        figures["passages"] = len(given)
        if system.startswith("llamaindex"):
            from bench.peers.systems.llamaindex_system import LlamaSearch, given_nodes

            return LlamaSearch(given_nodes(given), emb, DEPTH), figures
        if system.startswith("haystack"):
            from bench.peers.systems.haystack_system import HaystackSearch, given_docs

            return HaystackSearch(given_docs(given), emb, DEPTH), figures
        from bench.peers.systems.txtai_system import TxtaiSearch

        return TxtaiSearch(given, emb, DEPTH), figures
    if system == "llamaindex":
        from bench.peers.systems.llamaindex_system import LlamaSearch, parse

        nodes = parse(qset.folder, sources)
        figures["parse_chunk_s"] = time.perf_counter() - began
        searcher = LlamaSearch(nodes, emb, DEPTH)
        figures["passages"] = len(nodes)
    else:
        from bench.peers.systems.haystack_system import HaystackSearch, embed, parse

        docs = parse(qset.folder, sources)
        figures["parse_chunk_s"] = time.perf_counter() - began
        searcher = HaystackSearch(embed(docs, emb), emb, DEPTH)
        figures["passages"] = len(docs)
    figures["ingest_s"] = time.perf_counter() - began
    return searcher, figures


def _time_query_embedding() -> list[float]:
    """Every tether embedder class's `embed_queries` adds its seconds to the returned cell:
    every system embeds its queries with the same e5 (tether's own embedder, given to each
    peer), so a query's time less that is what the pipeline itself costs."""
    from tether.embeddings import embedders

    spent = [0.0]
    for cls in vars(embedders).values():
        if isinstance(cls, type) and "embed_queries" in vars(cls):
            original = vars(cls)["embed_queries"]

            def timed(self, texts, _original=original):  # type: ignore[no-untyped-def]
                began = time.perf_counter()
                try:
                    return _original(self, texts)
                finally:
                    spent[0] += time.perf_counter() - began

            cls.embed_queries = timed
    return spent


def worker(system: str, set_name: str, work: Path, out: Path) -> None:
    from tether import Collection
    from tether.app import shared_models

    qset = question_sets(work, [set_name])[0]
    index = work / f"{set_name}.sqlite"
    store = Collection(qset.folder, index=index).store
    ref = Reference(store, qset)
    emb = shared_models().embedder()
    spent = _time_query_embedding()
    searcher, figures = _build(system, qset, index, store, emb)
    scorable = [q for q in qset.questions if ref.usable(q)]
    rankings: dict[str, list[tuple[str, str]]] = {}
    for q in scorable:
        audience = qset.audience or q.audience or "public"
        found = searcher.search(q.question, DEPTH, as_of=q.as_of, audience=audience)
        rankings[q.id] = [(p.source, p.text) for p in found]
    times, embedding = [], []
    for q in scorable:
        audience = qset.audience or q.audience or "public"
        spent[0] = 0.0
        began = time.perf_counter()
        searcher.search(q.question, K, as_of=q.as_of, audience=audience)
        times.append(time.perf_counter() - began)
        embedding.append(spent[0])
    rest = [t - e for t, e in zip(times, embedding, strict=True)]
    figures |= {
        "p50_ms": 1000 * statistics.median(times) if times else 0.0,
        "p95_ms": 1000 * pct(times, 95) if times else 0.0,
        "embed_p50_ms": 1000 * statistics.median(embedding) if embedding else 0.0,
        "rest_p50_ms": 1000 * statistics.median(rest) if rest else 0.0,
        "rest_p95_ms": 1000 * pct(rest, 95) if rest else 0.0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    out.write_text(json.dumps({"figures": figures, "rankings": rankings}))


def tether_ingest(qset: QuestionSet, work: Path, reuse: bool = False) -> dict:
    """Build tether's index of the set (kept for the workers) and time a lexical-only ingest;
    `reuse` keeps an index built by an earlier run (no ingest figures then)."""
    from tether import Collection

    index = work / f"{qset.name}.sqlite"
    if reuse and index.exists():
        return {"passages": len(Collection(qset.folder, index=index).store.chunks())}
    lexical = work / f"{qset.name}-lexical.sqlite"
    for p in (index, lexical):
        p.unlink(missing_ok=True)
    began = time.perf_counter()
    Collection(qset.folder, index=lexical).ingest(embed=False)
    parse = time.perf_counter() - began
    began = time.perf_counter()
    report = Collection(qset.folder, index=index).ingest()
    return {"parse_chunk_s": parse, "ingest_s": time.perf_counter() - began,
            "passages": report.chunks_written}  # fmt: skip


def score(qset: QuestionSet, work: Path, rankings: dict) -> dict:
    """Mean metrics per rule, overall and per kind and language."""
    from tether import Collection

    store = Collection(qset.folder, index=work / f"{qset.name}.sqlite").store
    ref = Reference(store, qset)
    rows = []
    for q in qset.questions:
        if q.id not in rankings:
            continue
        m = score_question(ref, q, [Passage(s, t) for s, t in rankings[q.id]])
        if m is not None:
            rows.append((q, m))

    def mean(sel, rule, metric):
        vals = [m[rule][metric] for q, m in rows if sel(q)]
        return (sum(vals) / len(vals) if vals else 0.0), len(vals)

    out: dict = {"n": len(rows), "overall": {}, "by_kind": {}, "by_language": {}}
    cells = [("location", "recall"), ("location", "mrr"), ("location", "ndcg"),
             ("location", "hit"), ("text", "hit"), ("text", "mrr"), ("budget", "hit"),
             ("words_top5", "words")]  # fmt: skip
    for rule, metric in cells:
        out["overall"][f"{rule}.{metric}"] = mean(lambda q: True, rule, metric)[0]
    for key, attr in (("by_kind", "kind"), ("by_language", "language")):
        for g in sorted({getattr(q, attr) for q, _ in rows}):
            r, n = mean(lambda q, g=g, a=attr: getattr(q, a) == g, "location", "recall")
            out[key][g] = {"n": n, "location.recall": r}
    return out


def run_set(qset: QuestionSet, work: Path, systems: list[str], reuse: bool) -> dict:
    print(f"[{qset.name}] tether ingest …", file=sys.stderr, flush=True)
    results: dict = {"tether ingest": tether_ingest(qset, work, reuse), "systems": {}}
    for system in systems:
        print(f"[{qset.name}] {system} …", file=sys.stderr, flush=True)
        out = work / f"{qset.name}-{system}.json"
        cmd = [sys.executable, __file__, "--worker", system, "--set", qset.name,
               "--work", str(work), "--out", str(out)]  # fmt: skip
        began = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            results["systems"][system] = {"error": done.stderr.strip().splitlines()[-1:]}
            continue
        data = json.loads(out.read_text())
        data["figures"]["wall_s"] = time.perf_counter() - began
        results["systems"][system] = {"figures": data["figures"],
                                      "scores": score(qset, work, data["rankings"])}  # fmt: skip
    return results


def _row(name: str, r: dict, cols: list[str]) -> str:
    if "error" in r:
        return f"| {name} | failed: {' '.join(r['error'])[:120]} |"
    o = r["scores"]["overall"]
    return f"| {name} | " + " | ".join(f"{o[c]:.3f}" if c != "words_top5.words" else f"{o[c]:.0f}"
                                      for c in cols) + " |"  # fmt: skip


def render(record: dict) -> str:
    """The page of a run (retrieval; `answers.write` adds the answers), from its JSON record
    (`harness.make_record`: the sets' figures, and "answers" once answers.py wrote them)."""
    sets = {k: v for k, v in record["figures"].items() if k != "answers"}
    return report(sets, (record["load"]["before"], record["load"]["after"]))


def report(all_results: dict, load: tuple[float, float]) -> str:
    cols = ["location.recall", "location.mrr", "location.ndcg", "location.hit", "text.hit",
            "text.mrr", "budget.hit", "words_top5.words"]  # fmt: skip
    heads = ["recall@5", "MRR", "nDCG@5", "hit@5", "hit@5 (text rule)", "MRR (text rule)",
             "hit within 1,000 words", "words in top 5"]  # fmt: skip
    lines = [
        "# tether and its peers: the same documents, questions, embedder and machine",
        "",
        f"Run on {date.today().isoformat()}, {platform.system().lower()}, "
        f"{len(os.sched_getaffinity(0))} cores; load average {load[0]:.1f} at the start and"
        f" {load[1]:.1f} at the end (on 2 cores, above 1 means other jobs shared the machine:"
        " read timings as pessimistic). Produced by `bench/peers/run.py`; the rules are in"
        " `bench/peers/common.py`. Every system is given tether's e5 embedder. Peers'"
        " results are filtered for each question's version date and audience after ranking"
        " (depth 50); tether filters before ranking.",
        "",
    ]
    for set_name, res in all_results.items():
        ti = res["tether ingest"]
        some = next((s for s in res["systems"].values() if "scores" in s), None)
        n = some["scores"]["n"] if some else 0
        lines += [
            f"## {set_name} ({n} scored questions)",
            "",
            "### Retrieval (k = 5)",
            "",
            "| system | " + " | ".join(heads) + " |",
            "|---" * (len(heads) + 1) + "|",
        ]
        for name, r in res["systems"].items():
            lines.append(_row(name, r, cols))
        best_peer = max(
            (
                (r["scores"]["overall"]["location.recall"], n2)
                for n2, r in res["systems"].items()
                if "scores" in r and not n2.startswith("tether")
            ),
            default=(0.0, ""),
        )
        best_t = max(
            (
                (r["scores"]["overall"]["location.recall"], n2)
                for n2, r in res["systems"].items()
                if "scores" in r and n2.startswith("tether")
            ),
            default=(0.0, ""),
        )
        if best_peer[0] and best_t[0]:
            lines += [
                "",
                f"Ratio of recall@5, best tether method ({best_t[1]}) / best peer"
                f" ({best_peer[1]}): {best_t[0] / best_peer[0]:.2f}.",
            ]
        lines += ["", "### recall@5 per kind and language", ""]
        groups = [(k, g) for k in ("by_kind", "by_language")
                  for g in (some["scores"][k] if some else {})]  # fmt: skip
        names = [n2 for n2, r in res["systems"].items() if "scores" in r]
        lines += ["| group | n | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
        for k, g in groups:
            cnt = some["scores"][k][g]["n"]
            vals = " | ".join(f"{res['systems'][x]['scores'][k][g]['location.recall']:.2f}"
                              for x in names)  # fmt: skip
            lines.append(f"| {k[3:]}: {g} | {cnt} | {vals} |")
        lines += [
            "",
            "### Cost",
            "",
            "Query times embed each query afresh with the same e5"
            " (its median is the embedding column); the last two columns are the rest:"
            " what each pipeline itself adds.",
            "",
            "| system | passages | ingest s (parse + chunk) |"
            " ingest s (with embedding) | query p50 ms | query p95 ms | peak memory MB |"
            " lines of user code | query embedding p50 ms | without it p50 ms |"
            " without it p95 ms |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, r in res["systems"].items():
            if "figures" not in r:
                continue
            f = r["figures"]
            if name.startswith("tether"):
                f = {**f, **ti}
            mod = MODULES[name.split("-")[0].split("@")[0]]
            lines.append(
                f"| {name} | {f.get('passages', '')} | "
                + (f"{f['parse_chunk_s']:.1f}" if "parse_chunk_s" in f else "given")
                + " | "
                + (f"{f['ingest_s']:.1f}" if "ingest_s" in f else "given")
                + f" | {f['p50_ms']:.1f} | {f['p95_ms']:.1f} | {f['peak_rss_mb']:.0f} |"
                f" {code_lines(Path(__file__).parent / 'systems' / mod)} |"
                + (
                    f" {f['embed_p50_ms']:.1f} | {f['rest_p50_ms']:.1f} | {f['rest_p95_ms']:.1f} |"
                    if "rest_p50_ms" in f
                    else " | | |"
                )
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def chart(all_results: dict, path: Path) -> None:
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(all_results), figsize=(6 * len(all_results), 4), squeeze=False)
    for ax, (set_name, res) in zip(axes[0], all_results.items(), strict=True):
        names = [n for n, r in res["systems"].items() if "scores" in r]
        vals = [res["systems"][n]["scores"]["overall"]["location.recall"] for n in names]
        ax.barh(names, vals, color=["#2a6" if n.startswith("tether") else "#888" for n in names])
        ax.set_xlim(0, 1)
        ax.set_title(f"{set_name}: recall@5")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    img = base64.b64encode(buf.getvalue()).decode()
    md = (path.with_suffix(".md")).read_text()
    path.write_text(
        "<!doctype html><meta charset=utf-8><title>tether and its peers</title>"
        f"<img alt='recall@5 per system' src='data:image/png;base64,{img}'>"
        f"<pre>{md.replace('&', '&amp;').replace('<', '&lt;')}</pre>"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="bundled,larkfield")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--work", type=Path, default=Path("/tmp/tether-peers"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "peers.md")
    ap.add_argument("--reuse", action="store_true", help="keep tether's indexes from a run before")
    ap.add_argument(
        "--answers",
        type=int,
        default=0,
        metavar="N",
        help="also compare answers with citations on N questions (answers.py)",
    )
    ap.add_argument(
        "--server-python",
        default=sys.executable,
        help="for --answers: a Python with xllamacpp (default: this one)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--set", help=argparse.SUPPRESS)
    ap.add_argument("--out-json", dest="out_json", type=Path, help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.worker:
        return worker(args.worker, args.set, args.work, args.out)
    args.work.mkdir(parents=True, exist_ok=True)
    load0 = load_average()
    results = {
        qset.name: run_set(qset, args.work, args.systems.split(","), args.reuse)
        for qset in question_sets(args.work, args.sets.split(","))
    }
    from bench.peers import answers

    js = args.out.with_suffix(".json")
    before = read_figures(js).get("answers") if js.exists() else None
    record = make_record(args.out.stem, dict(results), load0)
    text = render_page(record, render)
    notes = args.out.with_name("peers_notes.md")  # the reading of the figures, kept by hand
    if notes.exists():
        text += "\n" + notes.read_text(encoding="utf-8")
    args.out.write_text(text)
    write_record(js, record)
    if args.answers:
        before = answers.run(args.answers, args.work, args.server_python, ("json", "select"))
    if before:  # this run's answers, or the run before's
        answers.write(before, args.out, html=False)
    chart(results, args.out.with_suffix(".html"))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
