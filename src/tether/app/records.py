"""What a Workspace records and reads back: its audit (`AuditLogs`, the bodies of
`Workspace.record`, `.record_dropped`, `.audit_entries`, `.audit_entry`), the feedback on
it (`.feedback`, `.feedback_entries`, `.feedback_questions`) and the health report built
from both (`.health`).

What it cannot do: a failed audit write is reported and never raised (the answer stands),
so an entry can be missing; a public reader sees no ids or names, and a public asker's
feedback reaches only its own public entries. The health report is for staff only: it quotes
staff documents, and no face may show it to a public reader.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from tether.answering.gate import floors_for, gate
from tether.app.asking import SearchOptions
from tether.app.locate import AsOf, as_of_value, check_audience, today
from tether.errors import NotFoundError, TetherError
from tether.evaluation.feedback import feedback_questions as questions_of
from tether.stores import open_audit_log
from tether.types import Audience, AuditEntry, AuditQuery, Feedback, Filters

if TYPE_CHECKING:
    from tether.app.workspace import Workspace
    from tether.protocols import AuditLog
    from tether.types import AskResult, HealthReport, Question


class AuditLogs:
    """The audit of one index, opened on first use on its own connection: one for reading,
    one for writing (a reader never records)."""

    def __init__(self, location: Path | str) -> None:
        self.location = location
        self._logs: dict[bool, AuditLog] = {}  # by writable

    def open(self, writable: bool) -> AuditLog:
        """The audit opened for writing or for reading, opened on first use."""
        if writable not in self._logs:
            self._logs[writable] = open_audit_log(self.location, writable=writable)
        return self._logs[writable]

    def forget_writer(self) -> None:
        """Close the audit opened for writing after a failed write (a lost connection, a
        lock), so the next record opens it anew instead of failing on it again."""
        log = self._logs.pop(True, None)
        if log is not None:
            with contextlib.suppress(Exception):  # closing a dead connection may raise
                log.close()

    def close(self) -> None:
        """Close both (a later use opens them again)."""
        while self._logs:
            self._logs.popitem()[1].close()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def audit_reader(ws: Workspace) -> AuditLog:
    """The audit for reading, after the index's own checks (it exists, its schema is read)."""
    ws.store  # noqa: B018
    return ws._audits.open(False)


def record(ws: Workspace, result: AskResult, who: str | None) -> int | None:
    """Write `result` to the index's audit (`tether.answering.audit`), applying the
    retention setting; a failure (an ingest holding the lock, a read-only file) is
    reported (`audit_writes`: once an episode) and never raised: the answer stands. The
    entry's id, or None."""
    from tether.answering.audit import audit_entry, os_user

    try:
        days = ws.settings.audit_retention_days or None
        entry_id = ws._audits.open(True).record(audit_entry(result, who or os_user()), days)
    except (TetherError, OSError) as exc:
        ws._audits.forget_writer()
        ws.audit_writes.failed(f"the answer was not recorded in the audit: {exc}")
        return None
    ws.audit_writes.written()
    return entry_id


def record_dropped(ws: Workspace, count: int, who: str) -> int | None:
    """Record that `count` public answers asked by `who` were not recorded (a server's daily
    cap on anonymous answers, `tether.server.limits.AuditQuota`): one small entry of status
    "dropped", so the audit says how many are missing. Like `record`: nothing when the
    setting TETHER_AUDIT is off, a failure reported as `record` reports it, never raised."""
    if count <= 0 or not ws.settings.audit:
        return None
    entry = AuditEntry(_now(), who, "public", "", "dropped", dropped=count)
    try:
        days = ws.settings.audit_retention_days or None
        entry_id = ws._audits.open(True).record(entry, days)
    except (TetherError, OSError) as exc:
        ws._audits.forget_writer()
        ws.audit_writes.failed(f"{count} dropped answers were not noted in the audit: {exc}")
        return None
    ws.audit_writes.written()
    return entry_id


