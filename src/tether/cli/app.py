"""The `tether` Typer app and what its commands share: the consoles, the option types, user
errors as one line, finding and opening the index, the provider, progress bars and --json.

Start-up is kept short (`tether --help` and `tether version` import no engine module and no
numpy): everything heavy is imported inside the function that needs it.

What it cannot do: it defines no command (the command modules do; `tether.cli.main` registers
them in the order --help lists them) and holds no state but the two consoles.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.errors import TetherError

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console
    from rich.progress import Progress

    from tether.app import Workspace
    from tether.types import AskResult

app = typer.Typer(
    help="tether: answers from a document collection with claims an agent can check.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@contextmanager
def _variable(name: str, value: str) -> Iterator[None]:
    """`name=value` in os.environ while a command runs (restored after, for in-process use)."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@app.callback()
def global_options(
    ctx: typer.Context,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file",
            help="Read settings from this file (.env syntax) instead of"
            " ~/.config/tether/env. A .env in the current folder is never read.",
            envvar="TETHER_ENV_FILE",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Options for every command (given before the command's name)."""
    if env_file is not None:
        ctx.with_resource(_variable("TETHER_ENV_FILE", str(env_file)))


class LazyConsole:
    """A rich Console built on its first use, then kept by this object (importing rich's
    console costs start-up time that `tether --help` does not need). Piped output is not cut
    to 80 columns: tables keep their IDs and paths whole. Emoji codes are off: `:x:` in a
    document stays `:x:`."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            stream = sys.stderr if self._stderr else sys.stdout
            self._console = Console(
                stderr=self._stderr, width=None if stream.isatty() else 160, emoji=False
            )
        return getattr(self._console, name)


out: Any = LazyConsole()
err: Any = LazyConsole(stderr=True)

# What must not reach a terminal as it is: the C0 controls but newline and tab (ESC starts
# escape sequences), DEL and the C1 controls, and the bidirectional marks, overrides and
# isolates that reorder what a line shows. One-line fields (IDs, file names, error lines)
# escape newline, tab and the Unicode line separators too: they could forge a line.
_ACTIVE = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f{_ACTIVE}]")
_CONTROLS_AND_BREAKS = re.compile(f"[\x00-\x1f{_ACTIVE}\u2028\u2029]")
_JSON_ACTIVE = re.compile(f"[{_ACTIVE}\u2028\u2029]")  # json.dumps escapes C0 itself


def visible(value: object, *, one_line: bool = False) -> str:
    """`value` as text with each character that would act on the terminal written as its
    escape (ESC as `\\x1b`, U+202E as `\\u202e`); `one_line` escapes newlines and tabs too."""
    pattern = _CONTROLS_AND_BREAKS if one_line else _CONTROLS
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


# rich markup reads `[` + one of a-z # / @ + anything but `[` + `]` as a tag, a backslash pair
# before it as one backslash and an odd one out as "not a tag"; `\\[` elsewhere as `[`
_BRACKET = re.compile(r"(\\*)\[")
_TAG_BODY = re.compile(r"[a-z#/@][^\[]*?\]")
_TRAILING_BACKSLASHES = re.compile(r"(\\+)\Z")


def _bracket(match: re.Match[str]) -> str:
    backslashes = match.group(1)
    if _TAG_BODY.match(match.string, match.end()):
        backslashes *= 2  # before a tag, each literal backslash is written twice
    return backslashes + "\\["


def shown(value: object, *, one_line: bool = False) -> str:
    """External text (document text, titles, headings, IDs, file names, model output, a
    server's message) ready to sit in a rich markup template and print literally: control
    characters escaped visibly (`visible`), every `[` escaped, and backslashes at the end
    closed off so that they cannot escape the template's next tag. Every print of text tether
    did not write itself goes through this (the consoles print no emoji codes)."""
    text = _BRACKET.sub(_bracket, visible(value, one_line=one_line))
    return _TRAILING_BACKSLASHES.sub(lambda m: m.group(1) * 2 + "[none][/none]", text)


# Exit statuses, in this one place (a later scheme grows it here): 0 done (an answer, or an
# honest refusal by the gate or the model), 2 a bad option value (typer's own).
EXIT_USER_ERROR = 1  # a TetherError: a mistake the user can fix, said in one `error:` line
EXIT_NO_ANSWER = 3  # `ask`: no answer could be produced (the provider failed, or its output
#                     was unusable: cut at the token limit, not JSON, not the answer schema)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_HELP = (
    "Exit status: 0 answered, or refused by the support gate or the model; 1 a user error;"
    " 2 a bad option; 3 no answer could be produced (the provider failed or its output was"
    " unusable)."
)


def ask_exit_code(result: AskResult) -> int:
    """The exit status of `ask` for `result` (see EXIT_HELP); the same with --json."""
    if result.problem is not None and result.problem.kind != "refused":
        return EXIT_NO_ANSWER
    return 0


DEMO_INDEX = Path(".tether") / "demo.sqlite"

IndexOpt = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="The index file. Default: .tether/index.sqlite here (or in a parent folder).",
        envvar="TETHER_INDEX",
    ),
]
DemoOpt = Annotated[
    bool,
    typer.Option(
        "--demo",
        help="Use the bundled demo collection's index (.tether/demo.sqlite, built if missing).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
AsOfOpt = Annotated[
    str,
    typer.Option(
        "--as-of",
        help="Only versions in force on this date: YYYY-MM-DD, today, or none (all versions).",
    ),
]
AudienceOpt = Annotated[
    str,
    typer.Option(
        "--audience",
        help="public sees only public documents; staff sees all. Default public (fail-closed).",
    ),
]
ProviderOpt = Annotated[str | None, typer.Option(help="As for `ask`.")]
ModelOpt = Annotated[str | None, typer.Option(help="Model name for the provider.")]
QuestionsOpt = Annotated[
    Path | None,
    typer.Option("--questions", help="A question set (JSON Lines); default: the bundled one."),
]


def as_of_date(value: str) -> date | None:
    """--as-of: YYYY-MM-DD, today or none, by the API's own rule (`tether.app.as_of_value`);
    a bad value is a usage error, exit 2."""
    from tether.app import as_of_value

    try:
        return as_of_value(value)
    except TetherError as exc:
        raise typer.BadParameter(str(exc)) from None


def audience_value(value: str) -> str:
    """--audience: public or staff (else a usage error, exit 2)."""
    if value not in ("public", "staff"):
        raise typer.BadParameter(f"{value!r} is not public or staff")
    return value


def error_line(message: str) -> None:
    """Print one `error:` line on stderr."""
    err.print(f"[red]error:[/red] {shown(message, one_line=True)}", highlight=False, soft_wrap=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """A TetherError becomes one `error:` line and exit 1; Ctrl-C exits 130 quietly."""
    try:
        yield
    except TetherError as exc:
        error_line(str(exc))
        raise typer.Exit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def find_index(index: Path | None, demo: bool = False) -> Path:
    """--index (or TETHER_INDEX, from the environment or the settings file), else the demo
    index with --demo, else .tether/index.sqlite here or above."""
    from tether.app import DEFAULT_INDEX
    from tether.config import load_settings

    if index is None and not demo:
        index = load_settings().index
    if index is not None:
        return index
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


def open_workspace(index: Path | None, demo: bool = False) -> Workspace:
    """The Workspace over the index to read (the demo one is ingested first when missing)."""
    from tether.app import Workspace

    path = find_index(index, demo)
    if demo and not path.exists():
        from tether.cli.ingest import ingest_demo

        ingest_demo(path, quiet=False)
    return Workspace(index=path)


def progress(first: str, *, rate: bool = False, quiet: bool = False) -> Progress:
    """A transient progress bar on stderr (shown only on a terminal): `first` is the first
    column's template; `rate` adds a column for the task's `rate` field."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    extra = (TextColumn("{task.fields[rate]}"),) if rate else ()
    return Progress(
        TextColumn(first), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), *extra,
        console=err, transient=True, disable=quiet or not err.is_terminal,
    )  # fmt: skip


def table(title: str, columns: Sequence[str], **options: Any) -> Any:
    """A rich Table with these column headers (column options such as overflow apply to all)."""
    from rich.table import Table

    result = Table(title=title)
    for col in columns:
        result.add_column(col, **options)
    return result


def in_force(a: date | None, b: date | None) -> str:
    return f"{a.isoformat() if a else '…'} → {b.isoformat() if b else '…'}"


def print_json(data: BaseModel | Sequence[BaseModel]) -> None:
    """Print wire models (`tether.schemas`), one or a list, as indented JSON on stdout."""
    if isinstance(data, Sequence):
        plain: Any = [item.model_dump(mode="json") for item in data]
    else:
        plain = data.model_dump(mode="json")
    text = json.dumps(plain, ensure_ascii=False, indent=2)
    # C1 controls and bidi overrides can only sit inside JSON strings: \u escapes keep the value
    text = _JSON_ACTIVE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    sys.stdout.write(text + "\n")
