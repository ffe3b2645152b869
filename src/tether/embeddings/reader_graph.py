"""The reader's encoder as an ONNX Runtime graph, built from the same float arrays the numpy
forward pass reads (`tether.embeddings.reader`), with the fast encoder's fused operators
(MultiHeadAttention, SkipLayerNormalization, BiasGelu). Built at first use and cached beside
the fast encoder's graphs (`fast_e5.cache_dir()`), named by the weights' sha256.

What it cannot do: it needs `onnxruntime` and `onnx` (the `fast` extra); without them the
reader runs in numpy (the same results within float rounding, several times slower).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tether.embeddings.fast_e5 import _Graph, available_threads, cache_dir, cache_graph

GRAPH_VERSION = 1


def _linear(g: _Graph, x: str, w: np.ndarray, b: np.ndarray | None, name: str) -> str:
    y = g.node("MatMul", [x, g.const(name + ".t", np.ascontiguousarray(w.T))], name + ".mm")
    return g.node("Add", [y, g.const(name + ".b", b)], name) if b is not None else y


def build_reader_graph(
    w: dict[str, np.ndarray], layers: int, heads: int, eps: float, dim: int
) -> Any:
    """Inputs `embeds` (B, L, H) float32 and `mask` (B, L) int32; output `mean` (B, H)."""
    g = _Graph("fp32")
    x = g.node("LayerNormalization", ["embeds", g.const("emb.ln.w", w["emb.ln.w"]),
               g.const("emb.ln.b", w["emb.ln.b"])], "emb.ln", axis=-1, epsilon=eps)  # fmt: skip
    for i in range(layers):
        p = f"l{i}."
        qkv = _linear(g, x, w[p + "qkv.w"], w[p + "qkv.b"], p + "qkv")
        parts = [p + "q", p + "k", p + "v"]
        g.nodes.append(
            g.helper.make_node("Split", [qkv], parts, name=p + "split", axis=-1, num_outputs=3)
        )
        attn = g.node("MultiHeadAttention", [*parts, "", "mask"], p + "attn", domain="com.microsoft",
                      num_heads=heads)  # fmt: skip
        ao = _linear(g, attn, w[p + "ao.w"], None, p + "ao")
        x1 = g.node("SkipLayerNormalization", [ao, x, g.const(p + "aln.w", w[p + "aln.w"]),
                    g.const(p + "aln.b", w[p + "aln.b"]), g.const(p + "ao.b", w[p + "ao.b"])],
                    p + "aln", domain="com.microsoft", epsilon=eps)  # fmt: skip
        mid = _linear(g, x1, w[p + "fi.w"], None, p + "fi")
        gl = g.node(
            "BiasGelu",
            [mid, g.const(p + "fi.b", w[p + "fi.b"])],
            p + "gelu",
            domain="com.microsoft",
        )
        fo = _linear(g, gl, w[p + "fo.w"], None, p + "fo")
        x = g.node("SkipLayerNormalization", [fo, x1, g.const(p + "oln.w", w[p + "oln.w"]),
                   g.const(p + "oln.b", w[p + "oln.b"]), g.const(p + "fo.b", w[p + "fo.b"])],
                   p + "oln", domain="com.microsoft", epsilon=eps)  # fmt: skip
    g.masked_mean(x)
    return g.model("tether_reader", dim, "tether.embeddings.reader_graph")


def reader_session(reader: Any, threads: int | None = None) -> Any:
    """An ONNX Runtime session for `reader` (a `Reader`), its graph cached on disk."""
    import onnxruntime as ort

    name = f"reader-{reader.card.weights_sha256[:16]}-g{GRAPH_VERSION}.onnx"
    path = cache_dir() / name
    source: str | bytes
    if path.is_file():
        source = str(path)
    else:
        model = build_reader_graph(reader.w, reader.layers, reader.heads, reader.eps, reader.dim)
        data = model.SerializeToString()
        source = str(path) if cache_graph(path, data) else data
    opts = ort.SessionOptions()
    n = threads or min(2, available_threads())
    opts.intra_op_num_threads = n
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])
