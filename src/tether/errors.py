"""Errors a user can act on, in one tree. Each says in one line what went wrong; anything
else is a bug and keeps its traceback.

    TetherError          a user error: bad input, a bad setting, a missing index  1  400
    ├── ParseError       a file that cannot be read as a document                 1  400
    ├── NotFoundError    an ID that names nothing (or nothing the asker may see)  1  404
    ├── ConflictError    the index's state: a concurrent writer, a version clash  1  409
    │   ├── OlderIndexError   an index of an older tether, opened to be read      1  409
    │   └── IndexLockedError  another process held the index's lock too long    1  409 *
    ├── LimitError       over one of tether's own limits (a text's length)        1  413
    │   └── DeadlineError     a request past its deadline                         1  504
    ├── UpstreamError    something tether relies on failed (a database, Ray)      1  502
    │   └── ProviderError     a model provider that failed after its retries      1  502
    └── UnavailableError the index file cannot be used: damaged, not an index,    1  503 *
        │                its disk failing, gone
        └── UnwritableError   it cannot be written: its disk full, read-only      1  503 *

Each class says once how every face reports it (class attributes, inherited unless a branch
sets its own): `exit_code` (the CLI's exit status), `http_status` (the server's status) and
`problem`/`title` (the problem type of the server's RFC 9457 body, `problem_type()`). The CLI
(`tether.cli.app.user_errors`), the server (`tether.server.http.problem_of`) and the MCP server
read them; none keeps a table of its own. `except TetherError` catches every branch.

`public` (*) is what a server tells its caller instead of the message, for the classes whose
message is about the server's own files and names them (the index's path): the caller gets
a fixed sentence, the message goes to the server's log. The CLI prints the message itself:
the user owns the file and needs its path.

A plain `TetherError` is the user-error branch: raise it for a mistake the user fixes (input,
settings, a missing index or extra), and a subclass when one applies. Every branch exits 1,
the CLI's "a user error, said in one `error:` line": 3 (no answer) belongs to `ask`'s own
result (`AskResult.status`, which a provider failure while answering becomes), and a
ProviderError that escapes a command (an embedder, a missing API key) has always exited 1.
"""

from __future__ import annotations

from typing import ClassVar

PROBLEM_TYPES = "tag:tether,2026:"  # a problem type is this followed by the class's `problem`


class TetherError(Exception):
    """A user-facing error, and the base of every other: bad input, a bad setting, a missing
    index, a refused option (what the user fixes). The CLI prints its message as one `error:`
    line and exits `exit_code`; the server answers `http_status` with a problem body of type
    `problem_type()`."""

    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 400
    problem: ClassVar[str] = "invalid-request"
    title: ClassVar[str] = "Invalid request"
    public: ClassVar[str | None] = None  # a server's detail instead of the message (None: it)

    @classmethod
    def problem_type(cls) -> str:
        """The problem type URI of this kind of error (the `type` of its problem body)."""
        return PROBLEM_TYPES + cls.problem


class ParseError(TetherError):
    """A file that cannot be read as a document; the message says why (a user error)."""


class NotFoundError(TetherError):
    """Something named by its ID that does not exist, or that the asker may not see: the two
    are worded alike, so the message never tells them apart (the server answers 404)."""

    http_status = 404
    problem = "not-found"
    title = "Not found"


class ConflictError(TetherError):
    """The request clashes with the index's state: another process is writing it (its lock
    was held too long), it was built with another chunker, embedder or schema, or the thing
    to create exists already (the server answers 409). Trying again later, or after the step
    the message names, can succeed."""

    http_status = 409
    problem = "conflict"
    title = "Conflict"


class OlderIndexError(ConflictError):
    """An index built by an older tether, opened to be read: one ingest upgrades it."""


class IndexLockedError(ConflictError):
    """Another process (an ingest) held the index file's lock past the bounded wait; trying
    again when it has finished succeeds. The message names the index's path, so a server
    answers 409 with `public` instead."""

    public = (
        "another ingest is writing this index and held its lock too long: try again when it"
        " has finished"
    )


class LimitError(TetherError):
    """Over one of tether's own limits: a question, search query or feedback note longer
    than its limit (the server answers 413). The message names the limit."""

    http_status = 413
    problem = "over-limit"
    title = "Over a limit"


class DeadlineError(LimitError):
    """Work stopped at a stage boundary because its request ran past its deadline (the server
    answers 504; nothing after that stage was done)."""

    http_status = 504
    problem = "deadline-exceeded"
    title = "Deadline exceeded"


class UpstreamError(TetherError):
    """Something tether relies on failed or cannot be reached: a database, a Ray cluster (the
    server answers 502). Nothing in the request was wrong; trying again later can succeed."""

    http_status = 502
    problem = "upstream-failed"
    title = "Upstream failure"


class ProviderError(UpstreamError):
    """A model provider that failed after its retries (auth, not found, timeout, overload).
    While `ask` answers it is the result's problem (status no_answer), not an error."""

    problem = "provider-failed"
    title = "Provider failure"


class UnavailableError(TetherError):
    """The index file cannot be used: it is damaged (truncated, overwritten), not a tether
    index, gone, on a disk that is failing, or left half-written where it cannot be undone
    (`UnwritableError`: it cannot be written). Nothing in the request was wrong: a server answers 503 with `public` (the message,
    which names the path and says what to do, goes to its log); the CLI prints the message."""

    http_status = 503
    problem = "index-unavailable"
    title = "Index unavailable"
    public = "the server cannot use its index (its log says why)"


class UnwritableError(UnavailableError):
    """The index file can be read but not written: its disk is full, or the file or its
    folder is read-only. A server answers the write (feedback) 503 with `public` and keeps
    serving reads; an answer whose audit record fails is served all the same
    (`tether.answering.audit.AuditWrites`)."""

    public = "the server cannot write to its index (its log says why)"
