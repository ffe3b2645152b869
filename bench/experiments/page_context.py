"""Does a page's one-line summary in every chunk's embedding text help dense search? (issue
26, item 3; measured and not adopted).

`python bench/experiments/page_context.py NAME [NAME ...] [--root /work/corpora]` re-embeds every chunk
of an ingested manual (`bench/corpora/setup.py`) with its page's summary between the heading
line and the text (the first sentence of six words or more that is not the title, a heading,
a table of contents or a link bar: a man page's NAME line, a Texinfo node's first sentence),
then scores the manual's questions by dense search (cosine over all chunks, top 5) with the
stored vectors and with the new ones. Writes nothing into the index; the new vectors are
cached in the system's temporary folder. Prints hit@5, MRR and paraphrase hit@5 both ways.

What it cannot do: it measures dense search alone (the hybrid and the rerank would mix in
BM25 and sentence vectors, which the summary does not touch), without filters, on the
questions of tuned-on manuals only (a held-out manual must not be tried on before its run).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from tether.app import shared_models
from tether.evaluation.questions import load_questions, matches
from tether.stores.sqlite import SqliteStore
from tether.text import embed_text, sentences, words
from tether.types import Chunk

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_WORDS = 6


def summary(chunks: list[Chunk]) -> str:
    """The page's first sentence of `SUMMARY_WORDS` words or more that is not a heading."""
    title = chunks[0].meta.title.strip().lower()
    for c in chunks:
        heads = {h.strip().lower() for h in c.heading_path} | {title}
        for line in c.text.split("\n"):
            s = line.strip()
            if s.lower() in heads or len(words(s)) < SUMMARY_WORDS or s.startswith(("|", "[", "►")):
                continue
            for a, b in sentences(s):
                if len(words(s[a:b])) >= SUMMARY_WORDS:
                    return s[a:b].strip()
    return ""


def measure(name: str, root: Path) -> None:
    store = SqliteStore(root / name / ".tether" / "index.sqlite")
    embedder = shared_models().embedder("auto")
    chunks = {c.chunk_id: c for c in store.chunks()}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks.values():
        by_doc.setdefault(c.doc_id, []).append(c)
    pages = {d: summary(sorted(cs, key=lambda c: c.chunk_id)) for d, cs in by_doc.items()}
    ids, stored = store.vectors()
    texts = []
    for i in ids:
        c, line = chunks[i], pages[chunks[i].doc_id]
        head, _, body = embed_text(c).partition("\n")
        texts.append(f"{head}\n{line}\n{body}" if line and line not in c.text else embed_text(c))
    cache = Path(tempfile.gettempdir()) / f"tether-page-context-{name}-{len(ids)}.npy"
    if cache.is_file():
        new = np.load(cache)
    else:
        began = time.perf_counter()
        new = embedder.embed_passages(texts)
        print(f"{name}: {len(ids)} chunks re-embedded in {time.perf_counter() - began:.0f} s")
        np.save(cache, new)
    ranks: dict[str, list[int | None]] = {"stored": [], "with summary": []}
    kinds = []
    for q in load_questions(ROOT / "bench" / "corpora" / name / "questions.jsonl"):
        relevant = {
            c.chunk_id for r in q.relevant for c in by_doc.get(r.doc_id, []) if matches(c, r)
        }
        if not relevant:
            continue
        vector = embedder.embed_queries([q.question])[0]
        for key, matrix in (("stored", stored), ("with summary", new)):
            order = np.argsort(-(matrix @ vector))[:20]
            ranks[key].append(next((k for k, j in enumerate(order) if ids[j] in relevant), None))
        kinds.append(q.kind)
    for key, found in ranks.items():
        hit = [r is not None and r < 5 for r in found]
        mrr = [1 / (r + 1) if r is not None else 0.0 for r in found]
        para = [h for h, k in zip(hit, kinds, strict=True) if k == "paraphrase"]
        print(
            f"{name} {key}: dense hit@5 {np.mean(hit):.3f}, MRR {np.mean(mrr):.3f}, "
            f"paraphrase hit@5 {np.mean(para):.3f} ({len(hit)} questions, "
            f"load {os.getloadavg()[0]:.1f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--root", type=Path, default=Path("/work/corpora"))
    args = parser.parse_args()
    for name in args.names:
        measure(name, args.root)


if __name__ == "__main__":
    main()
