"""The PostgreSQL store's SQL: the chunk columns, the filter clause, and the BM25 query.

BM25 is FTS5's own formula (`bm25(chunks_fts, 2.0, 1.0, 4.0)` in the SQLite store), computed
in SQL from the postings the store keeps: for each phrase of the query (`stores.lexical`),
its hits give its document frequency n and, per chunk, its weighted frequency f (heading ×2,
text ×1, codes ×4); with N chunks and avgdl tokens per chunk (kept in `tether_collections`)
and D the chunk's own tokens,

    score = Σ max(ln((N - n + 0.5) / (n + 0.5)), 1e-6) · f (k1 + 1) / (f + k1 (1 - b + b D / avgdl))

with k1 = 1.2, b = 0.75. A phrase of several tokens (a code's "pw 2200 07") matches where its
tokens follow each other in one column, read from the postings' positions.

The audience chooses the statistics (N, avgdl and n): a staff search reads the whole
collection's (`lex_rows`, `lex_tokens`, n over every chunk), as the SQLite store's
`chunks_fts` table; every other audience reads the public chunks' only (`lex_rows_public`,
`lex_tokens_public`, n over the public chunks of every version), as the SQLite store's table
of public chunks, so a staff passage never moves a public score. The other filter (as_of) is
applied to the scored chunks before the top k is taken and never changes a score.

What it cannot do: it holds SQL text only (the store runs it); the statistics are per
collection and audience, so one collection's documents never change another's scores, but
a public score still moves with the public chunks of other versions and dates.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from tether.stores.lexical import CODES_COLUMN, K1, WEIGHTS, B
from tether.types import DocMeta, Filters

# The chunk row as the store reads it; a field added to `Chunk` is one more column here, in
# `postgres_write.CHUNK_ROW` and in a migration.
CHUNK_COLS = (
    "c.chunk_id, c.doc_id, c.version, c.ordinal, c.heading_path, c.anchor, c.page, c.start,"
    ' c."end", c.lead, c.text, c.anchors'
)
META_COLS = (
    "doc_id, version, title, doc_type, access, language, effective_from, effective_to, owner,"
    " source, format, review_by"
)


def row_meta(r: Sequence[Any]) -> DocMeta:
    """A DocMeta from a row of META_COLS."""
    return DocMeta(
        doc_id=r[0],
        version=r[1],
        title=r[2],
        doc_type=r[3],
        access=r[4],
        language=r[5],
        effective_from=r[6],
        effective_to=r[7],
        owner=r[8],
        source=r[9],
        format=r[10],
        review_by=r[11],
    )


def filter_sql(filters: Filters, collection_id: int) -> tuple[str, dict[str, Any]]:
    """The WHERE clause over chunks `c` for one collection and these filters. The collection
    ID is written as a literal (an integer the store read) so the planner can match the
    collection's partial HNSW index."""
    clauses = [f"c.collection_id = {int(collection_id)}"]
    args: dict[str, Any] = {}
    if filters.public:  # any audience but "staff" (fail closed)
        clauses.append("c.access = 'public'")
    if filters.as_of is not None:
        clauses.append("(c.effective_from IS NULL OR c.effective_from <= %(as_of)s)")
        clauses.append("(c.effective_to IS NULL OR c.effective_to >= %(as_of)s)")
        args["as_of"] = filters.as_of
    return " AND ".join(clauses), args


Phrase = tuple[tuple[str, ...], bool]  # (tokens, codes column only)


