"""doc_id collisions and look-alikes (issue 47). A file that claims a doc_id another file
already holds in the index never knocks that one out: the holder keeps its place (even on a
rebuild, even when it changed in the same sync) and the newcomer is the problem file. A second
path to one file (a link inside the folder, a hard link) is that file, read once. doc_ids are
NFKC and stripped; one with an invisible format character is refused; doc_ids that look alike
(a Cyrillic "о" for a Latin "o") are named together in a warning."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.errors import ParseError
from tether.ingest.metadata import clean_doc_id, doc_id_skeleton, lookalike_doc_ids
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.types import SyncReport


def md(doc_id: str, body: str, access: str) -> str:
    return f'---\ndoc_id: "{doc_id}"\naccess: {access}\n---\n\n# Policy\n\n{body}\n'


STAFF = md("policy", "Staff only: the override code is 4711.", "staff")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "staff.md").write_text(STAFF)
    (folder / "other.md").write_text(md("other", "Another document.", "public"))
    return folder


@pytest.fixture
def store(tmp_path: Path):
    s = SqliteStore(tmp_path / "index.sqlite")
    yield s
    s.close()


def held(store: SqliteStore) -> dict[str, tuple[str, str]]:
    """doc_id -> (source, access) of what the index serves."""
    return {d.meta.doc_id: (d.meta.source, d.meta.access) for d in store.documents()}


def problems(report: SyncReport) -> dict[str, str]:
    return {p.source: p.reason for p in report.problems}


# ------------------------------------------------------------------------- collisions


@pytest.mark.parametrize("rebuild", [False, True])
def test_a_newcomer_with_a_staff_doc_id_never_knocks_the_staff_document_out(
    docs: Path, store: SqliteStore, rebuild: bool
) -> None:
    sync(store, docs)
    (docs / "public.md").write_text(md("policy ", "Public: there is no code.", "public"))
    report = sync(store, docs, rebuild=rebuild)
    assert list(problems(report)) == ["public.md"]
    reason = problems(report)["public.md"]
    assert "doc_id 'policy' version '1' is also in staff.md" in reason
    assert "staff.md held it first and keeps it" in reason
    assert held(store)["policy"] == ("staff.md", "staff")
    again = sync(store, docs)  # and at every later sync
    assert list(problems(again)) == ["public.md"] and held(store)["policy"][0] == "staff.md"


def test_the_holder_changed_in_the_same_sync_keeps_its_doc_id(
    docs: Path, store: SqliteStore
) -> None:
    sync(store, docs)
    (docs / "staff.md").write_text(STAFF.replace("4711", "4712"))
    (docs / "public.md").write_text(md("policy", "Public: there is no code.", "public"))
    report = sync(store, docs)
    assert report.updated == ("staff.md",) and list(problems(report)) == ["public.md"]
    assert held(store)["policy"] == ("staff.md", "staff")
    assert any("4712" in c.text for c in store.chunks())


def test_a_link_to_a_file_is_that_file_read_once(docs: Path, store: SqliteStore) -> None:
    (docs / "a-link.md").symlink_to(docs / "staff.md")  # sorts before the file it leads to
    os.link(docs / "other.md", docs / "z-hard.md")
    report = sync(store, docs)
    assert not report.problems
    assert sorted(report.added) == ["other.md", "staff.md"]
    assert held(store)["policy"] == ("staff.md", "staff")
    assert sorted(report.warnings) == [
        "a-link.md is the same file as staff.md (a link to it, or a second name): read once,"
        " as staff.md",
        "z-hard.md is the same file as other.md (a link to it, or a second name): read once,"
        " as other.md",
    ]
    assert not sync(store, docs, rebuild=True).problems


def test_doc_ids_are_stripped_of_surrounding_whitespace() -> None:
    assert clean_doc_id("  policy \t", "") == "policy"
    assert clean_doc_id("policy\u3000", "") == "policy"  # an ideographic space
    with pytest.raises(ParseError, match="doc_id is empty"):
        clean_doc_id("   ", "")


def test_a_doc_id_is_one_line_of_bounded_length() -> None:
    """Hostile pass (issue 47): NUL and line breaks in a doc_id, or a doc_id of 5,000
    characters, were indexed; they are refused with one line naming why."""
    for bad in ("staff\x00refunds", "staff\nrefunds", "a\rb", "tab\x07bell"):
        with pytest.raises(ParseError, match="control character"):
            clean_doc_id(bad, "")
    with pytest.raises(ParseError, match="5,000 characters long; at most 512"):
        clean_doc_id("z" * 5000, "")
    assert clean_doc_id("z" * 512, "") == "z" * 512


def test_a_doc_id_that_reads_as_a_path_or_holds_a_filler_is_refused() -> None:
    """Hostile pass after issue 47: '../staff-discounts', './x', 'x/' and a trailing Hangul
    filler (invisible, warned only as a look-alike) were indexed."""
    for bad in ("../staff-discounts", "./x", "x/", "/x", "a//b", "guides/../staff"):
        with pytest.raises(ParseError, match="reads as a path"):
            clean_doc_id(bad, "")
    with pytest.raises(ParseError, match="U\\+1160 HANGUL JUNGSEONG FILLER"):
        clean_doc_id("policy\u3164", "")  # NFKC makes the filler U+1160
    assert clean_doc_id("guides/returns", "") == "guides/returns"
    assert clean_doc_id("v1.2/notes..old", "") == "v1.2/notes..old"


# ------------------------------------------------------------------------- look-alikes


def test_a_fullwidth_doc_id_is_the_doc_id_it_imitates(docs: Path, store: SqliteStore) -> None:
    sync(store, docs)
    (docs / "public.md").write_text(md("ｐｏｌｉｃｙ", "Public: there is no code.", "public"))
    report = sync(store, docs)
    assert "doc_id 'policy' version '1' is also in staff.md" in problems(report)["public.md"]
    assert held(store)["policy"] == ("staff.md", "staff") and len(held(store)) == 2


@pytest.mark.parametrize(
    ("doc_id", "named"),
    [
        ("pol\u200bicy", "U+200B ZERO WIDTH SPACE"),
        ("policy\u200d", "U+200D ZERO WIDTH JOINER"),
        ("\u200fpolicy", "U+200F RIGHT-TO-LEFT MARK"),
        ("pol\u00adicy", "U+00AD SOFT HYPHEN"),
        ("\u2060policy", "U+2060 WORD JOINER"),
    ],
)
def test_a_doc_id_with_an_invisible_character_is_refused(
    docs: Path, store: SqliteStore, doc_id: str, named: str
) -> None:
    (docs / "public.md").write_text(md(doc_id, "Public: there is no code.", "public"))
    report = sync(store, docs)
    reason = problems(report)["public.md"]
    assert "\n" not in reason and named in reason and "write it without one" in reason
    assert held(store)["policy"] == ("staff.md", "staff")


def test_a_file_name_with_an_invisible_character_needs_a_doc_id(
    docs: Path, store: SqliteStore
) -> None:
    (docs / "pol\u200bicy.md").write_text("# Policy\n\nNo front matter.\n")
    reason = problems(sync(store, docs))["pol\u200bicy.md"]
    assert reason.startswith("the doc_id that the file's path gives 'pol\\u200bicy'")
    assert "rename the file or give it a doc_id" in reason


@pytest.mark.parametrize(
    ("lookalike", "character"),
    [
        ("pоlicy", "U+043E CYRILLIC SMALL LETTER O"),
        ("pοlicy", "U+03BF GREEK SMALL LETTER OMICRON"),
        ("polіcy", "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I"),
        ("policy\ufe0f", "U+FE0F VARIATION SELECTOR-16"),
    ],
)
def test_lookalike_doc_ids_are_named_together_in_a_warning(
    docs: Path, store: SqliteStore, lookalike: str, character: str
) -> None:
    (docs / "public.md").write_text(md(lookalike, "Public: there is no code.", "public"))
    report = sync(store, docs)
    assert not report.problems
    assert report.warnings == (
        f"doc_ids that look alike: 'policy' (staff.md) and '{lookalike}' (public.md,"
        f" {character}); a reader cannot tell them apart (give one another doc_id)",
    )
    assert held(store)["policy"] == ("staff.md", "staff")
    assert sync(store, docs).warnings == report.warnings  # at every sync while they last


def test_what_counts_as_a_lookalike() -> None:
    assert doc_id_skeleton("POLІCY") == doc_id_skeleton("POLICY")  # a Cyrillic capital І
    assert doc_id_skeleton("ｐolicy") == "policy"
    assert lookalike_doc_ids({"a.md": "doc-I", "b.md": "doc-l"}) == []  # plain ASCII: no
    assert lookalike_doc_ids({"a.md": "règlement", "b.md": "reglement"}) == []  # an accent
    assert lookalike_doc_ids({"a.md": "Policy", "b.md": "policy"}) == []  # a letter case
    assert len(lookalike_doc_ids({"a.md": "POLICY", "b.md": "POLІCY", "c.md": "P0LICY"})) == 1
