"""`audit_entry`: what the audit keeps of one answered question (`tether.types.AuditEntry`,
written by a `tether.protocols.AuditLog`), built from its `AskResult`; the rules for the
feedback on one (`check_verdict`, `feedback_note`: helpful or wrong, a note of at most
MAX_NOTE_CHARS characters without control characters); and `AuditWrites`, how the audit's
writes are going.

An answer whose audit record cannot be written (the disk is full, the file read-only, an
ingest holds the lock past the wait) is served all the same: a help desk keeps answering, and
the failure is reported instead. `AuditWrites` counts the records not written and when the
last one failed (a server shows them in /readyz and /metrics, `tether.server.watch`), and
says so once an episode: at the first failure after a write that succeeded (or the start),
and again when a write succeeds, with how many were lost meanwhile, never once a request.

It keeps the question, the filters, the method, the IDs of the passages given to the model
(not their text), the request's hash (the exact key a recording of it would have, so the
same prompt can be found again), provider and model, the answer with each claim's checks,
timings and cost.

What it cannot do: it writes nothing (the Workspace records the entry); an answer refused
before the model has no prompt hash and no model; `AuditWrites` cannot fail an answer
closed (the answer is already made when its record fails); its counts are one process's.
"""

from __future__ import annotations

import getpass
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from tether.errors import LimitError, TetherError
from tether.providers.replay import request_key
from tether.types import AskResult, AuditEntry, FeedbackVerdict
from tether.verify.flags import WITHHELD_FOR_PUBLIC, flag_kind


def audit_entry(result: AskResult, who: str, at: float | None = None) -> AuditEntry:
    """The audit entry of `result`, asked by `who` (a key name, an OS user) at `at` (epoch
    seconds; now when None)."""
    comp = result.completion
    answer = result.answer
    claims = tuple(
        {
            "text": ch.claim.text,
            "chunk_ids": list(ch.claim.chunk_ids),
            "flags": [str(f) for f in ch.flags],
            "entailment": ch.entailment,
            "removed": ch.removed,
            "withheld": ch.withheld,
        }
        for ch in result.checks
    )
    if answer is not None and not result.checks:  # not verified: the claims without checks
        claims = tuple(
            {"text": c.text, "chunk_ids": list(c.chunk_ids), "flags": []} for c in answer.claims
        )
    return AuditEntry(
        at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
        who=who,
        audience=result.audience,
        question=result.question,
        status=result.status,
        as_of=result.as_of.isoformat() if result.as_of else None,
        method=result.method,
        refused_by=result.refused_by,
        passage_ids=tuple(result.context.chunk_ids) if result.context else (),
        prompt_hash=request_key(result.request) if result.request is not None else "",
        provider=result.provider,
        model=comp.model if comp else "",
        answer=answer.answer if answer is not None else "",
        claims=claims,
        timings={k: round(v, 4) for k, v in result.timings.items()},
        cost_usd=comp.cost_usd if comp else 0.0,
    )


def public_entry(entry: AuditEntry) -> AuditEntry:
    """`entry` as a public reader of the audit may see it: no id or asker, and each claim that
    was withheld from the public (recorded as such, or, in an entry written before that was
    recorded, carrying a flag of `WITHHELD_FOR_PUBLIC`) without its text, citations or flag
    arguments, as `/v1/ask` gives it to a public caller."""
    claims = []
    for c in entry.claims:
        kinds = sorted({flag_kind(str(f)) for f in c.get("flags", ())})
        if c.get("withheld") or set(kinds) & WITHHELD_FOR_PUBLIC:
            c = {
                "text": "",
                "chunk_ids": [],
                "flags": kinds,
                "entailment": None,
                "removed": bool(c.get("removed")),
                "withheld": True,
            }
        claims.append(c)
    return replace(entry, id=None, who="", claims=tuple(claims))


def os_user() -> str:
    """Who asks when no key name is given: the OS user, else "unknown"."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


MAX_NOTE_CHARS = 2000  # a feedback note's length limit, in characters
VERDICTS = ("helpful", "wrong")
_ALLOWED_CONTROLS = frozenset("\n\t")
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check_verdict(verdict: str) -> FeedbackVerdict:
    """`verdict` when it is helpful or wrong, else a TetherError."""
    if verdict not in VERDICTS:
        raise TetherError(f"verdict {verdict!r} is not helpful or wrong")
    return cast("FeedbackVerdict", verdict)


def feedback_note(note: str | None) -> str | None:
    """A feedback note as it is stored: without surrounding spaces, None when empty. A
    TetherError when it is over MAX_NOTE_CHARS characters or holds a control character (a
    line break and a tab aside) or a bidirectional override, which could make a listing
    read other than it is."""
    text = (note or "").strip()
    if not text:
        return None
    if len(text) > MAX_NOTE_CHARS:
        raise LimitError(
            f"the note is {len(text):,} characters long; the limit is {MAX_NOTE_CHARS:,}"
        )
    bad = next((ch for ch in text if _control(ch)), None)
    if bad is not None:
        raise TetherError(f"the note holds a control character (U+{ord(bad):04X}); remove it")
    return text


def _control(ch: str) -> bool:
    if ch in _ALLOWED_CONTROLS:
        return False
    return unicodedata.category(ch) == "Cc" or ch in _BIDI_CONTROLS


@dataclass(frozen=True)
class AuditState:
    """How the audit's writes are going: `failures`, records not written so far; `failing`,
    whether the last write failed; `last_failure`, when the last failure was (Unix time, None
    before any)."""

    failures: int = 0
    failing: bool = False
    last_failure: float | None = None


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr)


class AuditWrites:
    """The audit's writes of one Workspace, or of every Workspace of a server (see the module
    docstring): `failed(message)` counts a record not written and says `message` (through
    `say`; stderr as a `warning:` line by default) when it starts an episode of failures;
    `written()` ends one (saying how many records were lost); `state()`. Thread-safe."""

    def __init__(self, say: Callable[[str], None] = _warn) -> None:
        self._say = say
        self._lock = threading.Lock()
        self._failures = 0
        self._lost = 0  # in this episode
        self._last: float | None = None

    def failed(self, message: str) -> None:
        with self._lock:
            first = self._lost == 0
            self._failures += 1
            self._lost += 1
            self._last = time.time()
        if first:
            self._say(message)

    def written(self) -> None:
        with self._lock:
            lost, self._lost = self._lost, 0
        if lost:
            self._say(f"the audit is written again ({lost} records were not written before)")

    def state(self) -> AuditState:
        with self._lock:
            return AuditState(self._failures, self._lost > 0, self._last)