def audit_entries(ws: Workspace, query: AuditQuery) -> list[AuditEntry]:
    """The entries `query` selects, as its reader may see them: a public reader gets public
    entries without id or asker (ids count staff entries too; a staff key may ask for the
    public view), so neither a gap nor a name gives staff away, and without the text of
    the claims withheld from the public (`tether.answering.audit.public_entry`)."""
    from tether.answering.audit import public_entry

    found = audit_reader(ws).entries(query)
    return found if query.reader == "staff" else [public_entry(e) for e in found]


def audit_entry(ws: Workspace, entry_id: int, reader: Audience) -> AuditEntry:
    """`Workspace.audit_entry`: staff readers only."""
    if check_audience(reader) != "staff":
        raise TetherError("`tether audit show` is for staff readers (--audience staff)")
    found = audit_reader(ws).entry(entry_id, check_audience(reader))
    if found is None:
        raise NotFoundError(f"no audit entry {entry_id} (see `tether audit`)")
    return found


def feedback(
    ws: Workspace,
    entry_id: int,
    verdict: str,
    note: str | None,
    chunk_id: str | None,
    who: str | None,
    audience: Audience,
) -> Feedback:
    """Record `who`'s verdict (helpful or wrong) on the audit entry `entry_id`, with an
    optional `note` (at most 2,000 characters, no control characters) and the chunk ID of
    the passage that does answer (`chunk_id`); a second verdict from `who` on the same
    entry replaces the first. The stored record.

    `who` is the asker's name (a key name; the OS user when None) and `audience` its
    audience: a public asker may give feedback only on a public entry asked under its own
    name, a staff one on any entry. An entry it may not give feedback on (another's, a
    staff one, a "dropped" count) is a NotFoundError worded exactly as for an unknown id,
    and so is a passage its audience may not see: neither tells that a staff one exists.
    A passage the entry's own audience may not see, or one not in force on the entry's
    date, is a TetherError (the question it makes could never find it). Askers that
    share a name (every anonymous caller of a server is "anonymous") share their
    entries."""
    from tether.answering.audit import check_verdict, feedback_note, os_user

    asker = who or os_user()
    reader = check_audience(audience)
    kind = check_verdict(verdict)
    text = feedback_note(note)
    ws.store  # noqa: B018 (the index's own checks: it exists, its schema is read)
    log = ws._audits.open(True)
    known = isinstance(entry_id, int) and 0 < entry_id < 2**63  # what a log can hold
    entry = log.entry(entry_id, reader) if known else None
    if entry is None or entry.status == "dropped" or (reader != "staff" and entry.who != asker):
        raise NotFoundError(f"no audit entry {entry_id}")
    passage = None
    if chunk_id is not None and chunk_id.strip():
        passage = right_passage(ws, chunk_id.strip(), reader, entry)
    return log.add_feedback(Feedback(entry_id, _now(), asker, kind, text, passage))


def right_passage(ws: Workspace, chunk_id: str, reader: Audience, entry: AuditEntry) -> str:
    """`chunk_id` when `reader` may see it and it can answer `entry`'s question (its
    audience may see it, it is in force on its date); else a NotFoundError (unseen, worded
    as unknown) or a TetherError saying why not."""
    chunk = ws.read(chunk_id, reader)
    if chunk is None:
        raise NotFoundError(f"no chunk with chunk_id {chunk_id!r}")
    if not Filters(audience=entry.audience).allows(chunk.meta):
        raise TetherError(
            f"the passage {chunk_id} is a staff passage; audit entry {entry.id} was asked"
            " for the public audience, which cannot see it"
        )
    when = as_of_value(entry.as_of)
    if not chunk.meta.in_force(when):
        raise TetherError(
            f"the passage {chunk_id} ({chunk.doc_id} version {chunk.version}) is not in"
            f" force on {entry.as_of}, the date audit entry {entry.id} was asked for"
        )
    return chunk.chunk_id


