"""Building the engine's types from the rows a store read, the same way in every store:
the document list, the instruction spans by document, hits from a ranking.

What it cannot do: it runs no query (each store reads its own tables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tether.types import Chunk, DocMeta, DocumentInfo, Hit, InstructionSpan

Key = tuple[str, str]  # (doc_id, version)


def version_key(version: str) -> tuple[int, str]:
    """Versions in order: numbers by value, then other names."""
    return (int(version), "") if version.isdigit() else (10**9, version)


def document_infos(
    metas: Mapping[Key, DocMeta],
    counts: Mapping[Key, int],
    hashes: Mapping[Key, str],
    spans: Mapping[Key, list[InstructionSpan]],
) -> list[DocumentInfo]:
    """Every document version, by doc_id then version, with its chunk count and spans."""
    return [
        DocumentInfo(metas[key], counts.get(key, 0), hashes[key], tuple(spans.get(key, ())))
        for key in sorted(metas, key=lambda k: (k[0], version_key(k[1])))
    ]


def spans_by_document(
    rows: Iterable[tuple[str, str, str, int, int, str]],
) -> dict[Key, list[InstructionSpan]]:
    """Instruction spans from rows (chunk_id, doc_id, version, start, end, chunk text) read
    in reading order."""
    found: dict[Key, list[InstructionSpan]] = {}
    for cid, doc_id, version, start, end, text in rows:
        found.setdefault((doc_id, version), []).append(
            InstructionSpan(cid, start, end, text[start:end])
        )
    return found


def bm25_hits(ranked: list[tuple[str, float]], chunks: Mapping[str, Chunk]) -> list[Hit]:
    """Hits of a BM25 ranking, ranks from 1."""
    return [
        Hit(chunk=chunks[cid], score=score, rank=n + 1, method="bm25")
        for n, (cid, score) in enumerate(ranked)
    ]
