"""Retrieval: every method after the filters, RRF arithmetic, the ANN path, rerankers, the
query-rewrite hook. Uses the session's demo index (`demo_store`, built once in conftest)."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from datetime import date

import numpy as np
import pytest

from tether.app import retriever_for
from tether.config import DEFAULT_PROFILE
from tether.errors import TetherError
from tether.evaluation.questions import load_questions, matches
from tether.ingest.sync import sync
from tether.retrieval.rerank import CrossEncoderReranker, LLMReranker, SentenceReranker, p_yes
from tether.retrieval.retriever import (
    METHODS,
    LLMRewriter,
    Retriever,
    rrf_scores,
)
from tether.stores.dense import DenseIndex
from tether.stores.sqlite import SqliteStore
from tether.text import codes
from tether.types import Completion, Filters, Hit

TODAY = date(2026, 11, 30)
PUBLIC = Filters(as_of=TODAY, audience="public")
STAFF = Filters(as_of=TODAY, audience="staff")


@pytest.fixture(scope="module")
def retriever(demo_store: SqliteStore) -> Retriever:
    return retriever_for(demo_store)


def _found(hits: list[Hit], q) -> bool:
    return any(matches(h.chunk, rel) for h in hits for rel in q.relevant)


# ---- filters ----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_every_method_applies_as_of_before_ranking(each_demo_store, method: str):
    """Returns policy v3 is in force in June 2026, v4 from September: each date sees one (in
    each store)."""
    retriever = retriever_for(each_demo_store)
    query = "How many days do I have to return an item? return window"
    for day, version in ((date(2026, 6, 1), "3"), (date(2026, 11, 30), "4")):
        filters = Filters(as_of=day, audience="public")
        hits = retriever.search(query, 50, filters, method=method)
        assert hits and [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.method == method for h in hits)
        assert all(h.chunk.meta.in_force(day) for h in hits)
        versions = {h.chunk.version for h in hits if h.chunk.doc_id == "returns-policy"}
        assert versions == {version}


@pytest.mark.parametrize("method", METHODS)
def test_public_audience_never_sees_a_staff_chunk(each_demo_store, method: str):
    retriever = retriever_for(each_demo_store)
    staff_docs = [d for d in each_demo_store.documents() if d.meta.access == "staff"]
    assert staff_docs
    for doc in staff_docs:
        # the staff document's own title and first chunk: the query most likely to surface it
        first = each_demo_store.chunks(doc.meta.doc_id, doc.meta.version)[0]
        for query in (doc.meta.title, first.text[:300]):
            public = retriever.search(query, 50, Filters(audience="public"), method=method)
            assert all(h.chunk.meta.access == "public" for h in public), (method, query)
        staff = retriever.search(doc.meta.title, 10, Filters(audience="staff"), method=method)
        assert any(h.chunk.doc_id == doc.meta.doc_id for h in staff), (method, doc.meta.doc_id)


def test_dense_mask_is_applied_before_the_top_k(each_demo_store):
    """With a filter that leaves few chunks, dense still returns k of them (not k minus the
    refused ones), because the mask is applied before the top k is taken."""
    retriever = retriever_for(each_demo_store)
    hits = retriever.search("fraud check", 5, Filters(as_of=TODAY, audience="public"), "dense")
    assert len(hits) == 5 and all(h.chunk.meta.access == "public" for h in hits)


# ---- what each method finds ---------------------------------------------------------------------


def test_code_only_questions_are_found_by_bm25_and_hybrid(each_demo_store):
    retriever = retriever_for(each_demo_store)
    code_only = [
        q for q in load_questions() if q.question.strip() in codes(q.question) and q.relevant
    ]
    assert len(code_only) >= 5
    for q in code_only:
        filters = Filters(as_of=q.as_of, audience=q.audience)
        for method in ("bm25", "hybrid"):
            hits = retriever.search(q.question, 5, filters, method=method)
            assert _found(hits, q), (q.id, method, q.question)


def test_a_cross_lingual_pair_is_found_by_dense_and_hybrid(retriever: Retriever):
    """A French question answered by an English policy, and an English question answered by
    a French notice."""
    qs = {q.id: q for q in load_questions()}
    pair = [
        q
        for q in qs.values()
        if q.kind == "cross-lingual"
        and q.question.startswith(("Combien de temps conservez-vous", "Is the help desk open"))
    ]
    assert {q.language for q in pair} == {"en", "fr"}
    for q in pair:
        filters = Filters(as_of=q.as_of, audience=q.audience)
        for method in ("dense", "hybrid", "rerank"):
            hits = retriever.search(q.question, 5, filters, method=method)
            assert _found(hits, q), (q.id, method)
            assert any(h.chunk.meta.language != q.language for h in hits if _found([h], q))


# ---- fusion ---------------------------------------------------------------------------------------


def test_rrf_arithmetic_on_a_constructed_example():
    fused = rrf_scores([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)
    assert sorted(fused, key=lambda x: -fused[x]) == ["a", "c", "b", "d"]


def test_plain_hybrid_is_the_rrf_of_the_bm25_and_dense_top_50(demo_store: SqliteStore):
    plain = Retriever(
        demo_store,
        retriever_for(demo_store).embedder,
        profile=replace(
            DEFAULT_PROFILE, adaptive_fusion=False, lexical_gate=None, rrf_weights=(1.0, 1.0)
        ),
    )
    query = "Can I return a bike I rode?"
    bm25 = plain.search(query, 50, PUBLIC, "bm25")
    dense = plain.search(query, 50, PUBLIC, "dense")
    expected = rrf_scores([[h.chunk.chunk_id for h in bm25], [h.chunk.chunk_id for h in dense]])
    hybrid = plain.search(query, 10, PUBLIC, "hybrid")
    assert [h.score for h in hybrid] == sorted(expected.values(), reverse=True)[:10]
    for h in hybrid:
        assert h.score == pytest.approx(expected[h.chunk.chunk_id])
        assert h.signals["rrf"] == h.score
        assert -1.0 <= h.signals["dense"] <= 1.0  # every fused hit carries its cosine
    ids, matrix = demo_store.vectors()
    row = ids.index(hybrid[0].chunk.chunk_id)
    q = plain.query_vector(query)
    assert hybrid[0].signals["dense"] == pytest.approx(float(matrix[row] @ q), abs=1e-5)


@pytest.mark.parametrize(
    "query", ["Can I return a bike I rode?", "Quel est le délai de retour pour un vélo ?"]
)
def test_default_hybrid_gates_bm25_by_cosine_then_fuses_with_weights(
    demo_store: SqliteStore, retriever: Retriever, query: str
):
    """Recomputed by hand: BM25 candidates under top - 0.4 x (top - 50th) of the dense
    cosines take no part; the rest are fused with BM25 weighted 0.7. (The fixed fusion, the
    Profile's values with `adaptive=False`; the adaptive default is in test_fusion.py.)"""
    retriever = retriever_for(demo_store, adaptive_fusion=False)
    assert retriever.lexical_gate == 0.4 and retriever.rrf_weights == (0.7, 1.0)
    bm25 = retriever.search(query, 50, PUBLIC, "bm25")
    dense = retriever.search(query, 50, PUBLIC, "dense")
    ids, matrix = demo_store.vectors()
    q = retriever.query_vector(query)
    floor = dense[0].score - 0.4 * (dense[0].score - dense[-1].score)
    kept = [
        h.chunk.chunk_id for h in bm25 if float(matrix[ids.index(h.chunk.chunk_id)] @ q) >= floor
    ]
    expected = rrf_scores([kept, [h.chunk.chunk_id for h in dense]], weights=(0.7, 1.0))
    hybrid = retriever.search(query, 10, PUBLIC, "hybrid")
    assert [h.score for h in hybrid] == pytest.approx(sorted(expected.values(), reverse=True)[:10])
    assert len(kept) < len(bm25)  # the gate dropped something on these questions


def _plain_rerank(store: SqliteStore) -> Retriever:
    fixed = replace(DEFAULT_PROFILE, adaptive_fusion=False, per_document=None, rule_types=())
    return Retriever(store, retriever_for(store).embedder, profile=fixed)


def test_rerank_reorders_the_hybrid_top_20_and_keeps_the_rest(demo_store: SqliteStore):
    retriever = _plain_rerank(demo_store)
    query = "Is the stove recall about my ST-410?"
    hybrid = retriever.search(query, 30, PUBLIC, "hybrid")
    rerank = retriever.search(query, 30, PUBLIC, "rerank")
    head = {h.chunk.chunk_id for h in hybrid[:20]}
    assert {h.chunk.chunk_id for h in rerank[:20]} == head
    assert [h.chunk.chunk_id for h in rerank[20:]] == [h.chunk.chunk_id for h in hybrid[20:]]
    assert [h.rank for h in rerank] == list(range(1, 31))
    assert all(rerank[i].score >= rerank[i + 1].score for i in range(29))
    features = rerank[0].signals
    for name in ("rr_maxsim", "rr_dense", "rr_xdense", "rr_bm25", "rr_code", "rerank"):
        assert name in features


def test_rerank_caps_one_document_at_three_of_the_top_10(
    demo_store: SqliteStore, retriever: Retriever
):
    query = "Does the Kestrel TR-2200 frame have a lifetime warranty?"
    plain = _plain_rerank(demo_store).search(query, 10, PUBLIC, "rerank")
    capped = retriever.search(query, 10, PUBLIC, "rerank")
    assert sum(h.chunk.doc_id == "kestrel-tr2200-sheet" for h in plain) > 3  # what the cap is for
    assert (
        sum(h.chunk.doc_id == "kestrel-tr2200-sheet" for h in capped if "rule" not in h.signals)
        <= 3
    )
    assert [h.rank for h in capped] == list(range(1, 11))


@pytest.mark.parametrize(
    ("query", "section"),
    [
        ("Do Pine Points expire?", "Which source wins"),  # help FAQ vs policy, same point
        ("Does the Kestrel TR-2200 frame have a lifetime warranty?", "Supplier content"),
    ],
)
def test_rerank_brings_the_standing_rule_when_sources_of_different_standing_meet(
    demo_store: SqliteStore, retriever: Retriever, query: str, section: str
):
    plain = _plain_rerank(demo_store).search(query, 5, PUBLIC, "rerank")
    assert all(h.chunk.doc_id != "document-governance" for h in plain)
    hits = retriever.search(query, 5, PUBLIC, "rerank")
    rules = [h for h in hits if h.chunk.doc_id == "document-governance"]
    assert len(rules) == 1 and rules[0].rank == 5 and rules[0].signals["rule"] == 1.0
    assert rules[0].chunk.heading_path[-1] == section
    # the governance document is not in force before 2026-01-01: no rule then
    early = retriever.search(query, 5, Filters(as_of=date(2025, 6, 1), audience="public"), "rerank")
    assert all(h.chunk.doc_id != "document-governance" for h in early)


def test_rerank_adds_no_rule_when_one_kind_of_source_answers(retriever: Retriever):
    for query in ("Can I price match Amazon?", "How do I charge the BT-500 battery?"):
        hits = retriever.search(query, 5, PUBLIC, "rerank")
        assert all("rule" not in h.signals for h in hits), query


def test_sentence_vectors_were_stored_at_ingest(demo_store: SqliteStore):
    chunks = demo_store.chunks("returns-policy", "4")
    found = demo_store.sentence_vectors(c.chunk_id for c in chunks)
    assert len(found) >= len(chunks) - 1
    spans, matrix = next(iter(found.values()))
    assert matrix.shape == (len(spans), 384)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)


