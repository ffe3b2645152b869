"""One sync: bring an index in line with a collection folder.

`sync(store, folder, ...)` plans the change and has the store write it:
- incremental: a file whose size and modification time are unchanged (and whose inventory row
  hashes the same) is not read again; a file whose bytes (or inventory row) hash the same is
  not parsed again, only its recorded size and mtime are refreshed; vectors are keyed by chunk
  ID and text hash, so only new or changed chunks are embedded, with the embedder given;
- atomic: everything slow (reading, parsing, chunking, embedding) happens here first; the
  result is one `ChangeSet` that `store.apply` writes in one transaction, so a crash or a kill
  mid-sync leaves the index as it was; a sync that changes nothing writes nothing;
- forgiving by default: a file that cannot be read or parsed (for any reason, an unexpected
  exception in a parser included), or that repeats another file's doc_id + version, is
  reported with its reason and left out, while the other files sync; a file that parsed
  before and fails now keeps its previous version in the index, and so do the documents of a
  sub-folder that cannot be listed. `strict=True` writes nothing when any file has a problem;
- first come, first kept: of the files that claim one doc_id + version, the one that held it
  in the index before this sync keeps it (even on a rebuild) and the newcomers are the
  problem files; when none held it, all of them are (nothing tells the original from a copy);
  a second path to one file (a link to it, a hard link) is that file, read once (a warning
  names it); doc_ids that look alike (`tether.ingest.metadata.lookalike_doc_ids`) are named
  in a warning at every sync while they last;
- explicit about emptied files: a file indexed before that is now empty (0 bytes, or only
  whitespace) is a problem that says its previous version is still served; with
  `strict=True` it is removed from the index instead (a problem that says so), unless another
  problem stops the sync, which then writes nothing and says the previous version stays;
- careful with what it reads: only regular files, their size checked before reading; a link
  that leads out of the folder is reported and not followed unless `follow_links=True` (what
  was read through it before is removed; see `tether.ingest.discover`); an `inventory.csv`
  that is such a link stops the sync with an error (skipping it could make files public);
- sized: given the embedder's `TokenWindow`, chunks are cut to fit its window (see
  `tether.ingest.chunking`); a chunk that cannot be is named in the report's warnings;
- recorded: the chunker and the embedder are recorded in the index meta; a different chunker
  or embedder needs `rebuild=True` (which rebuilds the whole index from the folder);
- flagged: text addressed to AI assistants (`tether.instructions`) is found in each written
  chunk and recorded with it (`FileChange.instructions`); the report names those files;
- sentence vectors (for the default reranker): with `sentences=True`, or when the embedder has
  a true `sentence_vectors` attribute, each chunk's sentences (`sentence_spans`) are embedded
  too, in the same change set (chunks that have none yet, including unchanged chunks of an
  older index, are filled in at the next sync);
- accounted for: files of a type tether does not read are counted by suffix
  (`SyncReport.unsupported`), so a summary can say what was left out.

- spread: parsing, chunking and embedding run through an `executor`
  (`tether.ingest.executor`: this process, a pool of processes, or Ray); files are read here
  and handed over in windows of `PARSE_WINDOW_BYTES`; the results are the same whichever runs
  them (vectors within float rounding), and a failed worker writes nothing.

What it cannot do: it reads the store through the `Store` protocol only and knows no backend;
two syncs of one index at the same time are serialised by the store (the second may fail
with the store's "locked" error); without an executor it embeds in this process, with the
embedder it is given.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import stat as stat_module
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from tether.errors import ConflictError, TetherError
from tether.ingest.discover import INVENTORY_FILE, leads_inside, read_regular, scan
from tether.ingest.executor import Executor, SerialExecutor
from tether.ingest.metadata import (
    META_FIELDS,
    inventory_warnings,
    load_inventory,
    lookalike_doc_ids,
)
from tether.ingest.parse.dispatch import format_of
from tether.ingest.tasks import ParseTask, problem_of
from tether.ingest.vector_cache import EmbedProgress, VectorCache, embed_cached
from tether.protocols import Embedder, Store, StoreReader, SyncTarget
from tether.text import embed_text, sentence_spans, sentence_text
from tether.types import (
    ChangeSet,
    Chunk,
    ChunkerConfig,
    FileChange,
    FileProblem,
    FileState,
    Progress,
    SentenceVectorChange,
    SyncReport,
    TokenWindow,
    VectorChange,
)

PARSE_WINDOW_BYTES = 32_000_000  # file bytes held in memory at once, waiting to be parsed


@dataclass
class _Plan:
    """What reading the folder found, before embedding."""

    known: dict[str, FileState]
    # the index as it stood before this sync, even for a rebuild: who holds a doc_id first
    indexed: dict[str, FileState] = field(default_factory=dict)
    files: list[FileChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    touched: list[FileState] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unsupported: tuple[tuple[str, int], ...] = ()  # (suffix, files), most frequent first
    inventory_rows: int | None = None  # rows of inventory.csv (None: the folder has none)
    inventory_matched: int = 0  # of them, rows naming a file found
    # files indexed before and empty now: source -> "0 bytes" or "only whitespace"
    emptied: dict[str, str] = field(default_factory=dict)


def sync(
    store: Store,
    folder: Path | str,
    *,
    chunker: ChunkerConfig | None = None,
    embedder: Embedder | None = None,
    rebuild: bool = False,
    strict: bool = False,
    default_access: str | None = None,
    progress: Progress | None = None,
    sentences: bool | None = None,
    follow_links: bool = False,
    executor: Executor | None = None,
    window: TokenWindow | None = None,
    vector_cache: Path | str | None = None,
) -> SyncReport:
    """Bring the index of `store` in line with `folder` (see the module docstring);
    `follow_links` follows links that lead out of the folder; `default_access` is what a file
    without an access label is indexed as (None: the one stored with the index, else staff);
    `executor` runs the parsing and embedding (None: this process); `window` (the embedder's
    token counter and window) sizes the structure chunker's chunks, and a chunk that must
    exceed it is reported as a warning; `vector_cache` (a folder) keeps every vector as it is
    computed, so a run that is killed or fails loses no embedding work
    (`tether.ingest.vector_cache`)."""
    began = time.perf_counter()
    folder = Path(folder)
    if not folder.is_dir():
        raise TetherError(f"no such folder: {folder}")
    chunker = chunker or ChunkerConfig()
    default_access = access_default(store, default_access)
    check_build(store, chunker, embedder, rebuild)
    step = progress or _quiet
    run = executor or SerialExecutor()
    plan = read_folder(
        store, folder, chunker, rebuild, default_access, step, follow_links, run, window=window,
        strict=strict,
    )  # fmt: skip
    if strict and any(p.source not in plan.emptied for p in plan.problems):
        kept = [  # nothing is written: an emptied file is not removed after all
            replace(p, reason=emptied_reason(plan.emptied[p.source], "blocked"))
            if p.source in plan.emptied else p
            for p in plan.problems
        ]  # fmt: skip
        return SyncReport(
            problems=tuple(kept),
            unchanged=tuple(sorted(plan.known)),
            seconds=time.perf_counter() - began,
            committed=False,
            warnings=tuple(plan.warnings),
            default_access=default_access,
            unsupported=plan.unsupported,
            inventory_rows=plan.inventory_rows,
            inventory_matched=plan.inventory_matched,
        )
    if sentences is None:
        sentences = bool(getattr(embedder, "sentence_vectors", False))
    cache = (
        VectorCache(vector_cache, f"{embedder_label(embedder)} {embedder.dim}", embedder.dim)
        if vector_cache is not None and embedder is not None
        else None
    )
    try:
        changes = plan_changes(store, plan, chunker, embedder, rebuild, sentences, step, run, cache)
    finally:
        if cache is not None:
            cache.close()
    if rebuild or store.meta_value(DEFAULT_ACCESS_META) != default_access:
        changes = replace(changes, meta=(*changes.meta, (DEFAULT_ACCESS_META, default_access)))
    state = ingest_state(store, folder, plan, changes, rebuild)
    if store.meta_value(INGEST_STATE_META) != state:
        changes = replace(changes, meta=(*changes.meta, (INGEST_STATE_META, state)))
    if not changes.empty:
        store.apply(changes, progress=step)
    return SyncReport(
        added=changes.added,
        updated=changes.updated,
        removed=changes.removed,
        unchanged=tuple(sorted(s for s in plan.unchanged if not is_remote(s))),
        problems=tuple(plan.problems),
        chunks_written=sum(len(f.chunks) for f in changes.files),
        seconds=time.perf_counter() - began,
        instructions=tuple(f.file.source for f in changes.files if f.instructions),
        warnings=tuple(plan.warnings),
        unlabelled=tuple(f.file.source for f in changes.files if not f.document.access_labelled),
        default_access=default_access,
        unsupported=plan.unsupported,
        inventory_rows=plan.inventory_rows,
        inventory_matched=plan.inventory_matched,
    )


DEFAULT_ACCESS_META = "default_access"  # the index meta key of `--default-access`
INGEST_STATE_META = "ingest:state"  # what the health report reads of the last syncs


def ingest_state(
    store: StoreReader, folder: Path, plan: _Plan, changes: ChangeSet, rebuild: bool
) -> str:
    """The index meta value (JSON) that the health report (`tether health`) reads: the
    collection folder, the sources that carry no access label, and the files that could not
    be read at the last sync with their reasons. Unlabelled sources carry over from earlier
    syncs (a sync reads only what changed): a source read again, or gone, is replaced."""
    try:
        before = {} if rebuild else json.loads(store.meta_value(INGEST_STATE_META) or "{}")
    except ValueError:  # a damaged record reads as none
        before = {}
    read_now = {f.file.source for f in changes.files} | set(plan.removed)
    unlabelled = {s for s in before.get("unlabelled", []) if isinstance(s, str)} - read_now
    unlabelled |= {f.file.source for f in changes.files if not f.document.access_labelled}
    record = {
        "folder": str(folder.resolve()),
        "unlabelled": sorted(unlabelled),
        "problems": {p.source: p.reason for p in plan.problems},
    }
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


def access_default(store: StoreReader, given: str | None) -> str:
    """What a file without an access label is indexed as: `given`, else the value stored with
    the index by an earlier sync, else staff (fail-closed)."""
    value = given if given is not None else store.meta_value(DEFAULT_ACCESS_META) or "staff"
    if value not in ("public", "staff"):
        raise TetherError(f"default access {value!r} is not public or staff")
    return value


def check_build(
    store: StoreReader, chunker: ChunkerConfig, embedder: Embedder | None, rebuild: bool
) -> None:
    """Refuse to mix chunkers or embedders in one index (unless rebuilding)."""
    if rebuild:
        return
    built = store.meta_value("chunker")
    if built is not None and built != chunker.describe():
        raise ConflictError(
            f"this index was built with the {built} chunker; ingesting with"
            f" {chunker.describe()} needs --rebuild"
        )
    if embedder is not None:
        had = store.meta_value("embedder")
        want = embedder_label(embedder)
        if had is not None and had != want:
            raise ConflictError(
                f"this index was embedded with {had}; embedding with {want} needs --rebuild"
            )


def embedder_label(embedder: Embedder) -> str:
    """How an embedder is recorded in the index meta: "name (version)"."""
    return f"{embedder.name} ({embedder.version})"


def read_folder(
    store: SyncTarget,
    folder: Path,
    chunker: ChunkerConfig,
    rebuild: bool,
    default_access: str,
    step: Progress,
    follow_links: bool = False,
    executor: Executor | None = None,
    *,
    window: TokenWindow | None = None,
    strict: bool = False,
) -> _Plan:
    """Read the files that changed since the store last saw them; have `executor` parse and
    chunk them (in windows of `PARSE_WINDOW_BYTES`). A file indexed before and empty now
    keeps its previous version, or with `strict` is removed (`_settle_emptied`)."""
    inventory_path = folder / INVENTORY_FILE
    if (
        inventory_path.is_symlink()
        and not follow_links
        and not leads_inside(inventory_path, folder)
    ):
        raise TetherError(
            f"{INVENTORY_FILE} is a link that leads out of the collection folder; it is not"
            " read (--follow-links follows it)"
        )
    inventory = load_inventory(folder)
    found = scan(folder, follow_links=follow_links)
    paths = found.files
    indexed = store.file_states()
    plan = _Plan(known={} if rebuild else indexed, indexed=indexed)
    plan.unsupported = tuple(sorted(found.unsupported.items(), key=lambda kv: (-kv[1], kv[0])))
    seen: set[str] = set()
    batch: list[ParseTask] = []
    # the token window counts with the embedder's own tokenizer, a bound method of a loaded
    # model that does not travel to workers: sized chunking parses here (the cheap part of an
    # ingest); embedding still goes through `executor`
    run = SerialExecutor() if window is not None else executor or SerialExecutor()
    for source, reason in found.skipped:  # what was read through such a link is removed
        plan.problems.append(FileProblem(source, reason))
    for alias, read in found.aliases:  # one file, one document: read once, at `read`
        row = f"; its {INVENTORY_FILE} row is not applied" if alias in inventory else ""
        plan.warnings.append(
            f"{alias} is the same file as {read} (a link to it, or a second name): read once,"
            f" as {read}{row}"
        )
    for rel, reason in found.unreadable:  # its documents keep their previous version
        plan.problems.append(FileProblem(rel + "/", reason))
        kept = sorted(s for s in plan.known if s.startswith(rel + "/"))
        seen.update(kept)
        plan.unchanged.extend(kept)
    for i, path in enumerate(paths):
        source = path.relative_to(folder).as_posix()
        seen.add(source)
        step("read", i, len(paths))
        try:
            task = _read_one(plan, path, source, inventory, (chunker, window), default_access)
        except Exception as exc:  # unreadable, not a regular file, too large...: this file only
            _keep_previous(plan, source, problem_of(exc))
            continue
        if task is not None:
            batch.append(task)
        if sum(len(t.data) for t in batch) >= PARSE_WINDOW_BYTES:
            _parse_window(plan, batch, run)
    _parse_window(plan, batch, run)
    step("read", len(paths), len(paths))
    named = seen | {alias for alias, _ in found.aliases}
    plan.warnings += inventory_warnings(inventory, named)
    if os.path.lexists(inventory_path):
        plan.inventory_rows = len(inventory)
        plan.inventory_matched = sum(rel in named for rel in inventory)
    # another source's documents (a website's pages, `tether.ingest.sources`: "://" in their
    # source, which no path in a folder holds) are not this folder's: they stay, doc_ids kept
    plan.unchanged += [s for s in plan.known if s not in seen and is_remote(s)]
    plan.removed = sorted(s for s in plan.known if s not in seen and not is_remote(s))
    _settle_emptied(plan, remove=strict)
    plan.files = _refuse_duplicates(plan)
    plan.warnings += _lookalikes(plan)
    return plan


def is_remote(source: str) -> bool:
    """Whether an indexed source is another source's document (a page's URL), not a file."""
    return "://" in source


Fate = Literal["kept", "removed", "blocked"]


def emptied_reason(what: str, fate: Fate) -> str:
    """The problem of a file indexed before and empty now (`what`: "0 bytes" or "only
    whitespace"), by what became of its previous version."""
    if fate == "removed":
        return f"empty file ({what}); removed from the index (--strict)"
    if fate == "blocked":
        return (
            f"empty file ({what}); nothing was written (--strict), so its previous version is"
            " still served"
        )
    return f"empty file ({what}); its previous version is still served (--strict removes it)"


def _settle_emptied(plan: _Plan, *, remove: bool) -> None:
    """Each emptied file is a problem; its previous version stays (unchanged) or, with
    `remove`, goes (removed)."""
    for source, what in sorted(plan.emptied.items()):
        if remove:
            plan.problems.append(FileProblem(source, emptied_reason(what, "removed")))
            plan.removed.append(source)
        else:
            _keep_previous(plan, source, emptied_reason(what, "kept"))
    plan.removed.sort()


def _blank(data: bytes) -> str:
    """How a file holds no text at all: "0 bytes" or "only whitespace" (ASCII, or UTF-8 or
    UTF-16 after a byte order mark); "" when it holds some."""
    if not data:
        return "0 bytes"
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):  # fmt: skip
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(codec)
            except UnicodeDecodeError:
                return ""
            return "only whitespace" if not text or text.isspace() else ""
    return "only whitespace" if data.isspace() else ""


