"""Errors a user can act on. The CLI prints their message in one line and exits non-zero;
anything else is a bug and keeps its traceback."""


class TetherError(Exception):
    """A user-facing error: bad input, a missing index, an unknown ID, a refused setting."""


class ParseError(TetherError):
    """A file that cannot be read as a document; the message says why."""


class ProviderError(TetherError):
    """A model provider that failed after its retries (auth, not found, timeout, overload)."""


class OlderIndexError(TetherError):
    """An index built by an older tether, opened to be read: one ingest upgrades it."""


class DeadlineError(TetherError):
    """Work stopped at a stage boundary because its request ran past its deadline (the server
    answers 504; nothing after that stage was done)."""


class NotFoundError(TetherError):
    """Something named by its ID that does not exist, or that the asker may not see: the two
    are worded alike, so the message never tells them apart (the server answers 404)."""
