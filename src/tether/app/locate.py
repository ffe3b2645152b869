"""Where a Workspace's index is and the plain values every face reads the same way: the index
file to open (`locate_index`, `index_found`), the date "today" means (`today`), an as-of
date (`as_of_value`) and an audience (`check_audience`).

What it cannot do: it opens nothing; it does not check that a named index file exists (the
store's opening does), and it knows two audiences only, public and staff.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from tether.config import Settings, load_settings
from tether.errors import TetherError
from tether.places import DEFAULT_INDEX, DEMO_INDEX
from tether.types import Audience

AsOf = date | str | None
"""A date for the filters: a `date`, "YYYY-MM-DD", "today", or None / "none" (all versions)."""


def as_of_value(value: AsOf) -> date | None:
    """The one rule for an as-of date, shared by the CLI's `--as-of` and the Python API: a
    `date` stays; "today" is today's date; None or "none" keeps every version; an ISO
    "YYYY-MM-DD" string is that date; anything else is a TetherError."""
    if value is None or isinstance(value, date):
        return value
    text = str(value).strip().lower()
    if text == "none":
        return None
    if text == "today":
        return today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise TetherError(f"{value!r} is not a date: use YYYY-MM-DD, today or none") from None


def today() -> date:
    """The date "today" means to every face (the CLI, the HTTP API, MCP, the Python API):
    this machine's local date. The one place it is read."""
    return date.today()


def locate_index(
    index: Path | str | None = None, *, demo: bool = False, settings: Settings | None = None
) -> Path:
    """The index file to read: `index`, else the Settings' (TETHER_INDEX, from the
    environment or the settings file), else the demo's with `demo`, else
    .tether/index.sqlite here or in a parent folder; none found is a TetherError that says
    how to make one."""
    if index is None and not demo:
        index = (settings if settings is not None else load_settings()).index
    if index is not None:
        return Path(index)
    if demo:
        return DEMO_INDEX
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / DEFAULT_INDEX
        if candidate.exists():
            return candidate
    raise TetherError(
        "no index found here or in a parent folder: run `tether ingest FOLDER` first,"
        " pass --index FILE, or use --demo"
    )


def index_found(settings: Settings | None = None) -> bool:
    """Whether an index of the user's own is named (TETHER_INDEX, TETHER_STORE) or found here
    or in a parent folder: what `locate_index` would find without --index or --demo."""
    chosen = settings if settings is not None else load_settings()
    if chosen.store:
        return True
    try:
        locate_index(settings=chosen)
    except TetherError:
        return False
    return True


def check_audience(audience: str) -> Audience:
    """`audience` when it is public or staff, else a TetherError (never read as staff)."""
    if audience not in ("public", "staff"):
        raise TetherError(f"audience {audience!r} is not public or staff")
    return audience  # type: ignore[return-value]