def _read_one(
    plan: _Plan,
    path: Path,
    source: str,
    inventory: dict[str, dict[str, str]],
    cutting: tuple[ChunkerConfig, TokenWindow | None],
    default_access: str,
) -> ParseTask | None:
    """The parse task of a changed file; None when it is unchanged (recorded in `plan`)."""
    stat = os.stat(path)
    row = inventory.get(source)
    row_hash = _row_hash(row, default_access)
    old = plan.known.get(source)
    if (
        old
        and stat_module.S_ISREG(stat.st_mode)
        and old.size == stat.st_size
        and old.mtime_ns == stat.st_mtime_ns
        and old.fingerprint.endswith(row_hash)
    ):
        plan.unchanged.append(source)
        return None
    data, stat = read_regular(path)  # only a regular file, its size checked before reading
    if old is not None and (blank := _blank(data)):
        plan.emptied[source] = blank  # a problem: `_settle_emptied`
        return None
    fingerprint = hashlib.sha256(data).hexdigest() + ":" + row_hash
    if old and old.fingerprint == fingerprint:
        plan.unchanged.append(source)
        plan.touched.append(
            FileState(source, fingerprint, stat.st_size, stat.st_mtime_ns, old.doc_id, old.version)
        )
        return None
    state = FileState(source, fingerprint, stat.st_size, stat.st_mtime_ns, "", "")
    fmt = format_of(path)
    return ParseTask(
        state, data, fmt, row, default_access, cutting[0], source not in plan.known, cutting[1]
    )


