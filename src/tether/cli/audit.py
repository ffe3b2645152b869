"""`tether audit`: the answered questions the index recorded (`Workspace.record`): list and
filter them (flagged first, by date, by the asker's audience, by flag), `show ID` in full,
`export --format jsonl|csv`, and with `--feedback` the feedback given on them (helpful or
wrong, the note, the right passage: `POST /v1/feedback`, `Workspace.feedback`; `tether
questions --from-feedback` turns it into a question set). An entry of status "dropped" is no
answer: it counts the anonymous answers `tether serve` left out over its daily cap per client
address; the listing sums them.

The reader's `--audience` is public by default: a public reader never sees an entry asked
for staff (those answers may quote staff passages), nor feedback on one, and sees no ids or
askers' names; `--audience staff` sees every entry. The listing and `--feedback` say how many
they left out for that reason and how to see them (on stderr with --json).

What it cannot do: it reads the audit of one index (a file, or a PostgreSQL collection with
`--store`); it changes nothing in it (retention is
applied when an entry is written, TETHER_AUDIT_RETENTION_DAYS).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from tether.cli.app import (
    AudienceOpt,
    DemoOpt,
    IndexOpt,
    JsonOpt,
    StoreOpt,
    as_of_option,
    audience_option,
    audience_value,
    err,
    open_workspace,
    out,
    print_json,
    shown,
    table,
    user_errors,
)
from tether.text import spreadsheet_safe

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import Audience, AuditEntry, AuditQuery

audit_app = typer.Typer(
    help="The answered questions recorded in the index: list (flagged first), show, export.",
    no_args_is_help=False,
    invoke_without_command=True,
)

SinceOpt = Annotated[
    str | None, typer.Option(help="From this date (YYYY-MM-DD) on.", callback=as_of_option)
]
UntilOpt = Annotated[
    str | None, typer.Option(help="Up to this date (YYYY-MM-DD).", callback=as_of_option)
]
AskerOpt = Annotated[
    str | None,
    typer.Option(
        "--asked-by", help="Only questions asked for public or staff.", callback=audience_option
    ),
]
FlagOpt = Annotated[str | None, typer.Option(help="Only answers with this flag kind.")]
FlaggedOpt = Annotated[bool, typer.Option("--flagged", help="Only answers with a flag.")]
LimitOpt = Annotated[int, typer.Option(help="At most this many (0: all).", min=0)]

CSV_FIELDS = (
    "id", "at", "who", "audience", "as_of", "method", "status", "refused_by", "provider",
    "model", "question", "answer", "flags", "passage_ids", "prompt_hash", "cost_usd", "dropped",
)  # fmt: skip


def audit_query(
    audience: str, since: str | None, until: str | None, asked_by: str | None = None,
    flag: str | None = None, flagged: bool = False, limit: int = 0,
) -> AuditQuery:  # fmt: skip
    """The AuditQuery of the options, for the reader `audience` (a bad value: exit 2)."""
    from tether.app import as_of_value
    from tether.types import AuditQuery

    reader = cast("Audience", audience_value(audience))
    asker = cast("Audience", audience_value(asked_by)) if asked_by is not None else None
    with user_errors():
        dates = [as_of_value(d) for d in (since, until)]
    return AuditQuery(
        reader=reader, since=dates[0].isoformat() if dates[0] else None,
        until=dates[1].isoformat() if dates[1] else None, audience=asker,
        flag=flag, flagged_only=flagged, limit=limit,
    )  # fmt: skip


def _entries(
    index: Path | None, demo: bool, audience: str, since: str | None, until: str | None,
    asked_by: str | None, flag: str | None, flagged: bool, limit: int, store: str | None = None,
) -> list[AuditEntry]:  # fmt: skip
    """The entries the options select, for the reader `audience`."""
    query = audit_query(audience, since, until, asked_by, flag, flagged, limit)
    with user_errors():
        return open_workspace(index, demo, store).audit_entries(query)


@audit_app.callback()
def audit(
    ctx: typer.Context,
    audience: AudienceOpt = "public",
    since: SinceOpt = None,
    until: UntilOpt = None,
    asked_by: AskerOpt = None,
    flag: FlagOpt = None,
    flagged: FlaggedOpt = False,
    limit: LimitOpt = 50,
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    feedback: Annotated[
        bool,
        typer.Option(
            "--feedback",
            help="List the feedback on the answers instead (helpful or wrong, note, right"
            " passage), newest first; --since/--until date the feedback.",
        ),
    ] = False,
) -> None:
    """List the recorded answers: flagged first, then newest first (--feedback: the
    feedback given on them)."""
    if ctx.invoked_subcommand is not None:
        return
    query = audit_query(audience, since, until, asked_by, flag, flagged, limit)
    if feedback:
        list_feedback(index, demo, store, query, as_json)
        return
    with user_errors():
        ws = open_workspace(index, demo, store)
        entries = ws.audit_entries(query)
        hidden = staff_left_out(ws, query, feedback=False)
    if as_json:
        from tether.schemas import AuditRecord

        print_json([AuditRecord.from_entry(e) for e in entries])
        say_left_out(hidden, as_json)
        return
    listed = table(
        f"audit ({len(entries)} shown)", ("id", "at", "who", "audience", "status", "flags", "question")
    )
    for e in entries:
        question = dropped_words(e.dropped) if e.status == "dropped" else e.question
        listed.add_row(
            str(e.id or "-"), e.at, shown(e.who, one_line=True), e.audience, e.status,
            shown(", ".join(e.flags) or "—", one_line=True), shown(question, one_line=True),
        )  # fmt: skip
    out.print(listed)
    missing = sum(e.dropped for e in entries if e.status == "dropped")
    if missing:
        out.print(f"{dropped_words(missing)} in the entries shown", highlight=False)
    say_left_out(hidden, as_json)


def staff_left_out(ws: Workspace, query: AuditQuery, *, feedback: bool) -> int:
    """How many entries (`feedback`: pieces of feedback) the options select that a public
    reader is not shown because they were asked for staff; 0 for a staff reader, or when
    only public askers are asked for (--asked-by public)."""
    from dataclasses import replace

    if query.reader == "staff" or query.audience == "public":
        return 0
    staff = replace(query, reader="staff", audience="staff", limit=0)
    return len(ws.feedback_entries(staff) if feedback else ws.audit_entries(staff))


def say_left_out(count: int, as_json: bool, *, feedback: bool = False) -> None:
    """One line saying that `count` entries (`feedback`: pieces of feedback on entries) asked
    for staff were left out, and how to see them: after the table, or on stderr with --json."""
    if not count:
        return
    one = count == 1
    if feedback:
        things = f"{count} piece{'' if one else 's'} of feedback on answers asked"
    else:
        things = f"{count} answer{'' if one else 's'} asked"
    line = (
        f"{things} for staff {'is' if one else 'are'} not shown to a public reader: add"
        " --audience staff to see them"
    )
    (err if as_json else out).print(line, highlight=False, soft_wrap=True)


def list_feedback(
    index: Path | None, demo: bool, store: str | None, query: AuditQuery, as_json: bool
) -> None:
    """`tether audit --feedback`: the feedback `query` selects, as a table or JSON, and how
    many pieces of feedback on staff answers were left out for a public reader."""
    from tether.schemas import WireFeedback

    with user_errors():
        ws = open_workspace(index, demo, store)
        found = ws.feedback_entries(query)
        hidden = staff_left_out(ws, query, feedback=True)
    records = [WireFeedback.from_feedback(f) for f in found]
    if as_json:
        print_json(records)
        say_left_out(hidden, as_json, feedback=True)
        return
    listed = table(
        f"feedback ({len(records)} shown)",
        ("id", "entry", "at", "who", "verdict", "question", "note", "right passage"),
        overflow="fold",
    )
    for r in records:
        listed.add_row(
            str(r.id or "-"), str(r.audit_id or "-"), r.at, shown(r.who, one_line=True),
            r.verdict, shown(r.question, one_line=True), shown(r.note or "", one_line=True),
            shown(r.chunk_id or "", one_line=True),
        )  # fmt: skip
    out.print(listed)
    say_left_out(hidden, as_json, feedback=True)


def dropped_words(count: int) -> str:
    """What an entry of status "dropped" stands for, in words."""
    return (
        f"{count} anonymous answer{'s' * (count != 1)} not recorded (over tether serve's daily"
        " cap per client address)"
    )


@audit_app.command()
def show(
    entry_id: Annotated[int, typer.Argument(metavar="ID", help="The entry's id.")],
    audience: AudienceOpt = "public",
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """One recorded answer in full: who, when, filters, passages, prompt hash, model, the
    answer, each claim's checks, timings and cost."""
    from tether.schemas import AuditRecord

    reader = cast("Audience", audience_value(audience))
    with user_errors():
        record = AuditRecord.from_entry(open_workspace(index, demo, store).audit_entry(entry_id, reader))
    if as_json:
        print_json(record)
        return
    data = record.model_dump()
    for key in ("id", "at", "who", "audience", "as_of", "method", "status", "refused_by",
                "provider", "model", "prompt_hash", "cost_usd", "question", "answer",
                "dropped"):  # fmt: skip
        out.print(f"[bold]{key}[/bold]: {shown(data[key])}", highlight=False)
    out.print(f"[bold]passages[/bold]: {shown(', '.join(record.passage_ids) or 'none')}",
              highlight=False)  # fmt: skip
    for n, claim in enumerate(record.claims, 1):
        flags = ", ".join(claim.get("flags") or ()) or "ok"
        out.print(f"  claim {n}: {shown(claim.get('text', ''))} [{shown(flags)}]", highlight=False)
    timings = ", ".join(f"{k} {v:.3f}" for k, v in record.timings.items())
    out.print(f"[bold]timings (s)[/bold]: {timings or 'none'}", highlight=False)


