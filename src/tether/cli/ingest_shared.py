"""What the three ingests of the CLI share (a folder: `tether.cli.ingest`, a website:
`tether.cli.ingest_web`, an export: `tether.cli.ingest_export`): the Workspace they write into
(`writable_index`) and how their report is printed (the table, the files read or left out, the
inventory, the access note, the problems and warnings).

What it cannot do: it reads no file and writes no index itself (the Workspace's `ingest`
does); the progress of an ingest is `tether.cli.app.ingest_progress`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli.app import err, out, shown, verbosity

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import SyncReport


def print_problems(report: SyncReport) -> None:
    """The files that could not be read, then the warnings (files indexed on the safe side,
    inventory rows that apply to no file), on stderr."""
    for problem in report.problems:
        err.print(
            f"[yellow]problem[/yellow]  {shown(problem.source, one_line=True)}:"
            f" {shown(problem.reason, one_line=True)}",
            highlight=False,
        )
    for warning in report.warnings:
        err.print(f"[yellow]warning[/yellow]  {shown(warning, one_line=True)}", highlight=False)


def print_unsupported(report: SyncReport) -> None:
    """One line for the files left out because tether does not read their type."""
    if not report.unsupported:
        return
    from tether.ingest.discover import SUFFIXES

    total = sum(count for _, count in report.unsupported)
    kinds = ", ".join(
        f"{shown(suffix, one_line=True)} {count}" for suffix, count in report.unsupported
    )
    noun = "file" if total == 1 else "files"
    out.print(
        f"  not read: {total} {noun} of a type tether does not read ({kinds});"
        f" it reads {' '.join(SUFFIXES)}",
        highlight=False,
    )


def print_report(report: SyncReport, index: Path | str) -> None:
    from rich.table import Table

    table = Table(title=f"ingest → {shown(index, one_line=True)}", show_header=True)
    columns = (
        "added",
        "updated",
        "removed",
        "unchanged",
        "problems",
        "chunks written",
        "seconds",
        "calibration s",
    )
    for col in columns:
        table.add_column(col, justify="right")
    table.add_row(
        *(str(len(x)) for x in (report.added, report.updated, report.removed, report.unchanged)),
        str(len(report.problems)),
        str(report.chunks_written),
        f"{report.seconds:.2f}",
        f"{report.calibration_seconds:.2f}",
    )
    out.print(table)
    for name, files in (
        ("added", report.added),
        ("updated", report.updated),
        ("removed", report.removed),
    ):
        for f in files:
            out.print(f"  {name:<8} {shown(f, one_line=True)}", highlight=False)
    for f in report.unchanged if verbosity().verbose else ():
        out.print(f"  unchanged {shown(f, one_line=True)}", highlight=False)
    for f in report.instructions:
        out.print(
            f"  ! {shown(f, one_line=True)} holds text addressed to AI assistants"
            " (never obeyed; `tether documents`)",
            highlight=False,
        )
    if line := inventory_line(report):
        out.print(f"  {line}", highlight=False)
    print_access_note(report)
    print_unsupported(report)
    print_problems(report)
    if not report.committed:
        err.print("[red]--strict: nothing was written (the index is as it was)[/red]")


def inventory_line(report: SyncReport) -> str:
    """That the folder's inventory.csv was read: its rows, how many name a file found and
    how many none (each of those is a warning); "" when the folder has none."""
    rows = report.inventory_rows
    if rows is None:
        return ""
    said = f"inventory.csv read: {rows} row{'' if rows == 1 else 's'}"
    if not rows:
        return said + " (only a header: no metadata applied)"
    missing = rows - report.inventory_matched
    said += f", {report.inventory_matched} naming a file here"
    if missing:
        said += f", {missing} naming no file (see the warnings)"
    return said


NAMED_UNLABELLED = 5  # files named in the access note; the rest counted


def access_note(report: SyncReport) -> str:
    """How many documents read carry no access label, and what that means for public
    questions; "" when all carry one."""
    n = len(report.unlabelled)
    if not n:
        return ""
    docs = f"{n} document{'s' if n != 1 else ''} read" + (" has" if n == 1 else " have")
    shown = ", ".join(report.unlabelled[:NAMED_UNLABELLED])
    more = n - NAMED_UNLABELLED
    named = f" ({shown}{f' and {more} more' if more > 0 else ''})"
    if report.default_access == "public":
        return (
            f"{docs} no access label{named}: indexed as public (--default-access public), so"
            " anyone asking as public sees them"
        )
    return (
        f"{docs} no access label{named}: indexed as staff-only (fail-closed), so questions"
        " asked as public (the default) will not see them; label them (front matter `access:"
        " public`, a field `:access: public`, `<meta name=access>` or inventory.csv) or ingest"
        " with --default-access public"
    )


def print_access_note(report: SyncReport) -> None:
    if note := access_note(report):
        colour = "yellow" if report.default_access == "staff" else "dim"
        err.print(f"[{colour}]note[/{colour}]  {note}", highlight=False)


def writable_index(path: Path, store: str | None = None, **settings: Any) -> Workspace:
    """A Workspace over the index at `path` (or the server `store`, or TETHER_STORE) to write
    into (created when missing); `settings` that are not None replace the loaded Settings'
    values (executor, workers, ray_address)."""
    from tether.app import Workspace
    from tether.config import load_settings

    given = {k: v for k, v in settings.items() if v is not None}
    return Workspace.open(
        path, store=store, create=True, settings=replace(load_settings(), **given)
    )