def _parse_window(plan: _Plan, window: list[ParseTask], executor: Executor) -> None:
    """Parse the files of `window` (emptied) through `executor`, in order, into `plan`."""
    for outcome in executor.parse(window):
        if outcome.change is None:
            _keep_previous(plan, outcome.source, outcome.problem or "cannot be read")
            continue
        plan.warnings += outcome.warnings
        plan.files.append(outcome.change)
    window.clear()


def _keep_previous(plan: _Plan, source: str, reason: str) -> None:
    """A file with a problem is reported (on one line); its previous version (if any) stays."""
    plan.problems.append(FileProblem(source, " ".join(reason.split())))
    if source in plan.known:
        plan.unchanged.append(source)


def _refuse_duplicates(plan: _Plan) -> list[FileChange]:
    """Two files with one doc_id + version: the one that held it in the index before this
    sync keeps it (unchanged, or read again and still claiming it; on a rebuild too) and the
    others are refused; when none held it, all are refused."""
    holders: dict[tuple[str, str], str] = {}
    for source in plan.unchanged:
        if source in plan.known:
            state = plan.known[source]
            holders[(state.doc_id, state.version)] = source
    first = {(state.doc_id, state.version): source for source, state in plan.indexed.items()}
    claims: dict[tuple[str, str], list[FileChange]] = {}
    for change in plan.files:
        key = (change.file.doc_id, change.file.version)
        claims.setdefault(key, []).append(change)
    kept: list[FileChange] = []
    for key, group in claims.items():
        holder = holders.get(key)
        if holder is None:
            incumbent = next((c for c in group if c.file.source == first.get(key)), None)
            if incumbent is not None:  # it held the doc_id before: it keeps it
                kept.append(incumbent)
                holder = incumbent.file.source
                group = [c for c in group if c is not incumbent]
            elif len(group) == 1:
                kept.extend(group)
                continue
        others = [holder] if holder else []
        for change in group:
            rivals = [*others, *(c.file.source for c in group if c is not change)]
            plan.problems.append(
                FileProblem(change.file.source, _duplicate(key, change, rivals, holder))
            )
            if change.file.source in plan.known:
                plan.unchanged.append(change.file.source)
    return kept