@audit_app.command("export")
def export(
    fmt: Annotated[str, typer.Option("--format", help="jsonl or csv.")] = "jsonl",
    audience: AudienceOpt = "public",
    since: SinceOpt = None,
    until: UntilOpt = None,
    asked_by: AskerOpt = None,
    flag: FlagOpt = None,
    flagged: FlaggedOpt = False,
    index: IndexOpt = None,
    demo: DemoOpt = False,
    store: StoreOpt = None,
) -> None:
    """Every selected entry, as JSON Lines (one AuditRecord a line) or CSV, on stdout."""
    if fmt not in ("jsonl", "csv"):
        raise typer.BadParameter(f"{fmt!r} is not jsonl or csv", param_hint="--format")
    from tether.schemas import AuditRecord

    entries = _entries(index, demo, audience, since, until, asked_by, flag, flagged, 0, store)
    records = [AuditRecord.from_entry(e).model_dump(mode="json") for e in entries]
    if fmt == "jsonl":
        for r in records:
            typer.echo(json.dumps(r, ensure_ascii=False))
        return
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in records:  # every cell is what a caller may have typed: never a formula
        row = {**r, "flags": " ".join(r["flags"]), "passage_ids": " ".join(r["passage_ids"])}
        writer.writerow(
            {k: spreadsheet_safe(v) if isinstance(v, str) else v for k, v in row.items()}
        )
    typer.echo(buf.getvalue(), nl=False)