def hits_sql(phrases: Sequence[Phrase], args: dict[str, Any]) -> str:
    """One SELECT (phrase number p, chunk_id, col, tf) per phrase, UNION ALL; `args` gets the
    tokens. Every hit of the collection (`%(cid)s`), unfiltered (`bm25_sql` counts the
    public ones only for a public audience)."""
    selects = []
    for p, (tokens, codes_only) in enumerate(phrases):
        for j, token in enumerate(tokens):
            args[f"t{p}_{j}"] = token
        col = f" AND p0.col = {CODES_COLUMN}" if codes_only else ""
        if len(tokens) == 1:
            selects.append(
                f"SELECT {p} AS p, p0.chunk_id, p0.col, p0.tf FROM tether_postings p0"
                f" WHERE p0.collection_id = %(cid)s AND p0.term = %(t{p}_0)s{col}"
            )
            continue
        joins = "".join(
            f" JOIN tether_postings p{j} ON p{j}.collection_id = p0.collection_id"
            f" AND p{j}.chunk_id = p0.chunk_id AND p{j}.col = p0.col AND p{j}.term = %(t{p}_{j})s"
            for j in range(1, len(tokens))
        )
        follows = "".join(f" AND x + {j} = ANY(p{j}.pos)" for j in range(1, len(tokens)))
        selects.append(
            f"SELECT {p} AS p, p0.chunk_id, p0.col, count(*)::integer AS tf"
            f" FROM tether_postings p0{joins} CROSS JOIN LATERAL unnest(p0.pos) AS x"
            f" WHERE p0.collection_id = %(cid)s AND p0.term = %(t{p}_0)s{col}{follows}"
            " GROUP BY p0.chunk_id, p0.col"
        )
    return " UNION ALL ".join(selects)


def bm25_sql(phrases: Sequence[Phrase], where: str, args: dict[str, Any], *, public: bool) -> str:
    """The top `%(k)s` (chunk_id, score) of the chunks `where` allows, best first. With
    `public` (`Filters.public`; no default, so no caller forgets it), N, avgdl and each
    phrase's n are the public chunks' (every version); without, the whole collection's."""
    weight = " ".join(f"WHEN {i} THEN {w}" for i, w in enumerate(WEIGHTS))
    if public:
        df = (
            "SELECT h.p, count(DISTINCT h.chunk_id) AS n FROM hits h JOIN tether_chunks pc"
            " ON pc.collection_id = %(cid)s AND pc.chunk_id = h.chunk_id"
            " AND pc.access = 'public' GROUP BY h.p"
        )
        rows, tokens = "lex_rows_public", "lex_tokens_public"
    else:
        df = "SELECT p, count(DISTINCT chunk_id) AS n FROM hits GROUP BY p"
        rows, tokens = "lex_rows", "lex_tokens"
    return f"""
WITH hits AS ({hits_sql(phrases, args)}),
df AS ({df}),
freq AS (
  SELECT p, chunk_id, sum(tf * CASE col {weight} ELSE 1.0 END)::float8 AS f
  FROM hits GROUP BY p, chunk_id),
st AS (
  SELECT {rows}::float8 AS n, {tokens}::float8 / greatest({rows}, 1) AS avgdl
  FROM tether_collections WHERE id = %(cid)s)
SELECT c.chunk_id, sum(
  greatest(ln((st.n - df.n + 0.5) / (df.n + 0.5)), 1e-6)
  * freq.f * {K1 + 1} / (freq.f + {K1} * ({1 - B} + {B} * c.lex_len / st.avgdl))) AS score
FROM freq JOIN df USING (p) CROSS JOIN st
JOIN tether_chunks c ON c.collection_id = %(cid)s AND c.chunk_id = freq.chunk_id
WHERE {where}
GROUP BY c.chunk_id, c.seq
ORDER BY score DESC, c.seq
LIMIT %(k)s"""


def count_sql(phrases: Sequence[Phrase], where: str, args: dict[str, Any]) -> str:
    """How many chunks `where` allows match any phrase."""
    return (
        f"SELECT count(*) FROM tether_chunks c WHERE {where} AND c.chunk_id IN"
        f" (SELECT chunk_id FROM ({hits_sql(phrases, args)}) AS hits)"
    )


def iso(day: date | None) -> str | None:
    return day.isoformat() if day else None
