"""Chunkers and stable chunk IDs, with property tests for the invariants."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.ingest.chunking import chunk_document, chunk_id, word_count
from tether.types import Block, ChunkerConfig, DocMeta, Document

META = DocMeta(doc_id="returns-policy", version="4", title="Returns policy", access="public")


def make_doc(items: list[tuple[str, str]], meta: DocMeta = META) -> Document:
    """A Document from (kind, text) items; headings are "h1:Title" / "h2:Title"."""
    blocks: list[Block] = []
    parts: list[str] = []
    offset = 0
    path: list[str] = []
    table = -1
    for kind, text in items:
        level = None
        header = False
        if kind.startswith("h"):
            level = int(kind[1])
            path = [*path[: level - 1], text]
            kind = "heading"
        if kind == "th":
            table += 1
            kind, header = "table_row", True
        start = offset
        blocks.append(
            Block(
                kind=kind,  # type: ignore[arg-type]
                text=text,
                heading_path=tuple(path),
                start=start,
                end=start + len(text),
                level=level,
                header_row=header,
                table=table if kind == "table_row" else None,
            )
        )
        parts.append(text)
        offset += len(text) + 2
    return Document(meta=meta, text="\n\n".join(parts), blocks=tuple(blocks), content_hash="x")


def assert_maps_back(doc: Document, chunks) -> None:
    for c in chunks:
        body = doc.text[c.start : c.end]
        assert c.text == (f"{c.lead}\n{body}" if c.lead else body)


POLICY = [
    ("h1", "Returns policy"),
    ("h2", "Return window"),
    ("paragraph", "You can return most items within 45 days of delivery."),
    ("h2", "Condition of items"),
    ("paragraph", "Items must be unused and in their original packaging."),
    ("list_item", "Bikes must have fewer than 50 km on the odometer."),
]


def test_one_chunk_per_section_and_title_carried():
    doc = make_doc(POLICY)
    chunks = chunk_document(doc)
    assert [c.heading_path for c in chunks] == [
        ("Returns policy", "Return window"),
        ("Returns policy", "Condition of items"),
    ]
    # the bare title heading is carried into the first section's chunk, not alone
    assert chunks[0].text.startswith("Returns policy")
    assert "45 days" in chunks[0].text
    assert "50 km" in chunks[1].text
    assert [c.ordinal for c in chunks] == [0, 1]
    assert_maps_back(doc, chunks)


def test_long_section_splits_between_blocks():
    para = " ".join(["word"] * 60)
    doc = make_doc([("h2", "Long"), *[("paragraph", f"{para} {i}") for i in range(5)]])
    chunks = chunk_document(doc, ChunkerConfig(max_words=150))
    assert len(chunks) >= 3
    assert all(word_count(c.text) <= 150 for c in chunks)
    assert all(c.heading_path == ("Long",) for c in chunks)
    assert_maps_back(doc, chunks)


def test_long_table_repeats_header_row():
    rows = [("th", "Category | Warranty")] + [
        ("table_row", f"Category {i} with several words here | {i} years") for i in range(40)
    ]
    doc = make_doc([("h2", "Warranty by category"), *rows])
    chunks = chunk_document(doc, ChunkerConfig(max_words=60))
    assert len(chunks) > 2
    assert chunks[0].lead == ""
    for c in chunks[1:]:
        assert c.lead == "Category | Warranty"
        assert c.text.startswith("Category | Warranty\n")
    assert_maps_back(doc, chunks)


def test_single_giant_block_is_cut_between_words():
    doc = make_doc([("h2", "Wall of text"), ("paragraph", " ".join(f"w{i}" for i in range(1000)))])
    chunks = chunk_document(doc, ChunkerConfig(max_words=200))
    assert len(chunks) >= 5
    # the heading stays with the first piece (never a chunk alone): that one passes by its words
    assert word_count(chunks[0].text) <= 200 + word_count("Wall of text")
    assert all(word_count(c.text) <= 200 for c in chunks[1:])
    assert_maps_back(doc, chunks)


def test_fixed_and_overlap_windows():
    doc = make_doc([("h2", "A"), ("paragraph", " ".join(f"w{i}" for i in range(250)))])
    fixed = chunk_document(doc, ChunkerConfig("fixed", max_words=100))
    overlap = chunk_document(doc, ChunkerConfig("overlap", max_words=100, overlap_words=50))
    assert [word_count(c.text) for c in fixed] == [100, 100, 51]
    assert len(overlap) == 5  # windows start at words 0, 50, 100, 150, 200
    assert overlap[1].text.split()[0] == doc.text.split()[50]
    assert_maps_back(doc, fixed)
    assert_maps_back(doc, overlap)


def test_ids_depend_on_doc_version_path_and_normalized_text():
    base = chunk_id("d", "1", ("A",), "some  text\n")
    assert base == chunk_id("d", "1", ("A",), "some text")
    assert len(base) == 12 and int(base, 16) >= 0
    assert base != chunk_id("d", "2", ("A",), "some text")
    assert base != chunk_id("e", "1", ("A",), "some text")
    assert base != chunk_id("d", "1", ("B",), "some text")
    assert base != chunk_id("d", "1", ("A",), "other text")


def test_repeated_identical_sections_get_distinct_ids():
    doc = make_doc([("h2", "Note"), ("paragraph", "Same."), ("h2", "Note"), ("paragraph", "Same.")])
    ids = [c.chunk_id for c in chunk_document(doc)]
    assert len(ids) == len(set(ids)) == 2


# ---- properties ---------------------------------------------------------------------------

words = st.text(alphabet="abcdeéfgçhijklmnop ", min_size=1, max_size=40).map(str.strip).filter(bool)
items = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["h1", "h2", "h3"]), words),
        st.tuples(st.just("paragraph"), st.lists(words, min_size=1, max_size=30).map(" ".join)),
        st.tuples(st.just("list_item"), words),
    ),
    min_size=1,
    max_size=30,
)
configs = st.sampled_from(
    [
        ChunkerConfig(max_words=20),
        ChunkerConfig(),
        ChunkerConfig("fixed", 15),
        ChunkerConfig("overlap", 15, 5),
    ]
)


@settings(max_examples=150, deadline=None)
@given(items, configs)
def test_every_chunk_maps_back_to_its_offsets(doc_items, config):
    doc = make_doc(doc_items)
    chunks = chunk_document(doc, config)
    assert_maps_back(doc, chunks)
    assert len({c.chunk_id for c in chunks}) == len(chunks)


@settings(max_examples=100, deadline=None)
@given(items)
def test_ids_stable_across_reingest(doc_items):
    first = [c.chunk_id for c in chunk_document(make_doc(doc_items))]
    again = [c.chunk_id for c in chunk_document(make_doc(list(doc_items)))]
    assert first == again


@settings(max_examples=100, deadline=None)
@given(items, words)
def test_ids_unchanged_by_edits_to_other_sections(doc_items, extra):
    before = chunk_document(make_doc([*doc_items, ("h2", "Edited section"), ("paragraph", "old")]))
    after = chunk_document(
        make_doc([*doc_items, ("h2", "Edited section"), ("paragraph", extra + " new")])
    )
    untouched = [c.chunk_id for c in before if "Edited section" not in c.heading_path]
    after_ids = {c.chunk_id for c in after}
    assert all(cid in after_ids for cid in untouched)


def test_other_meta_fields_do_not_change_ids():
    doc = make_doc(POLICY)
    renamed = make_doc(POLICY, replace(META, title="Returns (renamed)", access="staff"))
    assert [c.chunk_id for c in chunk_document(doc)] == [
        c.chunk_id for c in chunk_document(renamed)
    ]


def test_a_page_of_bare_headings_chunks_in_linear_time() -> None:
    """Hostile pass after issue 47: a Markdown page of 200,000 headings and no text took
    minutes (every new heading re-read the bare headings carried so far). 60,000 headings
    chunk into the chunk they make together, with the text after them, at once."""
    items = [("h1", f"h{i}") for i in range(60_000)] + [("p", "The only text on the page.")]
    chunks = list(chunk_document(make_doc(items), ChunkerConfig(max_words=200_000)))
    assert len(chunks) == 1 and chunks[0].text.endswith("The only text on the page.")
