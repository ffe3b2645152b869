"""The units of ingest work an executor runs: parse one file, embed one shard of texts.

- `ParseTask` → `parse_task` → `ParseOutcome`: a file's bytes (read, size-checked and
  fingerprinted by the caller) parsed, chunked and searched for text addressed to AI
  assistants; a task's `trail` (an export's page tree) goes above every block's headings. A
  file that cannot be parsed (a `ParseError`, or any exception of a parser or a library)
  becomes a `ParseOutcome` with a `problem`, never an exception: one bad file must not stop
  a sync, in this process or in a worker; a `MemoryError` is the problem "needs more than
  768 MB of memory to read". `read_task` and `finish_task` are its two steps (parse, then
  chunk and scan), for `tether.ingest.guard`, which runs the parse in a watched child
  process (a file that takes too much memory or time, or crashes its parser, is refused
  there).
- `embed_shard(embedder, texts)`: the vectors of one shard and the tokens the embedder read
  (0 when it does not count them).
- `shards(texts, size)`: the shards of a list of texts, by length (padding stays within
  similar lengths), each a list of input positions.

Everything here is picklable and free of process state, so the same code runs in this process,
in a pool of processes and in Ray workers (`tether.ingest.executor`).

What it cannot do: it reads no files (the caller passes their bytes) and writes nothing.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace

import numpy as np

from tether.errors import ParseError
from tether.ingest.chunking import chunk_document, oversized
from tether.ingest.parse.blocks import short
from tether.ingest.parse.dispatch import parse_bytes
from tether.instructions import find_instructions
from tether.protocols import Embedder
from tether.types import (
    Chunk,
    ChunkerConfig,
    Document,
    FileChange,
    FileFormat,
    FileState,
    InstructionSpan,
    TokenWindow,
)

EMBED_BATCH = 32  # passages per call for an embedder without its own batching
# What reading one file may take (the parsing child's resident memory, `tether.ingest.guard`).
# A 20 MB text file in one paragraph (the largest a file may be) takes ~680 MiB to parse and
# chunk, so 640 MiB would refuse it; 768 MiB keeps every process of an ingest under 1 GB
# (`tether ingest --no-embed`: this process ~150-250 MiB, the fork server ~55 MiB).
MAX_PARSE_MEMORY = 768 * 2**20


@dataclass(frozen=True)
class ParseTask:
    """One file to parse: its bytes and what decides its document."""

    state: FileState  # doc_id and version are filled in from the parsed document
    data: bytes
    fmt: FileFormat
    row: dict[str, str] | None
    default_access: str
    chunker: ChunkerConfig
    added: bool  # the file was not indexed before
    window: TokenWindow | None = None  # the embedder's window the chunks must fit
    trail: tuple[str, ...] = ()  # where it sits in its source's tree, above its own headings


@dataclass(frozen=True)
class ParseOutcome:
    """A parsed file (`change`, with the parser's `warnings`) or the reason it was not."""

    source: str
    change: FileChange | None = None
    warnings: tuple[str, ...] = ()
    problem: str | None = None


def parse_task(task: ParseTask) -> ParseOutcome:
    """Parse, chunk and scan one file; a failure is the outcome's `problem`."""
    read = read_task(task)
    return read if isinstance(read, ParseOutcome) else finish_task(task, read)


def read_task(task: ParseTask) -> Document | ParseOutcome:
    """The parsed document of `task` (its trail above its headings), or an outcome with the
    `problem` that kept it from being read. The step `tether.ingest.guard` runs in a child
    for a task whose token window cannot travel there (the parent then calls `finish_task`)."""
    try:
        document = parse_bytes(
            task.data, task.state.source, task.fmt, task.row, default_access=task.default_access
        )
        return with_trail(document, task.trail) if task.trail else document
    except MemoryError:  # before Exception, which it is: the file, not the ingest, fails
        return ParseOutcome(task.state.source, problem=memory_problem())
    except Exception as exc:  # a parser's or a library's surprise: this file only
        return ParseOutcome(task.state.source, problem=problem_of(exc))


def finish_task(task: ParseTask, document: Document) -> ParseOutcome:
    """`document` (read from `task`) chunked and scanned for instructions: the change to
    write, or a problem when it cannot be chunked."""
    source = task.state.source
    try:
        chunks = tuple(chunk_document(document, task.chunker, task.window))
    except MemoryError:
        return ParseOutcome(source, problem=memory_problem())
    except Exception as exc:  # a parser's or a library's surprise: this file only
        return ParseOutcome(source, problem=problem_of(exc))
    m = document.meta
    s = task.state
    state = FileState(s.source, s.fingerprint, s.size, s.mtime_ns, m.doc_id, m.version)
    change = FileChange(state, document, chunks, task.added, instruction_spans(chunks))
    warnings = [f"{source}: {w}" for w in document.warnings] + over_window(
        source, chunks, task.window
    )
    return ParseOutcome(source, change, tuple(warnings))


def memory_problem(limit: int = MAX_PARSE_MEMORY) -> str:
    """The problem of a file whose reading needs more than `limit` bytes of memory."""
    return f"needs more than {limit // 2**20} MB of memory to read: refused"


def with_trail(document: Document, trail: tuple[str, ...]) -> Document:
    """`document` with `trail` (an export's page tree: the pages above this one) put above
    every block's own headings, so its chunks' sections name where the page sits."""
    blocks = tuple(replace(b, heading_path=(*trail, *b.heading_path)) for b in document.blocks)
    return replace(document, blocks=blocks)


def over_window(source: str, chunks: tuple[Chunk, ...], window: TokenWindow | None) -> list[str]:
    """A warning for each chunk the embedder will read past its window (one block that no
    cut between lines or words brings within it)."""
    if window is None or not chunks:
        return []
    return [
        f"{source}: chunk {c.chunk_id} (§ {c.section}) is {n} tokens, over the embedder's"
        f" {window.limit}-token window (no line or word boundary splits it further); its"
        " vector averages several windows"
        for c, n in oversized(chunks, window)
    ]


def problem_of(exc: Exception) -> str:
    """Why a file could not be read or parsed, as the report says it."""
    if isinstance(exc, ParseError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return f"cannot be read ({type(exc).__name__}: {short(exc)})"


def instruction_spans(chunks: tuple[Chunk, ...]) -> tuple[InstructionSpan, ...]:
    """The text addressed to AI assistants in each chunk (`tether.instructions`)."""
    return tuple(
        InstructionSpan(c.chunk_id, start, end, c.text[start:end])
        for c in chunks
        for start, end in find_instructions(c.text)
    )


def embed_shard(
    embedder: Embedder, texts: list[str], progress: object = None
) -> tuple[np.ndarray, int]:
    """(vectors as float32 rows in input order, tokens read) for `texts`; `progress`, when
    given and the embedder takes one, is called as `progress(done_texts, done_tokens)`."""
    tokens = 0

    def counted(done_texts: int, done_tokens: int) -> None:
        nonlocal tokens
        tokens = done_tokens
        if callable(progress):
            progress(done_texts, done_tokens)

    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32), 0
    if "progress" in inspect.signature(embedder.embed_passages).parameters:
        # one call: the embedder sorts by length and pads within its own batches
        matrix = embedder.embed_passages(texts, progress=counted)  # type: ignore[call-arg]
    else:
        matrix = np.concatenate(
            [
                embedder.embed_passages(texts[i : i + EMBED_BATCH])
                for i in range(0, len(texts), EMBED_BATCH)
            ]
        )
    return np.asarray(matrix, dtype=np.float32), tokens


SHARDS_PER_WORKER = 4  # at least this many shards per worker, so the longest-first order balances


def shards(texts: list[str], size: int, workers: int = 1) -> list[list[int]]:
    """Input positions of `texts` cut into shards of at most `size`, longest texts first, and
    small enough that each of `workers` gets `SHARDS_PER_WORKER` of them: a workers' queue
    taking the longest shards first then ends nearly together. (Shards of 64 from a batch of
    128 sentences gave one worker the 64 longest and left the other idle half the time.)"""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    fair = -(-len(texts) // (SHARDS_PER_WORKER * max(1, workers)))  # ceil
    step = max(1, min(size, fair))
    return [order[i : i + step] for i in range(0, len(order), step)]
