"""`tether health`: the collection's health report for the people who own its documents
(`Workspace.health`): printed as text, as JSON (`--json`, the `health` schema) or written as
an HTML page (`--report FILE.html`).

What it cannot do: it parses and prints; the report is built by `tether.health.report`. It
quotes staff documents and recorded questions: whoever runs it can read the index anyway,
but its output is for staff.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tether.cli.app import (
    DemoOpt,
    IndexOpt,
    JsonOpt,
    StoreOpt,
    as_of_option,
    err,
    open_workspace,
    out,
    print_json,
    shown,
    user_errors,
    verbosity,
    working,
)

if TYPE_CHECKING:
    from tether.types import Finding, HealthReport

QUOTE_CHARS = 240


def health(
    as_of: Annotated[
        str,
        typer.Option(
            "--as-of",
            help="The date to judge on: YYYY-MM-DD or today (default).",
            callback=as_of_option,
        ),
    ] = "today",
    since: Annotated[
        str | None,
        typer.Option(
            help="Count the questions asked from this date (YYYY-MM-DD) on; default:"
            " the whole audit.",
            callback=as_of_option,
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Also write the report as one HTML page to this file."),
    ] = None,
    contradictions: Annotated[
        bool,
        typer.Option(
            "--contradictions/--no-contradictions",
            help="Look for documents in force together that disagree (the slowest part).",
        ),
    ] = True,
    index: IndexOpt = None,
    demo: DemoOpt = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report what the owners of the documents should fix: questions nothing answers (content
    gaps, from the audit and feedback), documents that contradict each other, stale documents
    and links, and hygiene (unlabelled documents, text addressed to AI assistants,
    near-duplicates, unreadable files). Staff only: it quotes internal documents and recorded
    questions."""
    from tether.app import as_of_value
    from tether.health.report import render_html

    with user_errors():
        ws = open_workspace(index, demo, store)
        since_date = as_of_value(since) if since else None
        with working("checking the collection…"):
            found = ws.health(
                as_of,
                since=since_date.isoformat() if since_date else None,
                contradictions=contradictions,
            )
        if report is not None:
            try:
                report.write_text(render_html(found), encoding="utf-8")
            except OSError as exc:
                from tether.errors import TetherError

                raise TetherError(f"cannot write {report}: {exc.strerror}") from None
    if as_json:
        from tether.schemas import WireHealthReport

        print_json(WireHealthReport.from_report(found))
    else:
        print_report(found)
    if report is not None and not verbosity().quiet:
        err.print(f"wrote {shown(report)}", highlight=False)


def print_report(report: HealthReport) -> None:
    """The report as text: a summary line titled with the collection's name, the index it
    read, then each section's findings."""
    from tether.health.report import SECTIONS, collection_name

    looked = report.looked_at
    out.print(
        f"[bold]Health of {shown(collection_name(report.collection), one_line=True)}[/bold] on"
        f" {report.as_of.isoformat()} [dim]({looked.get('documents', 0)} documents,"
        f" {looked.get('chunks', 0)} passages, {looked.get('audit_entries', 0)} recorded"
        f" answers; {report.seconds:.1f} s; staff only)[/dim]",
        highlight=False,
    )
    out.print(f"[dim]index: {shown(report.collection, one_line=True)}[/dim]", highlight=False)
    for name, kinds in SECTIONS:
        found = [f for f in report.findings if f.kind in kinds]
        out.print(f"\n[bold]{name}[/bold] ({len(found)})", highlight=False)
        if "contradiction" in kinds and "contradictions not looked for" in report.notes:
            out.print("  not looked for (--no-contradictions)", style="dim", highlight=False)
        elif not found:
            out.print("  nothing found", style="dim", highlight=False)
        for f in found:
            print_finding(f)
    for note in report.notes:
        out.print(f"[dim]note: {shown(note)}[/dim]", highlight=False)


def print_finding(f: Finding) -> None:
    """One finding: its title, owners, detail, the questions asked and the passages quoted."""
    owners = f"  [dim]owner: {shown(', '.join(f.owners))}[/dim]" if f.owners else ""
    out.print(f"- {shown(f.title)}{owners}", highlight=False)
    if f.detail:
        out.print(f"    {shown(f.detail)}", highlight=False)
    for question in f.examples:
        out.print(f"    asked: {shown(question, one_line=True)}", highlight=False)
    for q in f.evidence:
        text = " ".join(q.text.split())
        text = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"
        where = f"{q.title} v{q.version}" + (f" › {q.section}" if q.section else "")
        out.print(f"    [dim]{shown(where)} ({q.access}):[/dim] {shown(text)}", highlight=False)
