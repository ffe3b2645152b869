"""Staleness and hygiene: what the owners of a collection should tidy.

Staleness:
- `ended` (kind `stale`): a document none of whose versions is in force on the report's date
  and whose latest version ended before it (`effective_to` passed, no successor);
- `review_overdue` (kind `stale`): a document whose current version (in force on the report's
  date; of several, the latest to take effect) was to be reviewed before that date
  (`review_by`), with its owner; a superseded version's review date is not looked at;
- `superseded_cited`: recorded answers (the audit, over the report's period) that cited a
  version no longer in force on the report's date while a later version of that document
  is, counted per version;
- `missing_link`: a relative link in a Markdown or HTML file of the collection folder (as the
  last ingest recorded it) to a file that is not there.

Hygiene:
- `unlabelled`: documents whose file gives no access label (indexed as the index's default
  access, staff unless told otherwise), as the ingests recorded them;
- `instructions`: text addressed to AI assistants found at ingest (never obeyed);
- `near_duplicate`: passages of different documents that repeat one another: close vectors
  (cosine >= `NEAR_COSINE`) and at least `NEAR_SHARED` word trigrams in common, which make up
  `NEAR_CONTAINED` of the shorter passage's (a paragraph copied with a few words changed);
  versions of one document aside;
- `over_window`: chunks longer than the embedder's window, as ingest counted them;
- `unreadable`: files the last ingest could not read, with its reason.

What it cannot do: a review date is read from the document's metadata only (`review_by` or
an alias, in the file or inventory.csv; see `tether.ingest.metadata`), so a document without
one is never overdue; links are read from the source files as they are now (a folder moved
since the ingest is reported as such, its links unread), only relative `[text](target)` and
`href="target"` links, not links inside PDFs or DOCX files; near-duplicates need vectors (an
index built without them is noted).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import numpy as np

from tether.ingest.sync import INGEST_STATE_META
from tether.protocols import SearchableStore, StoreReader
from tether.stores.rows import version_key
from tether.types import AuditEntry, Chunk, DocMeta, DocumentInfo, Finding, Quote

NEAR_COSINE = 0.85  # candidates: passages of different documents at least this close...
NEAR_SHARED = 20  # ...that share at least this many word trigrams...
NEAR_CONTAINED = 0.6  # ...making up at least this share of the shorter passage's trigrams
_MD_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HREF = re.compile(r"""\bhref\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def quote_of(chunk: Chunk, text: str | None = None) -> Quote:
    """A chunk (or `text` from it) as a finding quotes it."""
    m = chunk.meta
    return Quote(
        m.doc_id,
        m.version,
        m.title,
        chunk.chunk_id,
        text if text is not None else chunk.text,
        m.owner,
        m.access,
        " › ".join(chunk.heading_path),
    )