def _duplicate(
    key: tuple[str, str], change: FileChange, rivals: list[str], holder: str | None = None
) -> str:
    """Why a file that claims another file's doc_id + version is left out, naming every file
    that claims it (and the one that keeps it), with the fix."""
    keeps = f"; {holder} held it first and keeps it" if holder else ""
    return (
        f"doc_id {key[0]!r} version {key[1]!r} is also in {', '.join(rivals)}"
        f" ({' and '.join([change.file.source, *rivals])} claim the same document{keeps});"
        f" give one its own doc_id (front matter `doc_id:` or a row in {INVENTORY_FILE}), or,"
        " if they are two versions of one document, its own version"
    )


def _lookalikes(plan: _Plan) -> list[str]:
    """Warnings for doc_ids that look alike (`tether.ingest.metadata.lookalike_doc_ids`)
    among the documents the index holds after this sync."""
    doc_ids = {s: plan.known[s].doc_id for s in plan.unchanged if s in plan.known}
    doc_ids.update({c.file.source: c.file.doc_id for c in plan.files})
    return lookalike_doc_ids(doc_ids)


def plan_changes(
    store: Store,
    plan: _Plan,
    chunker: ChunkerConfig,
    embedder: Embedder | None,
    rebuild: bool,
    sentences: bool,
    step: Progress,
    executor: Executor | None = None,
    cache: VectorCache | None = None,
) -> ChangeSet:
    """The change set of a read folder: its files, with the vectors they need embedded (by
    `executor`, None: this process; looked up first in `cache`, and kept there as they are
    computed)."""
    run = executor or SerialExecutor()
    chunks = [c for f in plan.files for c in f.chunks]
    vectors: tuple[VectorChange, ...] = ()
    sentence_vectors: tuple[SentenceVectorChange, ...] = ()
    meta = {"chunker": chunker.describe()}
    if embedder is not None:
        vectors = embed_chunks(chunks, store, embedder, rebuild, step, run, cache)
        if sentences:
            leaving = {f.file.source for f in plan.files} | set(plan.removed)
            sentence_vectors = embed_sentences(
                chunks, leaving, store, embedder, rebuild, step, run, cache
            )
        meta |= {"embedder": embedder_label(embedder), "embedder_dim": str(embedder.dim)}
    new_meta = tuple((k, v) for k, v in meta.items() if rebuild or store.meta_value(k) != v)
    return ChangeSet(
        files=tuple(plan.files),
        removed=tuple(plan.removed),
        touched=tuple(plan.touched),
        vectors=vectors,
        sentence_vectors=sentence_vectors,
        meta=new_meta,
        rebuild=rebuild,
        chunker=chunker.describe(),
    )


