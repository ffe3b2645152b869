"""The Store contract, search role (`tether.protocols.SearchableStore`): filters applied before
ranking in lexical and dense search, a public audience that fails closed, counts that follow
the filters, the version in force on a date, vectors by ID.

Each test runs on every backend of `store_parts.FACTORIES`.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from store_parts import (
    PUBLIC,
    STAFF,
    ingest,
    query_vector,
)

from tether.protocols import SearchableStore, Store
from tether.stores.sqlite import SqliteStore
from tether.types import Filters


def test_the_store_plays_the_search_role(store: Store, location: str, tmp_path: Path):
    assert isinstance(store, SearchableStore)
    assert isinstance(SqliteStore(tmp_path / "other.sqlite"), SearchableStore)


def test_vectors_by_id_one_or_many(store: Store, collection: Path):
    ingest(store, collection)
    ids = [c.chunk_id for c in store.chunks()][:4]
    many = store.vectors_of([*ids, "000000000000"])
    assert set(many) == set(ids)  # an unknown ID is absent, not an error
    for cid in ids:
        one = store.vector(cid)
        assert one is not None and (one == many[cid]).all()
    assert store.vector("000000000000") is None


def test_filters_apply_before_ranking_lexical_and_dense(store: Store, collection: Path):
    ingest(store, collection)
    query = "zebra stripes savanna"
    best = store.search_lexical(query, 3, STAFF)
    assert [h.chunk.meta.access for h in best] == ["staff"] * 3  # the best are not public
    hits = store.search_lexical(query, 3, PUBLIC)
    assert len(hits) == 3 and all(h.chunk.meta.access == "public" for h in hits)
    assert [h.rank for h in hits] == [1, 2, 3]
    ranked = store.lexical_ranking(query, 3, PUBLIC)
    assert [cid for cid, _ in ranked] == [h.chunk.chunk_id for h in hits]

    vec = query_vector(query)
    top = store.get_many(cid for cid, _ in store.search_dense(vec, 3, STAFF))
    assert {c.meta.access for c in top.values()} == {"staff"}
    dense = store.search_dense(vec, 3, PUBLIC)
    assert len(dense) == 3
    scores = [s for _, s in dense]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 + 1e-6 for s in scores)
    chunks = store.get_many(cid for cid, _ in dense)
    assert all(chunks[cid].meta.access == "public" for cid, _ in dense)


def test_the_public_audience_fails_closed(store: Store, collection: Path):
    ingest(store, collection)
    unlabelled = store.chunks("unlabelled")
    assert unlabelled and all(c.meta.access == "staff" for c in unlabelled)
    ids = {c.chunk_id for c in unlabelled}
    assert not ids & store.allowed_ids(PUBLIC)
    assert ids <= store.allowed_ids(STAFF)
    query = "unlabelled roster night shifts"
    assert not {h.chunk.chunk_id for h in store.search_lexical(query, 50, PUBLIC)} & ids
    assert store.search_lexical(query, 1, STAFF)[0].chunk.chunk_id in ids
    n = len(store.vectors()[0])
    assert not {cid for cid, _ in store.search_dense(query_vector(query), n, PUBLIC)} & ids
    assert store.search_dense(query_vector(query), 1, STAFF)[0][0] in ids


def test_count_lexical_counts_what_the_filters_allow(store: Store, collection: Path):
    ingest(store, collection)
    query = "unlabelled roster night shifts"
    assert store.count_lexical(query, STAFF) >= 1
    assert store.count_lexical("roster", PUBLIC) == 0  # only the unlabelled (staff) file says it
    assert store.count_lexical("roster", STAFF) == 1
    assert store.count_lexical("zebra", PUBLIC) == len(store.search_lexical("zebra", 50, PUBLIC))
    assert store.count_lexical("zebra", STAFF) == len(store.search_lexical("zebra", 50, STAFF))
    refund = "refund window"
    assert store.count_lexical(refund, Filters(as_of=date(2024, 1, 1), audience="public")) == 0
    assert store.count_lexical(refund, Filters(as_of=date(2026, 6, 1), audience="public")) == 1
    assert store.count_lexical("", STAFF) == 0 and store.count_lexical("***", STAFF) == 0


@pytest.mark.parametrize(("day", "version"), [(date(2025, 6, 1), "1"), (date(2026, 6, 1), "2")])
def test_as_of_picks_the_version_in_force(store: Store, collection: Path, day: date, version: str):
    ingest(store, collection)
    filters = Filters(as_of=day, audience="public")
    assert [m.version for m in store.versions("policy")] == ["1", "2"]
    lexical = store.search_lexical("refund window days", 10, filters)
    assert {h.chunk.version for h in lexical if h.chunk.doc_id == "policy"} == {version}
    dense = store.search_dense(query_vector("refund window days"), 10, filters)
    chunks = store.get_many(cid for cid, _ in dense)
    assert {c.version for c in chunks.values() if c.doc_id == "policy"} == {version}
    allowed = store.allowed_ids(filters)
    policy = {c.chunk_id: c.version for c in store.chunks("policy")}
    assert {v for cid, v in policy.items() if cid in allowed} == {version}
    assert set(policy) <= store.allowed_ids(Filters(as_of=None, audience="public"))
