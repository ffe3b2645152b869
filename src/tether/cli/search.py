"""Looking at the index: `tether search`, `documents`, `chunks` and `info`.

What it cannot do: it ranks nothing itself (the Retriever does) and it loads an embedder
only for methods that need one (bm25 needs none) or for `info` on an index with vectors.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from tether.cli.app import (
    AsOfOpt,
    AudienceOpt,
    DemoOpt,
    IndexOpt,
    JsonOpt,
    as_of_date,
    audience_value,
    in_force,
    open_workspace,
    out,
    print_json,
    table,
    user_errors,
)

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import Filters, Hit

RULE_NOTE = " · standing rule: which source wins when sources of different standing meet"


def documents(
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List the documents the audience may see (metadata and chunk counts)."""
    who = audience_value(audience)
    with user_errors():
        docs = open_workspace(index, demo).documents(who)  # type: ignore[arg-type]
    if as_json:
        from tether.schemas import Document

        print_json([Document.from_info(d) for d in docs])
        return
    shown = table(
        f"{len(docs)} documents",
        ("doc_id", "version", "type", "access", "lang", "in force", "chunks", "source"),
    )
    for d in docs:
        m = d.meta
        shown.add_row(
            m.doc_id, m.version, m.doc_type, m.access, m.language,
            in_force(m.effective_from, m.effective_to), str(d.chunks), m.source,
        )  # fmt: skip
    out.print(shown)


def chunks(
    doc_id: Annotated[str, typer.Argument(help="The document's doc_id.")],
    version: Annotated[str | None, typer.Option(help="Only this version.")] = None,
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the chunks of one document (one the audience may see)."""
    who = audience_value(audience)
    with user_errors():
        found = open_workspace(index, demo).chunks(doc_id, version, who)  # type: ignore[arg-type]
    if as_json:
        from tether.schemas import Chunk

        print_json([Chunk.from_chunk(c) for c in found])
        return
    for c in found:
        where = f"page {c.page}" if c.page else ""
        out.print(
            f"[bold]{c.chunk_id}[/bold]  {c.doc_id} v{c.version}  §{' > '.join(c.heading_path) or '-'}"
            f"  {where} [{c.start}:{c.end}]",
            highlight=False,
        )
        out.print(c.text, highlight=False, markup=False)
        out.print()


def search(
    query: Annotated[str, typer.Argument(help="What to look for (words, a code, a question).")],
    k: Annotated[int, typer.Option("--k", help="How many passages.", min=1, max=100)] = 5,
    as_of: AsOfOpt = "today",
    audience: AudienceOpt = "public",
    method: Annotated[
        str,
        typer.Option(
            help="bm25, dense, hybrid or rerank. Default: rerank when the index has vectors,"
            " else bm25."
        ),
    ] = "auto",
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Search the index and print ranked passages."""
    from tether.types import Filters

    filters = Filters(as_of=as_of_date(as_of), audience=audience_value(audience))  # type: ignore[arg-type]
    with user_errors():
        ws = open_workspace(index, demo)
        hits = run_search(ws, query, k, filters, method)
    if as_json:
        from tether.schemas import Hit as WireHit

        print_json([WireHit.from_hit(h) for h in hits])
        return
    print_hits(hits, filters)


def run_search(ws: Workspace, query: str, k: int, filters: Filters, method: str) -> list[Hit]:
    """Ranked hits for `query` (bm25 is served without loading an embedder)."""
    from tether.app import SearchOptions

    return ws.search(query, SearchOptions(k, filters.as_of, filters.audience, method))


def print_hits(hits: list[Hit], filters: Filters) -> None:
    when = filters.as_of.isoformat() if filters.as_of else "any date"
    if not hits:
        out.print(f"no passages found (as of {when}, audience {filters.audience})")
        return
    out.print(f"[dim]{len(hits)} passages (as of {when}, audience {filters.audience})[/dim]")
    for h in hits:
        c = h.chunk
        snippet = " ".join(c.text.split())
        snippet = snippet[:220] + ("…" if len(snippet) > 220 else "")
        out.print(
            f"[bold]{h.rank:>2}.[/bold] [cyan]{c.chunk_id}[/cyan]  {c.doc_id} v{c.version}"
            f"  § {c.section}  [dim]{h.method} {h.score:.3f}"
            f"{RULE_NOTE if 'rule' in h.signals else ''}"
            "[/dim]",
            highlight=False,
        )
        out.print(f"    {snippet}", highlight=False, markup=False)


def info(
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """What the index holds (counted for the audience), how it was built, and which embedder
    this machine would use."""
    who = audience_value(audience)
    with user_errors():
        data = open_workspace(index, demo).info(who)  # type: ignore[arg-type]
    if as_json:
        from tether.schemas import IndexInfo

        print_json(IndexInfo.model_validate(data))
        return
    from rich.table import Table

    shown = Table(title="index", show_header=False)
    shown.add_column("key", style="bold")
    shown.add_column("value")
    for key, value in data.items():
        shown.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    out.print(shown)