def embed_chunks(
    chunks: list[Chunk],
    store: SyncTarget,
    embedder: Embedder,
    rebuild: bool,
    step: Progress,
    executor: Executor | None = None,
    cache: VectorCache | None = None,
) -> tuple[VectorChange, ...]:
    """Vectors for the chunks that have none under the same text hash."""
    have = {} if rebuild else store.vector_hashes()
    todo: list[tuple[str, str, str]] = []
    for chunk in chunks:
        text = embed_text(chunk)
        th = text_hash(text)
        if have.get(chunk.chunk_id) != th:
            todo.append((chunk.chunk_id, th, text))
    if not todo:
        return ()
    texts = [t for _, _, t in todo]

    def report(done_texts: int, done_tokens: int) -> None:
        step("embed", done_texts, len(todo))
        step("embed:tokens", done_tokens, 0)  # the CLI shows tokens/s

    step("embed", 0, len(todo))
    matrix = _embedded(executor, embedder, texts, [th for _, th, _ in todo], report, cache)
    step("embed", len(todo), len(todo))
    return tuple(VectorChange(cid, th, vec) for (cid, th, _), vec in zip(todo, matrix, strict=True))


def embed_sentences(
    chunks: list[Chunk],
    leaving: set[str],
    store: Store,
    embedder: Embedder,
    rebuild: bool,
    step: Progress,
    executor: Executor | None = None,
    cache: VectorCache | None = None,
) -> tuple[SentenceVectorChange, ...]:
    """Sentence vectors for the chunks being written and for the chunks already in the index
    that have none under the same text hash (an index built before they existed); chunks of
    the sources in `leaving` (replaced or removed) are not filled in."""
    held = {} if rebuild else store.sentence_vector_hashes()
    have = {cid: th for cid, th in held.items() if th is not None}
    candidates: dict[str, Chunk] = {c.chunk_id: c for c in chunks}
    missing = [cid for cid, th in held.items() if th is None]
    for cid, chunk in store.get_many(missing).items():
        if chunk.meta.source not in leaving:
            candidates.setdefault(cid, chunk)
    todo: list[tuple[str, str, int, int, str]] = []
    for cid, chunk in candidates.items():
        th = text_hash(embed_text(chunk))
        if have.get(cid) == th:
            continue
        for start, end in sentence_spans(chunk.text):
            todo.append((cid, th, start, end, sentence_text(chunk, start, end)))
    found: dict[str, tuple[str, list[tuple[int, int, np.ndarray]]]] = {}
    step("embed sentences", 0, len(todo))
    texts = [t[4] for t in todo]
    matrix = _embedded(
        executor, embedder, texts, [text_hash(t) for t in texts],
        lambda done, _: step("embed sentences", done, len(todo)), cache,
    )  # fmt: skip
    for (cid, th, start, end, _), vec in zip(todo, matrix, strict=True):
        found.setdefault(cid, (th, []))[1].append((start, end, vec))
    step("embed sentences", len(todo), len(todo))
    out: list[SentenceVectorChange] = []
    for cid, (th, rows) in found.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        spans = tuple((a, b) for a, b, _ in rows)
        out.append(SentenceVectorChange(cid, th, spans, np.stack([v for _, _, v in rows])))
    return tuple(out)