def test_sentence_reranker_features_are_on_absolute_scales(demo_store, retriever: Retriever):
    hits = retriever.search("What does error E-041 mean?", 20, PUBLIC, "hybrid")
    reranker = SentenceReranker(demo_store, retriever.query_vector)
    feats = reranker.features("What does error E-041 mean?", hits)
    for f in feats:
        assert all(0.0 <= v <= 1.0 + 1e-6 for v in f.values()), f
    best = reranker.rerank("What does error E-041 mean?", hits, 3)
    assert best[0].chunk.section == "Error codes"


# ---- errors and the index without vectors ---------------------------------------------------------


def test_unknown_method_and_missing_vectors_are_clear_errors(tmp_path, demo_store):
    with pytest.raises(TetherError, match="unknown method"):
        Retriever(demo_store).search("x", 5, PUBLIC, method="magic")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(
        "---\ndoc_id: a\nversion: 1\ntitle: A\naccess: public\n---\n# A\n\nReturns take 30 days.\n"
    )
    bare = SqliteStore(tmp_path / "index.sqlite")
    sync(bare, folder)
    only_bm25 = retriever_for(bare)
    assert only_bm25.default_method == "bm25" and only_bm25.embedder is None
    assert only_bm25.search("returns", 5, PUBLIC, "bm25")
    assert [h.method for h in only_bm25.search("returns", 5, PUBLIC)] == ["bm25"]  # auto
    assert retriever_for(demo_store).default_method == "rerank"
    with pytest.raises(TetherError, match="needs an embedder"):
        only_bm25.search("returns", 5, PUBLIC, "hybrid")


