"""Adaptive fusion: the query classifier, weights that follow the query, no candidate dropped
before the reranker, and the calibration on the collection itself (stored in the index)."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from tether.app import retriever_for
from tether.retrieval.calibrate import (
    META_KEY,
    WEIGHT_BOUNDS,
    calibrate_fusion,
    heading_questions,
    load_calibration,
    sentence_questions,
)
from tether.retrieval.query import identifiers, query_shape
from tether.retrieval.retriever import Retriever
from tether.stores.sqlite import SqliteStore
from tether.types import Filters

PUBLIC = Filters(as_of=date(2026, 11, 30), audience="public")
FRENCH = "Quel est le délai de retour pour un vélo ?"


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("work_mem", "identifier"),
        ("json.dumps sort_keys", "identifier"),
        ("functools.lru_cache maxsize", "identifier"),
        ("What does row_number() return?", "identifier"),
        ("pg_restore --clean", "identifier"),
        ("JSONDecodeError", "identifier"),
        ("namedtuple _replace", "identifier"),
        ("VACUUM FULL", "identifier"),
        ("Is the stove recall about my ST-410?", "mixed"),
        ('where is "return window" defined', "identifier"),
        ("How do I use ExitStack to close several files at once?", "mixed"),
        ("How do I remove a directory and everything in it?", "natural"),
        ("Make a copy of a nested list so changing the copy leaves the original alone", "natural"),
        (FRENCH, "natural"),
        ("deque maxlen", "keyword"),
        ("bike return window", "keyword"),
    ],
)
def test_the_query_classifier_reads_identifiers_quotes_and_questions(query: str, kind: str):
    assert query_shape(query).kind == kind
    assert query_shape(query) == query_shape(query)  # deterministic


def test_identifiers_are_listed_as_written_and_shouting_is_not_sql():
    assert identifiers("os.path.join and PurePath.with_suffix()") == [
        "os.path.join",
        "PurePath.with_suffix",
    ]
    assert identifiers("Use ON CONFLICT DO NOTHING") == ["CONFLICT", "NOTHING"]
    assert identifiers("WHY DOES MY BIKE SQUEAK WHEN I BRAKE HARD") == []


def test_weights_lean_lexical_for_identifiers_and_dense_across_languages(demo_store, monkeypatch):
    adaptive = retriever_for(demo_store, adaptive_fusion=True)
    plain_weight = adaptive.lexical_prior / (1 - adaptive.lexical_prior)
    (code_bm25, code_dense), code_gated = adaptive.fusion_weights("PW-2200-07")
    (para_bm25, para_dense), para_gated = adaptive.fusion_weights(
        "Can I bring back a bicycle after riding it?"
    )
    assert code_dense == para_dense == 1.0
    assert code_bm25 == pytest.approx(2 * plain_weight)  # identifiers: twice the BM25 weight
    assert para_bm25 == pytest.approx(plain_weight)
    assert not code_gated and not para_gated  # the adaptive fusion gates no BM25 candidate
    monkeypatch.setattr(adaptive, "_languages", lambda _audience="public": ("en", False))  # an English collection
    (french_bm25, _), _ = adaptive.fusion_weights(FRENCH)
    assert french_bm25 == pytest.approx(0.3 * plain_weight)  # shared words mislead across
    fixed = retriever_for(demo_store, adaptive_fusion=False)
    assert fixed.fusion_weights("PW-2200-07") == (fixed.rrf_weights, True)


def test_the_fusion_weight_follows_the_sentence_ratio():
    from tether.config import DEFAULT_PROFILE
    from tether.retrieval.calibrate import WEIGHT_BOUNDS, fusion_weight

    center = DEFAULT_PROFILE.fusion_ratio_center
    assert fusion_weight(center) == pytest.approx(1.0)
    ratios = [0.3, 0.57, 0.63, 0.71, 0.78, 1.0]
    weights = [fusion_weight(r) for r in ratios]
    assert weights == sorted(weights, reverse=True)  # the weaker dense, the more BM25 counts
    assert fusion_weight(0.57) > 3 and 1.5 < fusion_weight(0.63) < 2.5
    assert 0.5 < fusion_weight(0.71) < 0.8 and fusion_weight(0.78) < 0.5
    assert weights[0] == WEIGHT_BOUNDS[1] and weights[-1] == WEIGHT_BOUNDS[0]


def test_adaptive_hybrid_drops_no_bm25_candidate(demo_store):
    adaptive = retriever_for(demo_store, adaptive_fusion=True)
    fixed = retriever_for(demo_store, adaptive_fusion=False)
    query = "Can I return a bike I rode?"
    bm25 = {h.chunk.chunk_id for h in adaptive.search(query, 50, PUBLIC, "bm25")}
    gated = {h.chunk.chunk_id for h in fixed._hybrid(query, 100, PUBLIC, 50)}
    kept = {h.chunk.chunk_id for h in adaptive._hybrid(query, 100, PUBLIC, 50)}
    assert bm25 - gated  # the fixed gate removes some lexical candidates on this question
    assert bm25 <= kept  # the adaptive fusion ranks them lower but keeps every one


def test_the_top_of_each_list_reaches_the_reranker(demo_store):
    adaptive: Retriever = retriever_for(demo_store, adaptive_fusion=True, per_document=None, rule_types=())
    for query in (FRENCH, "PW-2200-07", "How do I charge the BT-500 battery?"):
        candidates = adaptive._hybrid(query, 100, PUBLIC, 50)
        head, tail = adaptive._rerank_head(candidates)
        tops = {h.chunk.chunk_id for h in adaptive.search(query, 5, PUBLIC, "bm25")}
        tops |= {h.chunk.chunk_id for h in adaptive.search(query, 5, PUBLIC, "dense")}
        assert tops <= {h.chunk.chunk_id for h in head}
        assert len(head) + len(tail) == len(candidates)
        reranked = adaptive.search(query, 40, PUBLIC, "rerank")
        assert tops <= {h.chunk.chunk_id for h in reranked}


def test_pseudo_questions_come_from_public_headings_and_sentences(demo_store):
    chunks = list(demo_store.chunks())
    headings = heading_questions(chunks, 30)
    sents = sentence_questions(chunks, 30)
    assert headings == heading_questions(chunks, 30) and sents == sentence_questions(chunks, 30)
    assert len(headings) == 30 and len(sents) == 30
    by_id = {c.chunk_id: c for c in chunks}
    for text, ids in headings:
        assert all(text in " ".join(by_id[i].heading_path) for i in ids)
    for text, (cid,) in sents:
        assert 4 <= len(text.split()) <= 15 and text.split()[0] in by_id[cid].text


def test_calibration_is_stored_in_the_index_and_used_by_the_retriever(
    demo_store: SqliteStore, tmp_path: Path
):
    shutil.copyfile(demo_store.location, tmp_path / "index.sqlite")
    store = SqliteStore(tmp_path / "index.sqlite")
    assert load_calibration(store) is None
    before = retriever_for(store)
    found = calibrate_fusion(store, before, before.lexical_prior)
    low, high = WEIGHT_BOUNDS
    assert low <= found["lexical_weight"] <= high
    share = found["lexical_weight"] / (1 + found["lexical_weight"])
    assert found["lexical_prior"] == pytest.approx(share, abs=1e-3)
    assert found["questions"] >= 20 and "sentence questions" in found["fitted_on"]
    assert 0 <= found["bm25_mrr"] <= 1 and 0 <= found["dense_mrr"] <= 1
    assert found["sentence_ratio"] == pytest.approx(
        found["dense_mrr"] / found["bm25_mrr"], abs=0.01
    )
    assert load_calibration(store) == found
    assert retriever_for(store).lexical_prior == found["lexical_prior"]
    assert retriever_for(store, adaptive_fusion=False).lexical_prior == before.lexical_prior
    from tether.app import Workspace

    shown = Workspace.open(tmp_path / "index.sqlite").info("staff")["fusion_calibration"]
    assert shown == found  # an object an agent can read, not a JSON string
    public = Workspace.open(tmp_path / "index.sqlite").info()["fusion_calibration"]
    assert public == {**found, "fitted_on": found["fitted_on"].rsplit(", ", 1)[0]}  # no date:
    # a staff document's ingest measures again, and the date would say when
    store.set_meta({META_KEY: "not json"})
    assert load_calibration(store) is None
    older = '{"lexical_prior": 0.5, "questions": 80, "fitted_on": "the older rule"}'
    store.set_meta({META_KEY: older})
    assert load_calibration(store) is None  # measured again at the next ingest
    shown = Workspace.open(tmp_path / "index.sqlite").info()["fusion_calibration"]
    assert shown["in_force"] is False  # info does not pass an older record off as in force
    for damaged in ('{"lexical_weight": 2.0}', '{"lexical_weight": 2, "lexical_prior": "0.5"}'):
        store.set_meta({META_KEY: damaged})
        assert load_calibration(store) is None
        assert retriever_for(store).search("return window", 3, PUBLIC, "hybrid")  # no traceback
    store.close()


def test_a_section_label_matches_a_heading_with_its_permalink_sign(demo_store):
    from dataclasses import replace

    from tether.evaluation.questions import matches
    from tether.types import Relevant

    chunk = next(iter(demo_store.chunks()))
    sphinx = replace(chunk, heading_path=("itertools — Functions", "Itertool functions¶"))
    assert matches(sphinx, Relevant(doc_id=chunk.doc_id, section="Itertool functions"))
    assert matches(sphinx, Relevant(doc_id=chunk.doc_id, section="itertool  functions ¶"))
    assert not matches(sphinx, Relevant(doc_id=chunk.doc_id, section="Itertool"))


def test_the_top_of_each_list_leads_the_adaptive_hybrid(demo_store, monkeypatch):
    assert retriever_for(demo_store, adaptive_fusion=True).protect_each == 0  # the Profile's, k = 10
    adaptive: Retriever = retriever_for(demo_store, adaptive_fusion=True, fusion_protect_each=2)
    order = ["shared1", "shared2", "shared3", "dense1", "bm25first"]
    bm25 = {"shared1": (3.0, 3), "shared2": (2.0, 4), "shared3": (1.0, 5), "bm25first": (9.0, 1)}
    dense = {"dense1": (0.9, 1), "shared1": (0.8, 2), "shared2": (0.7, 3), "shared3": (0.6, 4)}
    query = "How do I charge the battery?"
    monkeypatch.setattr(adaptive, "_languages", lambda _audience="public": ("en", False))  # one language
    led = adaptive._protect_heads(query, order, bm25, dense)
    assert led[:3] == ["shared1", "dense1", "bm25first"]  # each list's top 2, in fused order
    assert sorted(led) == sorted(order)  # nothing dropped
    assert adaptive._protect_heads(FRENCH, order, bm25, dense)[:2] == ["shared1", "dense1"]
    monkeypatch.setattr(adaptive, "_languages", lambda _audience="public": ("en", True))  # several languages
    assert adaptive._protect_heads(query, order, bm25, dense) == order  # the bundled fusion
    monkeypatch.setattr(adaptive, "_languages", lambda _audience="public": ("en", False))
    adaptive.protect_each = 0
    assert adaptive._protect_heads(query, order, bm25, dense) == order


def test_one_language_lifts_the_adaptive_cap_per_document(demo_store, monkeypatch):
    from tether.config import DEFAULT_PROFILE

    query = "Does the Kestrel TR-2200 frame have a lifetime warranty?"
    sheet = "kestrel-tr2200-sheet"
    adaptive: Retriever = retriever_for(demo_store, adaptive_fusion=True, rule_types=())
    assert adaptive.per_document == DEFAULT_PROFILE.per_document == 3  # several languages: the cap stays
    assert adaptive.per_document_one_language == DEFAULT_PROFILE.rerank_per_document is None
    capped = adaptive.search(query, 10, PUBLIC, "rerank")
    assert sum(h.chunk.doc_id == sheet for h in capped) <= 3
    monkeypatch.setattr(adaptive, "_languages", lambda _audience="public": ("en", False))
    lifted = adaptive.search(query, 10, PUBLIC, "rerank")
    assert sum(h.chunk.doc_id == sheet for h in lifted) > 3
    fixed: Retriever = retriever_for(demo_store, adaptive_fusion=False, rule_types=())
    monkeypatch.setattr(fixed, "_languages", lambda _audience="public": ("en", False))
    assert sum(h.chunk.doc_id == sheet for h in fixed.search(query, 10, PUBLIC, "rerank")) <= 3
    assert "fusion_protect_each" in DEFAULT_PROFILE.fusion_fitted_on
