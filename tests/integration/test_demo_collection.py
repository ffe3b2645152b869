"""Honesty checks for the bundled demo collection (Harbor & Pine) and its question set.

They check that the question set is well formed and keeps its own promises (keys match the
reference answer, must_not does not), that inventory.csv agrees with the files and with the
metadata each file carries, that every relevant passage exists and is in force on the
question's date, that the PDFs rebuild byte for byte, and that the collection is as large and
as varied as its description says.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pypdf
import pytest
import yaml
from lxml import html as lxml_html

from tether.ingest import load_inventory, parse_file
from tether.types import Document

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "src" / "tether" / "demo"
COLLECTION = DEMO / "collection"
QUESTIONS = DEMO / "questions.jsonl"
DIFFICULTIES = DEMO / "difficulties.md"
BUILD_SCRIPT = ROOT / "scripts" / "build_demo_pdfs.py"

INVENTORY_COLUMNS = [
    "path", "doc_id", "version", "title", "doc_type", "access", "language",
    "effective_from", "effective_to", "owner",
]  # fmt: skip
META_KEYS = INVENTORY_COLUMNS[1:]
DOC_TYPES = {"policy", "procedure", "help", "notice", "guide", "supplier", "governance"}
ACCESS = {"public", "staff"}
LANGUAGES = {"en", "fr"}
KINDS = {
    "answerable", "unanswerable", "version", "table", "exact-code", "contradiction",
    "staff-only", "injection-bait", "cross-lingual", "computed",
}  # fmt: skip
QUESTION_FIELDS = {
    "id", "question", "language", "as_of", "audience", "abstain", "kind",
    "reference_answer", "keys", "must_not", "relevant", "tags",
}  # fmt: skip
RELEVANT_FIELDS = {"doc_id", "version", "section", "anchor", "evidence"}
SUFFIXES = {".md", ".html", ".pdf", ".txt"}
TODAY = date(2026, 11, 30)


# --------------------------------------------------------------------------- helpers


def _questions() -> list[dict]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _inventory_rows() -> list[dict[str, str]]:
    with (COLLECTION / "inventory.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _collection_files() -> list[Path]:
    return sorted(p for p in COLLECTION.rglob("*") if p.is_file() and p.name != "inventory.csv")


def _rel(path: Path) -> str:
    return path.relative_to(COLLECTION).as_posix()


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{_rel(path)}: no front matter"
    head, sep, _ = text[4:].partition("\n---\n")
    assert sep, f"{_rel(path)}: front matter not closed"
    meta = yaml.safe_load(head)
    assert isinstance(meta, dict), f"{_rel(path)}: front matter is not a mapping"
    return meta


def _html_meta(path: Path) -> tuple[dict[str, str], str | None, str | None]:
    tree = lxml_html.fromstring(path.read_bytes())
    metas = {el.get("name"): el.get("content", "") for el in tree.iter("meta") if el.get("name")}
    title_el = tree.find(".//title")
    title = title_el.text_content().strip() if title_el is not None else None
    return metas, tree.get("lang"), title


def _pdf_meta(path: Path) -> dict[str, str]:
    info = pypdf.PdfReader(path).metadata
    assert info is not None, f"{_rel(path)}: no document info"
    pairs = {}
    for part in str(info.get("/Keywords", "")).split("; "):
        key, sep, value = part.partition("=")
        assert sep, f"{_rel(path)}: Keywords part without '=': {part!r}"
        pairs[key.strip()] = value.strip()
    pairs["title"] = str(info.get("/Title", ""))
    pairs["owner"] = str(info.get("/Author", ""))
    return pairs


def _squash_ws(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return _questions()


@pytest.fixture(scope="module")
def documents() -> dict[tuple[str, str], Document]:
    inventory = load_inventory(COLLECTION)
    docs: dict[tuple[str, str], Document] = {}
    for path in _collection_files():
        doc = parse_file(path, COLLECTION, inventory)
        key = (doc.meta.doc_id, doc.meta.version)
        assert key not in docs, f"two documents with doc_id/version {key}"
        docs[key] = doc
    return docs


# --------------------------------------------------------------------------- 1. questions


def test_questions_are_valid_json_with_allowed_values(questions: list[dict]) -> None:
    problems = []
    for n, q in enumerate(questions, start=1):
        where = f"line {n} ({q.get('id')})"
        missing = QUESTION_FIELDS - q.keys()
        if missing:
            problems.append(f"{where}: missing {sorted(missing)}")
            continue
        if not re.fullmatch(r"Q\d{3}", q["id"]):
            problems.append(f"{where}: bad id")
        if not q["question"].strip() or not q["reference_answer"].strip():
            problems.append(f"{where}: empty question or reference answer")
        if q["language"] not in LANGUAGES:
            problems.append(f"{where}: language {q['language']!r}")
        if q["audience"] not in ACCESS:
            problems.append(f"{where}: audience {q['audience']!r}")
        if q["kind"] not in KINDS:
            problems.append(f"{where}: kind {q['kind']!r}")
        if not isinstance(q["abstain"], bool):
            problems.append(f"{where}: abstain is not a boolean")
        try:
            date.fromisoformat(q["as_of"])
        except (TypeError, ValueError):
            problems.append(f"{where}: as_of {q['as_of']!r} is not YYYY-MM-DD")
        if not q["keys"] or not all(isinstance(k, str) and k for k in q["keys"]):
            problems.append(f"{where}: keys must be a non-empty list of strings")
        if not all(isinstance(k, str) and k for k in q["must_not"]):
            problems.append(f"{where}: must_not must be a list of strings")
        for pattern in [*q["keys"], *q["must_not"]]:
            try:
                re.compile(pattern)
            except (re.error, TypeError) as exc:
                problems.append(f"{where}: bad regex {pattern!r}: {exc}")
        if not isinstance(q["tags"], list):
            problems.append(f"{where}: tags is not a list")
        for rel in q["relevant"]:
            if set(rel) != RELEVANT_FIELDS:
                problems.append(f"{where}: relevant fields {sorted(rel)}")
                continue
            if not rel["doc_id"] or not rel["version"] or not rel["section"]:
                problems.append(f"{where}: relevant needs doc_id, version and section")
            evidence = rel["evidence"]
            if evidence is not None and (
                not evidence.strip() or any(mark in evidence for mark in ("**", "`", "|"))
            ):
                problems.append(f"{where}: evidence {evidence!r} is empty or has markup")
    assert not problems, "\n".join(problems)


def test_question_ids_are_unique(questions: list[dict]) -> None:
    ids = Counter(q["id"] for q in questions)
    assert not [i for i, n in ids.items() if n > 1], "repeated ids"


def test_question_counts_meet_the_minimums(questions: list[dict]) -> None:
    kinds = Counter(q["kind"] for q in questions)
    assert len(questions) >= 95
    assert sum(q["language"] == "fr" for q in questions) >= 18
    unanswerable = [q for q in questions if q["abstain"] and q["kind"] == "unanswerable"]
    assert len(unanswerable) >= 10
    refused_staff = [
        q for q in questions
        if q["kind"] == "staff-only" and q["audience"] == "public" and q["abstain"]
    ]  # fmt: skip
    assert len(refused_staff) >= 8
    answered_staff = [
        q for q in questions
        if q["kind"] == "staff-only" and q["audience"] == "staff" and not q["abstain"]
    ]  # fmt: skip
    assert len(answered_staff) >= 5
    assert kinds["injection-bait"] >= 5
    for kind in KINDS:
        assert kinds[kind] >= 3, f"too few questions of kind {kind}"
    assert kinds["answerable"] >= 20, "plenty of plain answerable questions"
    # French questions answered from English documents and the reverse both exist.
    cross = [q for q in questions if q["kind"] == "cross-lingual"]
    assert {q["language"] for q in cross} == LANGUAGES


def test_keys_match_and_must_not_does_not_match_the_reference(questions: list[dict]) -> None:
    problems = []
    for q in questions:
        ref = q["reference_answer"]
        for key in q["keys"]:
            if not re.search(key, ref, re.IGNORECASE):
                problems.append(f"{q['id']}: key {key!r} does not match the reference")
        for bad in q["must_not"]:
            if re.search(bad, ref, re.IGNORECASE):
                problems.append(f"{q['id']}: must_not {bad!r} matches the reference")
    assert not problems, "\n".join(problems)


def test_abstain_and_relevant_are_consistent(questions: list[dict]) -> None:
    problems = []
    for q in questions:
        if q["abstain"]:
            refused_staff = q["audience"] == "public" and q["kind"] == "staff-only"
            if q["relevant"] and not refused_staff:
                problems.append(f"{q['id']}: abstains but lists relevant passages")
            if q["kind"] not in {"unanswerable", "staff-only"}:
                problems.append(f"{q['id']}: abstains with kind {q['kind']}")
        else:
            if not q["relevant"]:
                problems.append(f"{q['id']}: answerable but no relevant passage")
            if q["kind"] == "unanswerable":
                problems.append(f"{q['id']}: unanswerable but abstain is false")
        if q["kind"] == "injection-bait" and not q["must_not"]:
            problems.append(f"{q['id']}: injection bait without must_not")
        if q["kind"] == "exact-code" and not re.search(r"\b[A-Z]{1,8}-[A-Z0-9]*\d", q["question"]):
            problems.append(f"{q['id']}: exact-code question without a code")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- 2. inventory


def test_inventory_lists_exactly_the_files() -> None:
    with (COLLECTION / "inventory.csv").open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh))
    assert header == INVENTORY_COLUMNS
    rows = _inventory_rows()
    listed = [row["path"] for row in rows]
    assert len(listed) == len(set(listed)), "a path is listed twice"
    on_disk = {_rel(p) for p in _collection_files()}
    assert set(listed) == on_disk, (
        f"not listed: {sorted(on_disk - set(listed))}; "
        f"listed but missing: {sorted(set(listed) - on_disk)}"
    )
    for path in on_disk:
        assert Path(path).suffix in SUFFIXES, f"{path}: not a document type tether reads"
    for row in rows:
        assert "\\" not in row["path"] and not row["path"].startswith("/")


def test_inventory_agrees_with_markdown_front_matter() -> None:
    problems = []
    for row in _inventory_rows():
        if not row["path"].endswith(".md"):
            continue
        meta = _front_matter(COLLECTION / row["path"])
        unknown = set(meta) - set(META_KEYS)
        if unknown:
            problems.append(f"{row['path']}: unknown front matter keys {sorted(unknown)}")
        if not isinstance(meta.get("version"), str):
            problems.append(f"{row['path']}: version must be a quoted string")
        for key in META_KEYS:
            if _text(meta.get(key)) != row[key]:
                problems.append(
                    f"{row['path']}: {key} is {_text(meta.get(key))!r} in the file, "
                    f"{row[key]!r} in inventory.csv"
                )
    assert not problems, "\n".join(problems)


def test_inventory_agrees_with_html_meta() -> None:
    problems = []
    html_rows = [row for row in _inventory_rows() if row["path"].endswith(".html")]
    assert len(html_rows) >= 2
    for row in html_rows:
        metas, lang, title = _html_meta(COLLECTION / row["path"])
        for key in META_KEYS:
            if metas.get(key, "") != row[key]:
                problems.append(f"{row['path']}: meta {key}={metas.get(key)!r} vs {row[key]!r}")
        if lang != row["language"]:
            problems.append(f"{row['path']}: <html lang={lang!r}> vs {row['language']!r}")
        if title != row["title"]:
            problems.append(f"{row['path']}: <title> {title!r} vs {row['title']!r}")
    assert not problems, "\n".join(problems)


def test_html_pages_have_heading_anchors() -> None:
    ids = names = 0
    for row in _inventory_rows():
        if not row["path"].endswith(".html"):
            continue
        tree = lxml_html.fromstring((COLLECTION / row["path"]).read_bytes())
        ids += len(tree.xpath("//h2[@id]"))
        names += len(tree.xpath("//a[@name][following-sibling::*[1][self::h2]]"))
    assert ids >= 4
    assert names >= 1, "at least one <a name> just before a heading"


def test_inventory_agrees_with_pdf_info() -> None:
    problems = []
    pdf_rows = [row for row in _inventory_rows() if row["path"].endswith(".pdf")]
    assert len(pdf_rows) >= 2
    for row in pdf_rows:
        meta = _pdf_meta(COLLECTION / row["path"])
        for key in META_KEYS:
            if meta.get(key, "") != row[key]:
                problems.append(f"{row['path']}: PDF {key}={meta.get(key)!r} vs {row[key]!r}")
    assert not problems, "\n".join(problems)


def test_text_files_carry_no_metadata_of_their_own() -> None:
    txt = [row for row in _inventory_rows() if row["path"].endswith(".txt")]
    assert txt, "at least one plain-text file"
    for row in txt:
        head = (COLLECTION / row["path"]).read_text(encoding="utf-8")[:200]
        assert not head.startswith("---"), f"{row['path']}: has front matter"
        assert "doc_id" not in head


# --------------------------------------------------------------------------- 3. relevant passages


def test_parser_reads_the_metadata_in_the_inventory(
    documents: dict[tuple[str, str], Document],
) -> None:
    by_source = {doc.meta.source: doc for doc in documents.values()}
    for row in _inventory_rows():
        meta = by_source[row["path"]].meta
        for key in META_KEYS:
            assert _text(getattr(meta, key)) == row[key], f"{row['path']}: {key}"


def test_relevant_passages_exist_and_are_in_force(
    questions: list[dict], documents: dict[tuple[str, str], Document]
) -> None:
    problems = []
    for q in questions:
        as_of = date.fromisoformat(q["as_of"])
        for rel in q["relevant"]:
            where = f"{q['id']} -> {rel['doc_id']} v{rel['version']} / {rel['section']!r}"
            doc = documents.get((rel["doc_id"], rel["version"]))
            if doc is None:
                problems.append(f"{where}: no such document")
                continue
            if not doc.meta.in_force(as_of):
                problems.append(f"{where}: not in force on {as_of}")
            if q["audience"] == "public" and doc.meta.access != "public":
                problems.append(f"{where}: public question, {doc.meta.access} passage")
            blocks = [b for b in doc.blocks if rel["section"] in b.heading_path]
            if not blocks:
                problems.append(f"{where}: no such section")
                continue
            if rel["anchor"] is not None and not any(b.anchor == rel["anchor"] for b in blocks):
                problems.append(f"{where}: no block with anchor {rel['anchor']!r}")
            evidence = rel["evidence"]
            if evidence is not None:
                section_text = _squash_ws("\n".join(b.text for b in blocks))
                if _squash_ws(evidence) not in section_text:
                    problems.append(f"{where}: evidence {evidence!r} not in the section")
    assert not problems, "\n".join(problems)


def test_version_questions_pick_between_dated_documents(
    questions: list[dict], documents: dict[tuple[str, str], Document]
) -> None:
    versions = Counter(doc_id for doc_id, _ in documents)
    for q in (q for q in questions if q["kind"] == "version"):
        dated = [
            rel for rel in q["relevant"]
            if versions[rel["doc_id"]] > 1
            or documents[(rel["doc_id"], rel["version"])].meta.effective_to is not None
        ]  # fmt: skip
        assert dated, f"{q['id']}: a version question needs a versioned or dated document"


# --------------------------------------------------------------------------- 4. PDFs


def test_pdfs_rebuild_byte_identically(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--out", str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    built = sorted(_rel_to(p, tmp_path) for p in tmp_path.rglob("*.pdf"))
    committed = sorted(_rel(p) for p in COLLECTION.rglob("*.pdf"))
    assert built == committed and len(built) >= 2
    for rel in built:
        fresh = (tmp_path / rel).read_bytes()
        assert fresh == (COLLECTION / rel).read_bytes(), f"{rel} differs from a fresh build"


def _rel_to(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


# --------------------------------------------------------------------------- 5. metadata


def test_document_metadata_is_valid() -> None:
    rows = _inventory_rows()
    assert len(rows) >= 30
    seen = set()
    for row in rows:
        where = row["path"]
        assert row["doc_type"] in DOC_TYPES, where
        assert row["access"] in ACCESS, where
        assert row["language"] in LANGUAGES, where
        assert row["doc_id"] and row["version"] and row["title"] and row["owner"], where
        start = date.fromisoformat(row["effective_from"])
        if row["effective_to"]:
            assert date.fromisoformat(row["effective_to"]) >= start, where
        key = (row["doc_id"], row["version"])
        assert key not in seen, f"{where}: repeats {key}"
        seen.add(key)
    assert sum(row["language"] == "fr" for row in rows) >= 4
    staff_procedures = [r for r in rows if r["doc_type"] == "procedure" and r["access"] == "staff"]
    assert len(staff_procedures) >= 6
    assert {Path(r["path"]).suffix for r in rows} == SUFFIXES


def test_collection_is_large_enough(documents: dict[tuple[str, str], Document]) -> None:
    assert len(documents) >= 30
    words = sum(len(doc.text.split()) for doc in documents.values())
    assert words >= 7000, f"only {words} words"


def test_deliberate_difficulties_are_in_place(
    documents: dict[tuple[str, str], Document],
) -> None:
    meta = {key: doc.meta for key, doc in documents.items()}
    # Two versions of the returns policy that meet without a gap or an overlap.
    v3, v4 = meta[("returns-policy", "3")], meta[("returns-policy", "4")]
    assert v3.effective_to is not None and v4.effective_from is not None
    assert v3.effective_to + timedelta(days=1) == v4.effective_from
    # Two versions of the delivery policy (the fee table changed).
    assert ("delivery-policy", "4") in meta and ("delivery-policy", "5") in meta
    # A notice that has expired by the demo's "today".
    assert any(
        m.doc_type == "notice" and m.effective_to is not None and m.effective_to < TODAY
        for m in meta.values()
    )
    # The supplier sheet tells assistants to promise what the warranty policy does not give.
    sheet = documents[("kestrel-tr2200-sheet", "1")].text
    assert re.search(r"AI assistants.*lifetime warranty", sheet, re.DOTALL)
    assert "lifetime" not in documents[("warranty-policy", "2")].text.lower()
    # The same paragraph in two different documents.
    proof = [
        " ".join(b.text for b in doc.blocks if "Proof of purchase" in b.heading_path[-1:])
        for key, doc in documents.items()
        if key in {("warranty-policy", "2"), ("returns-policy", "4")}
    ]
    assert len(proof) == 2 and proof[0] == proof[1] and proof[0]


def test_difficulties_cite_existing_questions(questions: list[dict]) -> None:
    text = DIFFICULTIES.read_text(encoding="utf-8")
    cited = set(re.findall(r"\bQ\d{3}\b", text))
    ids = {q["id"] for q in questions}
    assert cited, "difficulties.md cites no question"
    assert cited <= ids, f"unknown ids: {sorted(cited - ids)}"
