"""Looking at the index: `tether search`, `documents`, `chunks` and `info`.

What it cannot do: it ranks nothing itself (the Retriever does) and it loads an embedder
only for methods that need one (bm25 needs none) or for `info` on an index with vectors.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Annotated

import typer

from tether.catalog import METHODS, one_of
from tether.cli.app import (
    AsOfOpt,
    AudienceOpt,
    DemoOpt,
    IndexOpt,
    JsonOpt,
    StoreOpt,
    as_of_date,
    audience_value,
    err,
    in_force,
    method_option,
    open_workspace,
    out,
    print_json,
    shown,
    table,
    user_errors,
    visible,
    working,
)

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import DocumentInfo, Filters, Hit

RULE_NOTE = " · standing rule: which source wins when sources of different standing meet"


def documents(
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List the documents the audience may see (metadata and chunk counts)."""
    who = audience_value(audience)
    with user_errors():
        docs = open_workspace(index, demo, store).documents(who)  # type: ignore[arg-type]
    if as_json:
        from tether.schemas import WireDocument

        print_json([WireDocument.from_info(d) for d in docs])
        return
    listed = table(
        f"{len(docs)} documents",
        ("doc_id", "version", "type", "access", "lang", "in force", "chunks", "AI text", "source"),
    )
    for d in docs:
        m = d.meta
        names = (shown(v, one_line=True) for v in (m.doc_id, m.version, m.doc_type, m.access))
        listed.add_row(
            *names,
            shown(m.language, one_line=True),
            in_force(m.effective_from, m.effective_to),
            str(d.chunks),
            f"! {len(d.instructions)}" if d.instructions else "",
            shown(m.source, one_line=True),
        )
    out.print(listed)
    print_instructions(docs)


def print_instructions(docs: list[DocumentInfo]) -> None:
    """The spans addressed to AI assistants, one line each (shown, never obeyed)."""
    spans = [(d.meta, i) for d in docs for i in d.instructions]
    if not spans:
        return
    out.print(f"text addressed to AI assistants (never obeyed), {len(spans)} span(s):")
    for m, i in spans:
        escaped = "".join(
            f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf") else c
            for c in (i.text if len(i.text) <= 160 else i.text[:160] + "…")
        )  # invisible characters shown as escapes: the disguise is part of the finding
        out.print(
            f"  ! {visible(m.doc_id, one_line=True)} v{visible(m.version, one_line=True)}"
            f'  {i.chunk_id} [{i.start}:{i.end}]  "{escaped}"',
            highlight=False,
            markup=False,
        )


def chunks(
    doc_id: Annotated[str, typer.Argument(help="The document's doc_id.")],
    version: Annotated[str | None, typer.Option(help="Only this version.")] = None,
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the chunks of one document (one the audience may see)."""
    who = audience_value(audience)
    with user_errors():
        found = open_workspace(index, demo, store).chunks(doc_id, version, who)  # type: ignore[arg-type]
    if as_json:
        from tether.schemas import WireChunk

        print_json([WireChunk.from_chunk(c) for c in found])
        return
    for c in found:
        where = f"page {c.page}" if c.page else ""
        path = shown(" > ".join(c.heading_path) or "-", one_line=True)
        marks = shown(" ".join(f"#{a}" for a in c.anchors), one_line=True)
        out.print(
            f"[bold]{shown(c.chunk_id, one_line=True)}[/bold]  {shown(c.doc_id, one_line=True)}"
            f" v{shown(c.version, one_line=True)}  §{path}  {where} \\[{c.start}:{c.end}]"
            + (f"  {marks}" if marks else ""),
            highlight=False,
        )
        out.print(shown(c.text), highlight=False)
        out.print()


def search(
    query: Annotated[str, typer.Argument(help="What to look for (words, a code, a question).")],
    k: Annotated[int, typer.Option("--k", "-k", help="How many passages.", min=1, max=100)] = 5,
    as_of: AsOfOpt = "today",
    audience: AudienceOpt = "public",
    method: Annotated[
        str,
        typer.Option(
            help=f"{one_of(METHODS)} (rerank's top 10 reread by tether's"
            " reader: slower). Default: rerank when the index has vectors, else bm25.",
            callback=method_option,
        ),
    ] = "auto",
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Search the index and print ranked passages."""
    from tether.types import Filters

    filters = Filters(as_of=as_of_date(as_of), audience=audience_value(audience))  # type: ignore[arg-type]
    with user_errors():
        ws = open_workspace(index, demo, store)
        with working("searching…"):
            hits = run_search(ws, query, k, filters, method)
        why = "" if hits else ws.filtered_out(query, filters)
    if why:  # on stderr, so that --json stays a list of hits
        err.print(f"note: {why}", highlight=False)
    if as_json:
        from tether.schemas import WireHit

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
        names = (shown(v, one_line=True) for v in (c.chunk_id, c.doc_id, c.version, c.section))
        chunk_id, doc_id, version, section = names
        out.print(
            f"[bold]{h.rank:>2}.[/bold] [cyan]{chunk_id}[/cyan]  {doc_id} v{version}"
            f"  § {section}  [dim]{h.method} {h.score:.3f}"
            f"{RULE_NOTE if 'rule' in h.signals else ''}"
            "[/dim]",
            highlight=False,
        )
        out.print(f"    {shown(snippet)}", highlight=False)


def info(
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """What the index holds (counted for the audience), how it was built, which embedder this
    machine would use, and the handoff: collection, models, calibration, the last answer
    evaluation and the weaknesses it found (as the audience may see them)."""
    who = audience_value(audience)
    with user_errors():
        ws = open_workspace(index, demo, store)
        data = ws.info(who)  # type: ignore[arg-type]
        data["handoff"] = ws.handoff(who)  # type: ignore[arg-type]
    if as_json:
        from tether.schemas import IndexInfo

        print_json(IndexInfo.model_validate(data))
        return
    from tether.cli.info_text import info_sections, width

    sections = info_sections(data, who)
    pad = width(sections.values())
    for title, lines in sections.items():
        out.print(f"[bold]{title}[/bold]")
        for label, text in lines:
            out.print(
                f"  {shown(label, one_line=True):<{pad}}  {shown(text, one_line=True)}",
                highlight=False,
                soft_wrap=True,
            )