def feedback_entries(ws: Workspace, query: AuditQuery) -> list[Feedback]:
    """The feedback on the entries `query` selects, as its reader may see them
    (`Workspace.feedback_entries`, whose docstring says the rest)."""
    found = audit_reader(ws).feedback(query)
    if query.reader == "staff":
        return found
    return [
        replace(
            f,
            id=None,
            entry_id=0,
            who="",
            entry=replace(f.entry, id=None, who="") if f.entry else None,
        )
        for f in found
    ]


def feedback_questions(ws: Workspace, query: AuditQuery) -> tuple[list[Question], list[str]]:
    """A question set made from the feedback `query` selects
    (`tether.evaluation.feedback.feedback_questions`): one question per entry, and notes
    on what could not be used as given (a right passage no longer in the index). A public
    reader sees no entry ids: its questions are numbered FBP1, FBP2, ... instead of
    FB<entry id>."""
    found = audit_reader(ws).feedback(query)
    read = lambda chunk_id: ws.read(chunk_id, query.reader)  # noqa: E731
    return questions_of(found, read, ids=query.reader == "staff")


def health(
    ws: Workspace,
    as_of: AsOf,
    since: str | None,
    contradictions: bool,
    progress: Callable[[str], None] | None,
) -> HealthReport:
    """The collection's health on `as_of` (`tether.health.report`) for the people who own
    its documents: content gaps from the audit entries and feedback since `since` (an ISO
    date; None: all), contradictions (unless `contradictions` is False), staleness and
    hygiene. Staff only: the report quotes staff documents and recorded questions, so a
    face must never show it to a public reader. `progress` hears each part's name."""
    from tether.health.report import build_report

    when = as_of_value(as_of) or today()
    query = AuditQuery(reader="staff", since=since, limit=0)
    log = audit_reader(ws)
    entries = [e for e in log.entries(query) if e.status != "dropped"]
    given = log.feedback(query)
    wrong = [f.entry for f in given if f.verdict == "wrong" and f.entry is not None]
    embedder = ws.query_embedder()
    options = SearchOptions(k=2, as_of=when, audience="staff")
    finder = None
    if contradictions:
        from tether.health.contradictions import find_contradictions

        # the rules decide: the reader's conflict head, measured on the nine labelled
        # health sets, does not separate contradictions from the other candidate pairs
        # (bench/results/reader.md), so it is not asked here
        finder = lambda: find_contradictions(ws.store, when, embedder=embedder)  # noqa: E731
    return build_report(
        ws.store,
        when,
        collection=str(getattr(ws.store, "location", ws.location)),
        entries=entries,
        wrong=wrong,
        helpful=sum(f.verdict == "helpful" for f in given),
        embed=embedder.embed_queries if embedder is not None else None,
        search=lambda q: ws.search(q, options),
        contradictions=finder,
        answered_now=answered_now(ws, when),
        progress=progress,
    )


def answered_now(ws: Workspace, when: date) -> Callable[[str], bool] | None:
    """Whether a question would be answered on `when` (staff view): the gate passes on
    its reranked passages and the answerability judge gives at least
    `tether.health.report.ANSWERED_NOW`; None without vectors (no rerank to judge)."""
    from tether.answering.answerable import AnswerabilityJudge
    from tether.answering.pipeline import judge_answerability
    from tether.health.report import ANSWERED_NOW

    retriever = ws.retriever()
    if retriever.embedder is None:
        return None
    filters = Filters(as_of=when, audience="staff")
    floor = floors_for(ws.store, ws.profile.gate_floors, "staff").get("rerank", 0.0)
    judge = AnswerabilityJudge()

    def answered(question: str) -> bool:
        hits = retriever.search(question, 5, filters, method="rerank")
        if not hits or not gate(hits, floor).passed:
            return False
        verdict = judge_answerability(judge, question, hits, ws.store, filters, retriever)
        return verdict.probability >= ANSWERED_NOW

    return answered
