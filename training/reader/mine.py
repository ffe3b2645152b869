"""Mine question ↔ passage pairs for the reader's relevance head from the retrieval sets the
registry allows (`format = "retrieval"`, role `train` for `reader`), with hard negatives.

`python training/reader/mine.py [--root DIR] [--headings N] [--out FILE]` reads, for each
member of those sets, its index (`ROOT/NAME/.tether/index.sqlite`, built by
`bench/corpora/setup.py` or, for `bundled`, `bench/retrieval/bench_real_corpora.py`; ROOT defaults to
`TETHER_CORPORA` or /work/corpora) and writes JSON Lines to FILE (default
`training/cache/mined-rank.jsonl`, not committed: the manuals' text is Debian's, not ours;
each collection's pairs are kept in `training/cache/mined/` and mined again only when its
index, its questions or the settings change):

- each labelled question: its labelled passages as `answers`; the rerank top 20's other
  candidates (none from a labelled passage's section) as `on_topic`, the first `--negatives`;
  one passage of another document outside the top 20 as `unrelated`;
- section headings as pseudo-questions (`--headings` per collection, chosen at random with a
  fixed seed): the section's first passage `answers`, other sections' passages in the heading's
  rerank list `on_topic`.

Every passage is written as the deep reranker reads it (`DeepReranker.evidence`: title and
headings first, then its sentences by the query's cosine), so training and use see the same
window. Each row carries `split`: `val` for a fifth of the questions (by a hash of the set and
question ID), which the trainer holds back and `bench/experiments/deep_choose.py` reads to choose the
depth and weight.

What it cannot do: an unlabelled candidate that also answers is written as `on_topic` (the
question sets label the passage the writer had in mind, not every one that answers); headings
are short, unlike questions; index entries and man pages' NAME lines (issue 44's other free
supervision) are not mined: the manuals here have no index pages in their page lists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import registry  # noqa: E402

from tether.app import retriever_for  # noqa: E402
from tether.evaluation.questions import (  # noqa: E402
    demo_questions,
    load_questions,
    question_filters,
)
from tether.evaluation.retrieval_eval import _Reachability  # noqa: E402
from tether.stores.sqlite import SqliteStore  # noqa: E402
from tether.types import Filters, Hit  # noqa: E402

OUT = registry.ROOT / "training" / "cache" / "mined-rank.jsonl"


def split_of(set_name: str, qid: str) -> str:
    h = int(hashlib.sha256(f"{set_name}:{qid}".encode()).hexdigest()[:8], 16)
    return "val" if h % 5 == 0 else "train"


def _hit(chunk) -> Hit:
    return Hit(chunk, 0.0, 0, "mine", {})


def mine_member(
    name: str, index: Path, questions: list, headings: int, negatives: int, rng: random.Random
) -> list[dict]:
    store = SqliteStore(index)
    retriever = retriever_for(store)
    deep = retriever.deep
    if deep is None:
        raise SystemExit("error: the reader cannot be loaded (see the log)")
    reach = _Reachability(store)
    chunks = list(store.chunks())
    by_id = {c.chunk_id: c for c in chunks}
    rows: list[dict] = []

    def emit(query: str, qid: str, kind: str, lang: str, labelled: list, cands: list) -> None:
        split = split_of(name, qid)
        hits = [_hit(c) for c, _ in labelled + cands]
        for (c, label), (sents, order) in zip(labelled + cands, deep.evidence(query, hits), strict=True):
            rows.append({"set": name, "qid": qid, "question": query, "sents": sents,
                         "order": order, "label": label, "kind": kind, "lang": lang,
                         "split": split, "doc": c.doc_id})  # fmt: skip

    for q in questions:
        if not q.relevant:
            continue
        filters = question_filters(q)
        allowed = reach.allowed(filters)
        rel_ids = set().union(*(reach.where(r) for r in q.relevant)) & allowed
        if not rel_ids:
            continue
        positives = [by_id[i] for i in sorted(rel_ids)][:2]
        sections = {(c.doc_id, c.section) for c in positives}
        hits = retriever.search(q.question, 20, filters, method="rerank")
        seen = {h.chunk.chunk_id for h in hits}
        neg = [
            h.chunk
            for h in hits
            if h.chunk.chunk_id not in rel_ids and (h.chunk.doc_id, h.chunk.section) not in sections
        ][:negatives]
        docs = {c.doc_id for c in positives}
        far = [c for c in chunks if c.doc_id not in docs and c.chunk_id not in seen and c.chunk_id in allowed]
        labelled = [(c, "answers") for c in positives]
        cands = [(c, "on_topic") for c in neg] + ([(rng.choice(far), "unrelated")] if far else [])
        emit(q.question, q.id, q.kind, q.language, labelled, cands)
    # section headings as pseudo-questions
    firsts: dict[tuple[str, str], object] = {}
    for c in chunks:
        if c.heading_path and len(c.section.split()) >= 2:
            firsts.setdefault((c.doc_id, c.section), c)
    keys = sorted(firsts)
    rng.shuffle(keys)
    for doc_id, section in keys[:headings]:
        first = firsts[(doc_id, section)]
        filters = Filters(audience="staff")
        hits = retriever.search(section, 12, filters, method="rerank")
        neg = [h.chunk for h in hits if (h.chunk.doc_id, h.chunk.section) != (doc_id, section)][:3]
        emit(section, f"h:{doc_id}#{section}", "heading", first.meta.language or "en",
             [(first, "answers")], [(c, "on_topic") for c in neg])  # fmt: skip
    store.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(os.environ.get("TETHER_CORPORA", "/work/corpora")))
    ap.add_argument("--headings", type=int, default=120)
    ap.add_argument("--negatives", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows: list[dict] = []
    digests: dict[str, str] = {}
    parts = args.out.parent / "mined"
    parts.mkdir(parents=True, exist_ok=True)
    missing: list[str] = []
    for s in registry.sets_for("reader", "train"):
        if s.format != "retrieval":
            continue
        for member in s.members:
            index = args.root / member / ".tether" / "index.sqlite"
            if not index.is_file():
                missing.append(member)
                continue
            path = demo_questions() if member == "bundled" else s.path / member / "questions.jsonl"
            digests[member] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            part = parts / f"{member}.jsonl"
            key = f"{digests[member]} {index.stat().st_mtime_ns} {args.headings} {args.negatives} {args.seed}"
            stamp = part.with_suffix(".key")
            if part.is_file() and stamp.is_file() and stamp.read_text() == key:
                got = [json.loads(line) for line in part.read_text(encoding="utf-8").splitlines()]
            else:  # mined again when the index, the questions or the settings changed
                rng = random.Random(f"{args.seed}:{member}")
                got = mine_member(member, index, load_questions(path), args.headings, args.negatives, rng)
                part.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in got),
                                encoding="utf-8")  # fmt: skip
                stamp.write_text(key)
            counts = {lab: sum(1 for r in got if r["label"] == lab) for lab in ("answers", "on_topic", "unrelated")}
            print(f"{member}: {len(got)} pairs {counts}", file=sys.stderr, flush=True)
            rows += got
    if missing:  # the others are mined and kept: a second run does only these
        print(f"error: no index for {', '.join(missing)} under {args.root}: run"
              f" bench/corpora/setup.py {' '.join(m for m in missing if m != 'bundled')}"
              " (bundled: bench/retrieval/bench_real_corpora.py --only bundled)", file=sys.stderr)  # fmt: skip
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    (args.out.with_suffix(".digests.json")).write_text(json.dumps(digests, indent=1))
    print(f"{len(rows)} pairs written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
