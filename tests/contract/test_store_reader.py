"""The Store contract, reader role (`tether.protocols.StoreReader`): chunks and documents by
ID, every anchor kept, generations that move with each committed write and that other store
objects follow, a read-only store that never writes.

Each test runs on every backend of `store_parts.FACTORIES`.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import date
from pathlib import Path

import pytest
from store_parts import (
    EMBEDDER,
    PUBLIC,
    STAFF,
    Factory,
    ingest,
    md,
    query_vector,
    state,
)

from tether.errors import TetherError
from tether.protocols import Embedder, Store, StoreReader
from tether.stores import open_store
from tether.stores.sqlite import SqliteStore


def test_the_store_plays_the_reader_role(store: Store, location: str, tmp_path: Path):
    assert isinstance(store, StoreReader)
    assert isinstance(SqliteStore(tmp_path / "other.sqlite"), StoreReader)
    assert isinstance(store, Store)  # every role at once
    assert isinstance(EMBEDDER, Embedder)
    assert Path(location).name in store.location


def test_a_chunk_keeps_every_anchor_it_covers(store: Store, collection: Path):
    """`Chunk.anchors` (all the locations a chunk covers, `anchor` first) round-trips through
    `get`, `get_many` and `chunks` (SQLite keeps them as a JSON list in `chunks.anchors`)."""
    (collection / "ref.html").write_text(
        "<html><head><meta name='doc_id' content='ref'><meta name='access' content='public'>"
        "</head><body><h1 id='api'>API</h1><dl><dt id='api.open'>open()</dt><dd>Opens.</dd>"
        "<dt id='api.close'>close()</dt><dd>Closes.</dd></dl></body></html>",
        encoding="utf-8",
    )
    ingest(store, collection)
    (chunk,) = store.chunks("ref")
    assert chunk.anchor == "api" and chunk.anchors == ("api", "api.open", "api.close")
    assert store.get(chunk.chunk_id) == chunk
    assert store.get_many([chunk.chunk_id])[chunk.chunk_id].anchors == chunk.anchors


def test_what_a_document_says_of_itself_is_read_back(store: Store, collection: Path):
    """Every metadata field round-trips through `documents`, `versions`, `get` and `chunks`:
    the effective dates, the owner and the review date (`review_by`) included."""
    ingest(store, collection)
    v1, v2 = store.versions("policy")
    assert (v1.version, v1.effective_from, v1.effective_to, v1.owner, v1.review_by) == (
        "1", date(2025, 1, 1), date(2025, 12, 31), "Refunds Desk", date(2025, 6, 30),
    )  # fmt: skip
    assert (v2.effective_to, v2.review_by) == (None, date(2026, 6, 30))
    by_key = {(d.meta.doc_id, d.meta.version): d.meta for d in store.documents()}
    assert by_key[("policy", "1")] == v1 and by_key[("policy", "2")] == v2
    assert by_key[("staff-0", "1")].review_by is None
    (chunk,) = store.chunks("policy", "2")
    assert store.get(chunk.chunk_id).meta == v2  # type: ignore[union-attr]


def test_the_generation_moves_and_another_store_object_sees_the_new_data(
    factory: Factory, store: Store, location: str, collection: Path
):
    first = store.generation()
    ingest(store, collection)
    second = store.generation()
    assert second != first
    other = factory.open(location)
    assert other.generation() == second
    assert state(other) == state(store)
    seen = other.search_dense(query_vector("walrus tusk"), 1, STAFF)  # fills its caches

    (collection / "walrus.md").write_text(md("walrus", "# Walrus\n\nWalrus tusk walrus tusk."))
    ingest(store, collection)
    assert store.generation() != second
    assert other.generation() == store.generation()
    new = {c.chunk_id for c in other.chunks("walrus")}
    assert new and other.search_dense(query_vector("walrus tusk"), 1, STAFF)[0][0] in new
    assert seen[0][0] not in new
    assert other.search_lexical("walrus", 1, STAFF)[0].chunk.doc_id == "walrus"
    assert set(other.vectors()[0]) == set(store.vectors()[0])

    old = list(new)
    assert set(other.vectors_of(old)) == set(old)  # served from its caches
    (collection / "walrus.md").unlink()
    ingest(store, collection)
    assert other.vectors_of(old) == {} and other.vector(old[0]) is None  # removed elsewhere
    assert other.get_many(old) == {}

    store.set_meta({"gate_floor:test": "0.5"})
    assert other.meta_value("gate_floor:test") == "0.5"
    assert other.generation() == store.generation()
    other.close()


def test_get_many_never_answers_from_before_another_objects_write(
    factory: Factory, store: Store, location: str, collection: Path
):
    """A store may keep the chunks `get_many` and the sentence vectors `sentence_vectors`
    read (SQLite does, for one generation): after another object relabels the document (same
    text, so the same chunk ID), the next read gives the new label; a chunk removed
    elsewhere is gone, its sentence vectors too."""
    ingest(store, collection)
    other = factory.open(location)
    (chunk,) = other.chunks("public-0")
    cid = chunk.chunk_id
    sentences = store.sentence_vectors([cid])
    assert sentences
    for _ in range(2):  # the second read may be served from memory
        assert other.get_many([cid, "no-such-chunk"]) == {cid: chunk}
        found = other.sentence_vectors([cid, "no-such-chunk"])
        assert list(found) == [cid] and found[cid][0] == sentences[cid][0]
        assert (found[cid][1] == sentences[cid][1]).all()
    body = "# Animals 0\n\nA zebra visits the farm 0."
    (collection / "public-0.md").write_text(md("public-0", body, access="staff"))
    ingest(store, collection)
    (relabelled,) = store.chunks("public-0")
    assert relabelled.chunk_id == cid and relabelled.meta.access == "staff"
    assert other.get_many([cid])[cid].meta.access == "staff"
    (collection / "public-0.md").unlink()
    ingest(store, collection)
    assert other.get_many([cid]) == {}
    assert other.sentence_vectors([cid]) == {}
    other.close()


def test_a_snapshot_sees_one_state_until_it_ends(
    factory: Factory, store: Store, location: str, collection: Path
):
    """Inside `snapshot()` every read sees the state of the index as it was when the scope
    began, while another object writes (a search's several reads agree): PostgreSQL commits
    the write meanwhile, SQLite's writer waits for the scope to end. Nested scopes share it;
    after the scope the next read sees the write."""
    ingest(store, collection)
    other = factory.open(location)
    before = other.generation()
    (collection / "public-0.md").unlink()
    failed: list[BaseException] = []

    def write() -> None:  # an object of its own: a SQLite connection serves one thread
        try:
            ingest(factory.open(location), collection)
        except BaseException as exc:
            failed.append(exc)

    writer = threading.Thread(target=write)
    with other.snapshot():
        ids = {c.chunk_id for c in other.chunks("public-0")}
        writer.start()
        writer.join(timeout=3)  # PostgreSQL: committed; SQLite: waiting for this scope
        with other.snapshot():  # nested: the same state
            assert other.generation() == before
            assert {c.chunk_id for c in other.chunks("public-0")} == ids
        assert ids and set(other.get_many(ids)) == ids
        assert other.search_lexical("zebra farm 0", 5, STAFF)
    writer.join(timeout=60)
    assert not writer.is_alive() and not failed, failed
    assert other.generation() == store.generation() != before
    assert other.chunks("public-0") == [] and other.get_many(ids) == {}
    other.close()


def test_concurrent_readers_see_consistent_generations_while_one_writer_applies(
    factory: Factory, location: str, tmp_path: Path
):
    """Every round rewrites every document with its round number: a reader that mixed two
    generations in one call would see two round numbers."""
    folder = tmp_path / "rounds"
    folder.mkdir()

    def write_round(n: int) -> None:
        for i in range(12):
            body = f"# Doc {i}\n\nMarker round{n} text {i}.\n\n## Part\n\nMarker round{n} more {i}."
            (folder / f"d{i:02d}.md").write_text(md(f"d{i:02d}", body, access="public"))

    writer = factory.open(location)
    write_round(0)
    ingest(writer, folder)
    done = threading.Event()
    errors: list[BaseException] = []
    reads: list[int] = []

    def rounds(texts: list[str]) -> set[str]:
        return {r for t in texts for r in re.findall(r"round\d+", t)}

    def read() -> None:
        reader = factory.open(location)
        count, last = 0, -1
        try:
            while not done.is_set() or count < 3:
                generation = reader.generation()
                assert generation >= last
                last = generation
                chunks = reader.chunks()
                assert len(chunks) == 24 and len(rounds([c.text for c in chunks])) == 1
                hits = reader.search_lexical("marker", 30, PUBLIC)
                assert len(hits) == 24 and len(rounds([h.chunk.text for h in hits])) == 1
                ids, matrix = reader.vectors()
                assert len(ids) == matrix.shape[0] == 24
                count += 1
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)
        finally:
            reads.append(count)
            reader.close()

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for n in range(1, 5):
        write_round(n)
        ingest(writer, folder)
        time.sleep(0.02)
    done.set()
    for t in threads:
        t.join(60)
    writer.close()
    assert not errors, errors[0]
    assert len(reads) == 3 and min(reads) >= 3


def test_a_reader_opened_read_only_follows_the_writer_and_never_writes(
    factory: Factory, store: Store, location: str, collection: Path
):
    """`open_store(location)` opens for reading: the reader sees each new generation, every
    write through it is refused with one clear error, and its reads leave the file as it was."""
    ingest(store, collection)
    reader = open_store(location)
    assert state(reader) == state(store)
    before = factory.fingerprint(location)
    reader.search_lexical("walrus tusk", 3, PUBLIC)
    reader.search_dense(query_vector("walrus tusk"), 3, PUBLIC)
    reader.documents(), reader.info(), reader.chunks(), reader.file_states()
    with pytest.raises(TetherError, match="opened for reading"):
        reader.set_meta({"gate_floor:test": "0.5"})
    assert factory.fingerprint(location) == before
    (collection / "walrus.md").write_text(md("walrus", "# Walrus\n\nWalrus tusk walrus tusk."))
    ingest(store, collection)
    assert reader.generation() == store.generation() and state(reader) == state(store)
    reader.close()