def recorded_state(store: StoreReader) -> dict:
    """What the last ingests recorded for the report (folder, unlabelled, problems), or {}."""
    try:
        value = json.loads(store.meta_value(INGEST_STATE_META) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def ended(docs: Sequence[DocumentInfo], as_of: date) -> list[Finding]:
    """Documents with no version in force on `as_of` whose latest version has ended."""
    by_doc: dict[str, list[DocMeta]] = {}
    for d in docs:
        by_doc.setdefault(d.meta.doc_id, []).append(d.meta)
    found = []
    for doc_id, metas in sorted(by_doc.items()):
        if any(m.in_force(as_of) for m in metas):
            continue
        last = max(metas, key=lambda m: (m.effective_to or date.max, m.effective_from or date.min))
        if last.effective_to is None or last.effective_to >= as_of:
            continue  # not in force yet: it starts later
        notice = last.doc_type == "notice"
        found.append(
            Finding(
                "stale",
                f"{last.title} ended on {last.effective_to.isoformat()} with no successor",
                f"{doc_id} version {last.version} was in force until"
                f" {last.effective_to.isoformat()}; no version is in force on {as_of.isoformat()},"
                " so it answers no question dated after that: "
                + (
                    "a notice past its dates, to archive or remove"
                    if notice
                    else "renew it, give it a successor, or remove it"
                ),
                doc_ids=(doc_id,),
                owners=(last.owner,) if last.owner else (),
            )
        )
    return found


def review_overdue(docs: Sequence[DocumentInfo], as_of: date) -> list[Finding]:
    """Documents whose current version on `as_of` (in force then; of several, the latest to
    take effect) was to be reviewed before `as_of` (`review_by`)."""
    by_doc: dict[str, list[DocMeta]] = {}
    for d in docs:
        if d.meta.in_force(as_of):
            by_doc.setdefault(d.meta.doc_id, []).append(d.meta)
    found = []
    for doc_id, metas in sorted(by_doc.items()):
        current = max(metas, key=lambda m: (m.effective_from or date.min, version_key(m.version)))
        due = current.review_by
        if due is None or due >= as_of:
            continue
        found.append(
            Finding(
                "stale",
                f"{current.title}: review overdue since {due.isoformat()}",
                f"{doc_id} version {current.version} was to be reviewed by {due.isoformat()} and"
                f" is still in force on {as_of.isoformat()}, so it still answers questions: review"
                " it and set its next review date, or give it an end date",
                doc_ids=(doc_id,),
                owners=(current.owner,) if current.owner else (),
            )
        )
    return found


def superseded_cited(
    entries: Iterable[AuditEntry], store: StoreReader, as_of: date
) -> list[Finding]:
    """Versions cited in recorded answers that are no longer in force on `as_of` while a
    later version of the document is."""
    cited: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for e in entries:
        for cid in dict.fromkeys(cid for c in e.claims for cid in c.get("chunk_ids", ())):
            cited[cid] += 1
            examples.setdefault(cid, e.question)
    chunks = store.get_many(cited)
    per_version: dict[tuple[str, str], list[str]] = {}
    metas: dict[tuple[str, str], DocMeta] = {}
    for cid, chunk in chunks.items():
        m = chunk.meta
        if m.in_force(as_of):
            continue
        newer = [
            v for v in store.versions(m.doc_id) if v.version != m.version and v.in_force(as_of)
        ]
        if not newer:
            continue
        per_version.setdefault((m.doc_id, m.version), []).append(cid)
        metas[(m.doc_id, m.version)] = m
    found = []
    for (doc_id, version), cids in sorted(per_version.items()):
        cids.sort(key=lambda c: (-cited[c], c))  # the most cited first; ties by ID, every run
        m = metas[(doc_id, version)]
        times = sum(cited[c] for c in cids)
        found.append(
            Finding(
                "superseded_cited",
                f"{m.title} version {version} is still cited after it was replaced",
                f"{times} citation{'s' if times != 1 else ''} in recorded answers of version"
                f" {version}, not in force on {as_of.isoformat()} (a later version is)",
                doc_ids=(doc_id,),
                owners=(m.owner,) if m.owner else (),
                evidence=tuple(quote_of(chunks[c]) for c in cids[:2]),
                examples=tuple(dict.fromkeys(examples[c] for c in cids))[:3],
                count=times,
            )
        )
    return found


def missing_links(
    state: dict, owner_of: Callable[[str], tuple[str, str | None]]
) -> tuple[list[Finding], list[str]]:
    """Relative links in the collection's Markdown and HTML files to files that are not there;
    and notes (no folder recorded, or the folder is gone). `owner_of(source)` gives the
    (doc_id, owner) of a source file."""
    folder = state.get("folder")
    if not folder:
        return [], ["links not checked: no ingest recorded the collection folder (re-ingest)"]
    root = Path(folder)
    if not root.is_dir():
        return [], [f"links not checked: the collection folder {folder} is gone"]
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in (".md", ".markdown", ".html", ".htm") or not path.is_file():
            continue
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        targets = _MD_LINK.findall(text) + _HREF.findall(text)
        source = path.relative_to(root).as_posix()
        missing = [t for t in dict.fromkeys(targets) if _missing(root, path, t)]
        if not missing:
            continue
        doc_id, owner = owner_of(source)
        found.append(
            Finding(
                "missing_link",
                f"{source} links to {len(missing)} missing file{'s' if len(missing) != 1 else ''}",
                "; ".join(missing),
                doc_ids=(doc_id,) if doc_id else (),
                owners=(owner,) if owner else (),
                count=len(missing),
            )
        )
    return found, []


def _missing(root: Path, page: Path, target: str) -> bool:
    """True when `target` is a relative link to a file (within the folder) that is absent."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path or target.startswith(("#", "/", "mailto:")):
        return False
    relative = PurePosixPath(unquote(parts.path))
    resolved = (page.parent / relative).resolve()
    try:
        resolved.relative_to(root.resolve())
    except ValueError:  # leads out of the folder: not the collection's to answer for
        return False
    return not resolved.exists()


def hygiene(
    docs: Sequence[DocumentInfo], state: dict, store: StoreReader, info: dict[str, object]
) -> tuple[list[Finding], list[str]]:
    """Unlabelled documents, instruction spans, chunks over the window, unreadable files; and
    notes on what was not recorded."""
    found: list[Finding] = []
    notes: list[str] = []
    by_source = {d.meta.source: d.meta for d in docs}
    unlabelled = state.get("unlabelled")
    if unlabelled is None:
        notes.append("unlabelled documents not known: no ingest recorded them (re-ingest)")
    for source in unlabelled or ():
        m = by_source.get(source)
        found.append(
            Finding(
                "unlabelled",
                f"{m.title if m else source} has no access label",
                f"{source} is indexed as {m.access if m else 'the default access'} because its"
                " file gives no access label: say public or staff in its metadata",
                doc_ids=(m.doc_id,) if m else (),
                owners=(m.owner,) if m and m.owner else (),
            )
        )
    for d in docs:
        if not d.instructions:
            continue
        spans = d.instructions
        chunk = store.get(spans[0].chunk_id)
        evidence = (quote_of(chunk, spans[0].text),) if chunk else ()
        found.append(
            Finding(
                "instructions",
                f"{d.meta.title} holds text addressed to AI assistants",
                f"{len(spans)} span{'s' if len(spans) != 1 else ''} (never obeyed by tether; another"
                " assistant reading the document might)",
                doc_ids=(d.meta.doc_id,),
                owners=(d.meta.owner,) if d.meta.owner else (),
                evidence=evidence,
                count=len(spans),
            )
        )
    try:
        over = int(str(info.get("chunks_over_window") or 0))
    except ValueError:
        over = 0
    if over:
        found.append(
            Finding(
                "over_window",
                f"{over} chunk{'s' if over != 1 else ''} longer than the embedder's window",
                "their end is not in their vector: split the sections they come from",
                count=over,
            )
        )
    for source, reason in sorted((state.get("problems") or {}).items()):
        found.append(Finding("unreadable", f"{source} could not be read", str(reason)))
    return found, notes


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.casefold())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _repeats(a: str, b: str) -> bool:
    """True when one passage repeats the other (`NEAR_SHARED`, `NEAR_CONTAINED`)."""
    ta, tb = _trigrams(a), _trigrams(b)
    shared = len(ta & tb)
    return shared >= NEAR_SHARED and shared >= NEAR_CONTAINED * min(len(ta), len(tb))


def near_duplicates(
    store: SearchableStore, in_force: Callable[[DocMeta], bool], limit: int = 50
) -> tuple[list[Finding], list[str]]:
    """Passages of different documents in force that repeat one another (see the module
    docstring: a vector prefilter, then word trigrams; a cosine of 0.97 alone missed a
    65-word paragraph with five words changed and took two passages of one subject for a
    copy)."""
    if not store.has_vectors():
        return [], ["near-duplicate passages not checked: the index has no vectors"]
    ids, vectors = store.vectors()
    chunks = store.get_many(ids)
    keep = [i for i, cid in enumerate(ids) if cid in chunks and in_force(chunks[cid].meta)]
    if len(keep) < 2:
        return [], []
    unit = np.asarray(vectors[keep], dtype=np.float32)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-9)
    kept_ids = [ids[i] for i in keep]
    pairs: list[tuple[float, str, str]] = []
    step = 512
    for start in range(0, len(kept_ids), step):
        block = unit[start : start + step] @ unit.T
        for r, c in zip(*np.nonzero(block >= NEAR_COSINE), strict=True):
            a, b = start + int(r), int(c)
            if b <= a:
                continue
            ca, cb = chunks[kept_ids[a]], chunks[kept_ids[b]]
            if ca.meta.doc_id == cb.meta.doc_id or not _repeats(ca.text, cb.text):
                continue
            pairs.append((float(block[r, c]), kept_ids[a], kept_ids[b]))
    pairs.sort(reverse=True)
    by_docs: dict[tuple[str, str], list[tuple[float, str, str]]] = {}
    for cosine, first, second in pairs:
        key = tuple(sorted((chunks[first].meta.doc_id, chunks[second].meta.doc_id)))
        by_docs.setdefault((key[0], key[1]), []).append((cosine, first, second))
    found = []
    for same in list(by_docs.values())[:limit]:
        _cosine, first, second = same[0]
        ca, cb = chunks[first], chunks[second]
        owners = tuple(dict.fromkeys(o for o in (ca.meta.owner, cb.meta.owner) if o))
        n = len(same)
        found.append(
            Finding(
                "near_duplicate",
                f"{ca.meta.title} and {cb.meta.title} repeat "
                + ("a passage" if n == 1 else f"{n} passages"),
                "passages of two different documents repeat one another: when one changes, the"
                " other may be left behind",
                doc_ids=(ca.meta.doc_id, cb.meta.doc_id),
                owners=owners,
                evidence=(quote_of(ca), quote_of(cb)),
                count=n,
            )
        )
    return found, []