def test_an_index_built_with_another_embedder_is_refused(demo_store):
    class Other:
        name, version, dim = "other", "1", 384

        def embed_queries(self, texts):
            return np.ones((len(texts), 384), dtype=np.float32) / math.sqrt(384)

        embed_passages = embed_queries

    with pytest.raises(TetherError, match="embedded with"):
        Retriever(demo_store, Other())


# ---- the ANN index --------------------------------------------------------------------------------


def _clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(4, n // 50), dim))
    x = centres[rng.integers(0, len(centres), n)] + 0.3 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_hnsw_search_respects_the_mask_and_falls_back_to_brute_force(tmp_path):
    pytest.importorskip("faiss")
    matrix = _clustered(3000, 32)
    cache = tmp_path / "x.hnsw-abc"
    index = DenseIndex(matrix, ann="hnsw", cache_path=cache)
    q = matrix[7]
    rows, scores = index.search(q, 10)
    assert index.last_path == "hnsw" and rows[0] == 7 and scores[0] == pytest.approx(1.0)
    exact = set(index.brute(q, 10).tolist())
    assert len(exact & set(rows.tolist())) >= 9
    assert cache.exists()  # the graph is cached for the next process
    # half the rows allowed: results only from the allowed half
    mask = np.zeros(len(matrix), dtype=bool)
    mask[::2] = True
    rows, _ = index.search(q, 10, mask)
    assert len(rows) == 10 and all(mask[r] for r in rows)
    # a very selective mask: brute force over the allowed rows, still exact
    mask = np.zeros(len(matrix), dtype=bool)
    mask[[5, 900, 1800, 2999]] = True
    rows, scores = index.search(q, 10, mask)
    assert sorted(rows.tolist()) == [5, 900, 1800, 2999] and index.last_path == "brute"
    # a reloaded index reads the cached graph
    again = DenseIndex(matrix, ann="hnsw", cache_path=cache)
    assert again.search(q, 10)[0][0] == 7


def test_auto_uses_brute_force_below_the_threshold():
    index = DenseIndex(_clustered(500, 16), ann="auto", threshold=1000)
    index.search(index.matrix[3], 5)
    assert not index.use_ann and index.last_path == "brute"


# ---- query rewriting and the LLM reranker (fake providers) ---------------------------------------


class FakeProvider:
    name = "fake"

    def __init__(self, reply=None):
        self.requests = []
        self.reply = reply or (lambda request: Completion(text="return window bicycle"))

    def complete(self, request):
        self.requests.append(request)
        return self.reply(request)


def test_llm_rewriter_rewrites_once_and_falls_back_on_failure(retriever: Retriever):
    provider = FakeProvider(lambda r: Completion(text='Query: "bike return window days"\n'))
    rewrite = LLMRewriter(provider)
    assert rewrite("can I send my bike back?") == "bike return window days"
    assert rewrite("can I send my bike back?") == "bike return window days"
    assert len(provider.requests) == 1
    request = provider.requests[0]
    assert request.purpose == "rewrite" and request.prompt_id.startswith("rewrite@")
    assert "can I send my bike back?" in request.messages[0].content
    cut = LLMRewriter(FakeProvider(lambda r: Completion(text="", finish_reason="length")))
    assert cut("unchanged question") == "unchanged question"
    hooked = Retriever(retriever.store, rewrite=lambda q: "SPRING-TUNE15")
    hits = hooked.search("anything at all", 3, Filters(audience="public"), "bm25")
    assert hits[0].chunk.doc_id == "spring-tune-up-2026"


def test_p_yes_from_logprobs_and_text():
    assert p_yes({"Yes": math.log(0.6), "yes": math.log(0.2), "No": math.log(0.2)}, "") == (
        pytest.approx(0.8)
    )
    assert p_yes({}, "No.") == 0.0 and p_yes({}, "Yes") == 1.0 and p_yes({}, "maybe") == 0.5


def test_llm_reranker_orders_by_p_yes(retriever: Retriever):
    hits = retriever.search("How long is the warranty on a tent?", 6, PUBLIC, "hybrid")
    target = hits[-1].chunk.chunk_id

    def judge(request):
        yes = 0.9 if request.chunk_ids == (target,) else 0.1
        return Completion(text="Yes", top_logprobs={"Yes": math.log(yes), "No": math.log(1 - yes)})

    provider = FakeProvider(judge)
    reranked = LLMReranker(provider, max_candidates=6).rerank("tent warranty", hits, 6)
    assert reranked[0].chunk.chunk_id == target and reranked[0].score == pytest.approx(0.9)
    assert all(r.purpose == "rerank" and r.logprobs for r in provider.requests)
    through = Retriever(retriever.store, retriever.embedder, LLMReranker(provider))
    assert through.search("tent warranty", 3, PUBLIC, "rerank")[0].method == "rerank"


# ---- the cross-encoder (optional extra) --------------------------------------------------------------


def test_cross_encoder_reranker_is_a_clear_error_without_sentence_transformers(monkeypatch):
    # a None entry in sys.modules makes `import sentence_transformers` fail, as when missing
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(TetherError, match="sentence-transformers"):
        CrossEncoderReranker("/nonexistent/model")


def test_cross_encoder_reranker_loads_a_tiny_local_model(tmp_path, retriever: Retriever):
    """Builds a tiny BERT cross-encoder on disk (random weights, a 60-word vocabulary) and
    loads it by path, as a user with a local model would."""
    pytest.importorskip("sentence_transformers")
    transformers = pytest.importorskip("transformers")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        w
        for w in "the a bike return days warranty tent how long is on of to can i my we you it"
        " in for and or not what does mean error code store open stove recall 30 45 e".split()
    ]
    model_dir = tmp_path / "tiny-cross-encoder"
    model_dir.mkdir()
    (model_dir / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizer(str(model_dir / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
    )
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    reranker = CrossEncoderReranker(str(model_dir), max_length=64)
    assert reranker.name == "cross-encoder:tiny-cross-encoder"
    hits = retriever.search("How long is the warranty on a tent?", 5, PUBLIC, "hybrid")
    out = reranker.rerank("How long is the warranty on a tent?", hits, 5)
    assert sorted(h.chunk.chunk_id for h in out) == sorted(h.chunk.chunk_id for h in hits)
    assert all("cross_encoder" in h.signals for h in out)
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


def test_language_means_centre_each_language(demo_store: SqliteStore, retriever: Retriever):
    reranker = SentenceReranker(demo_store, retriever.query_vector)
    means, overall = reranker._language_means()
    assert {"en", "fr"} <= set(means)
    assert overall.shape == (384,)
    # the French and English means differ: that difference is what centring removes
    assert float(np.linalg.norm(means["en"] - means["fr"])) > 0.01


def test_collection_statistics_are_the_callers_audiences(
    demo_store: SqliteStore, retriever: Retriever
):
    """The language means of `xdense` and the collection's languages are counted over what
    the caller's audience may see: a public score never moves with staff passages."""
    reranker = SentenceReranker(demo_store, retriever.query_vector)
    public, public_overall = reranker._language_means("public")
    staff, _ = reranker._language_means("staff")
    ids, matrix = demo_store.vectors()
    seen = demo_store.allowed_ids(Filters())
    english = {c.chunk_id for c in demo_store.chunks() if c.meta.language == "en"}
    rows = [i for i, cid in sorted(enumerate(ids), key=lambda r: r[1]) if cid in seen]
    assert np.array_equal(public_overall, matrix[rows].mean(axis=0))
    assert np.array_equal(public["en"], matrix[[r for r in rows if ids[r] in english]].mean(0))
    assert not np.allclose(public["en"], staff["en"])  # the demo's staff passages move it
    chunks = demo_store.chunks()
    for audience, found in (("public", seen), ("staff", {c.chunk_id for c in chunks})):
        languages = [c.meta.language for c in chunks if c.chunk_id in found]
        main = max(set(languages), key=languages.count)
        assert retriever._languages(audience)[0] == main


def test_cli_search_routes_methods_and_defaults_to_rerank(demo_store: SqliteStore):
    import json

    from typer.testing import CliRunner

    from tether.cli.main import app

    runner = CliRunner()
    base = ["search", "What does E-041 mean?", "--index", str(demo_store.path), "--json"]
    done = runner.invoke(app, base)
    assert done.exit_code == 0, done.output
    hits = json.loads(done.stdout)
    assert hits and {h["method"] for h in hits} == {"rerank"}  # the index has vectors
    for method in METHODS:
        done = runner.invoke(app, [*base, "--method", method, "--k", "3"])
        assert done.exit_code == 0, done.output
        found = json.loads(done.stdout)
        assert 1 <= len(found) <= 3 and {h["method"] for h in found} == {method}
    short = runner.invoke(app, [*base, "-k", "2"])  # -k is --k
    assert short.exit_code == 0 and len(json.loads(short.stdout)) == 2
    bad = runner.invoke(app, [*base, "--method", "magic"])
    assert bad.exit_code == 2 and "--method: unknown method 'magic'" in bad.output
    ruled = ["search", "Do Pine Points expire?", "--index", str(demo_store.path)]
    ruled += ["--method", "rerank", "--k", "5"]
    found = json.loads(runner.invoke(app, [*ruled, "--json"]).stdout)
    assert [h["doc_id"] for h in found if h["signals"].get("rule")] == ["document-governance"]
    assert "standing rule" in runner.invoke(app, ruled).stdout
    assert runner.invoke(app, ["eval", "--help"]).exit_code == 0