def _embedded(
    executor: Executor | None,
    embedder: Embedder,
    texts: list[str],
    keys: list[str],
    progress: EmbedProgress,
    cache: VectorCache | None,
) -> np.ndarray:
    """Vectors of `texts` (float32 rows) by `executor`, those `cache` holds under their `keys`
    (text hashes) read from it, the rest kept there as they are computed. A text that stands
    more than once (a repeated line under one heading, a notice pasted in two files) is
    embedded once: a text's vector depends on the text alone (`tether.embeddings.fast_e5`),
    so its copies get the same row; `progress` then counts the distinct texts."""
    run = executor or SerialExecutor()
    first: dict[str, int] = {}  # key: its row among the distinct texts
    distinct: list[str] = []
    rows: list[int] = []
    for text, key in zip(texts, keys, strict=True):
        if key not in first:
            first[key] = len(distinct)
            distinct.append(text)
        rows.append(first[key])
    matrix, _ = embed_cached(
        lambda part, report: run.embed(embedder, part, report), distinct, list(first),
        embedder.dim, progress, cache, getattr(run, "expect", None),
    )  # fmt: skip
    return matrix if len(distinct) == len(texts) else matrix[rows]


def text_hash(text: str) -> str:
    """The hash a vector is keyed by: what was embedded, so an unchanged chunk is not
    embedded again."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# How a doc_id is made (`tether.ingest.metadata.path_doc_id` for a file without one, and
# `clean_doc_id`: NFKC, stripped); part of every file's fingerprint, so an index built when it
# was the file stem, or before doc_ids were NFKC, is read again once.
DOC_ID_SCHEME = "path nfkc"


def _row_hash(row: dict[str, str] | None, default_access: str) -> str:
    """What besides a file's bytes decides its document: its inventory row, the default
    access, the doc_id scheme and the metadata fields read (`META_FIELDS`: a field added, as
    review_by was, makes the next ingest parse every file again once, so an index built
    before it gets the field from files that already carried it; vectors are kept)."""
    payload = json.dumps(
        [sorted((row or {}).items()), default_access, DOC_ID_SCHEME, list(META_FIELDS)],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _quiet(phase: str, done: int, total: int) -> None:
    """The progress callback when none is given."""
