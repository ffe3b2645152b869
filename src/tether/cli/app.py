"""The `tether` Typer app and what its commands share: the consoles, the option types and
the checks their values get as they are parsed, user and usage errors as one line, finding and opening the index, the provider, progress bars and --json.

Start-up is kept short (`tether --help` and `tether version` import no engine module and no
numpy): everything heavy is imported inside the function that needs it.

What it cannot do: it defines no command (the command modules do; `tether.cli.main` registers
them in the order --help lists them) and holds no state but the two consoles (and, while it
parses, the command line, to name a flag as it was typed).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from tether.catalog import AUDIENCES, one_of
from tether.errors import TetherError

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console
    from rich.progress import Progress

    from tether.app import Workspace
    from tether.types import AskResult, SyncReport
    from tether.types import Progress as IngestProgress


class TetherGroup(TyperGroup):
    """The app's command group: a usage error anywhere below it (a bad option value, a
    missing argument, an unknown option or command) prints one `error:` line naming the flag
    as typed (`tether.cli.usage`) and exits 2, instead of typer's boxed panel."""

    _argv: tuple[str, ...] = ()

    def main(self, args: Sequence[str] | None = None, *rest: Any, **options: Any) -> Any:
        self._argv = tuple(sys.argv[1:] if args is None else args)
        return super().main(args, *rest, **options)

    def make_context(self, *args: Any, **options: Any) -> Any:
        with self._one_line():
            return super().make_context(*args, **options)

    def invoke(self, ctx: Any) -> Any:
        with self._one_line():
            return super().invoke(ctx)

    @contextmanager
    def _one_line(self) -> Iterator[None]:
        from tether.cli.usage import NoArgsIsHelpError, UsageError, usage_message

        try:
            yield
        except UsageError as exc:
            if NoArgsIsHelpError is not None and isinstance(exc, NoArgsIsHelpError):
                raise  # the command's help, as typer prints it
            error_line(usage_message(exc, self._argv))
            raise typer.Exit(getattr(exc, "exit_code", EXIT_USAGE)) from None


app = typer.Typer(
    cls=TetherGroup,
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


def _print_version(value: bool) -> None:
    if value:
        from tether._version import __version__

        typer.echo(f"tether {__version__}")
        raise typer.Exit()


@dataclass(frozen=True)
class Verbosity:
    """How much a command says besides its result: `quiet` (no spinner or progress bars;
    ingest prints only problems), `verbose` (ask's timings, ingest's unchanged files)."""

    quiet: bool = False
    verbose: bool = False


def verbosity() -> Verbosity:
    """The --quiet/--verbose of the command running now: the global options set
    TETHER_QUIET/TETHER_VERBOSE while it runs (typer keeps its click context private)."""
    return Verbosity(
        quiet=os.environ.get("TETHER_QUIET") == "1", verbose=os.environ.get("TETHER_VERBOSE") == "1"
    )


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
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No spinner or progress bars; ingest prints only problems."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Say more: ask's timings, ingest's unchanged files."),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Options for every command (given before the command's name)."""
    if quiet and verbose:
        raise typer.BadParameter("--quiet and --verbose exclude each other")
    for name, on in (("TETHER_QUIET", quiet), ("TETHER_VERBOSE", verbose)):
        ctx.with_resource(_variable(name, "1" if on else "0"))
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

    def console(self) -> Console:
        """The rich Console itself (built now if it was not yet)."""
        if self._console is None:
            from rich.console import Console

            stream = sys.stderr if self._stderr else sys.stdout
            self._console = Console(
                stderr=self._stderr, width=None if stream.isatty() else 160, emoji=False
            )
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console(), name)


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


# Exit statuses, in this one place (`ask --help`, the app's epilog and the README print
# EXIT_TABLE). `ask`'s status (AskResult.status, the `status` of --json) decides among
# 0, 3, 4 and 5; the other commands exit 0, 1, 2 or 130.
EXIT_ANSWERED = 0  # an answer whose claims shown all passed their checks (a public reader is
#                   not shown a claim the checks withhold; other commands: done)
EXIT_USER_ERROR = 1  # a TetherError (every class's `exit_code`), said in one `error:` line
EXIT_USAGE = 2  # a bad option or argument: one `error:` line naming the flag (tether.cli.usage)
EXIT_NO_ANSWER = 3  # `ask`: no answer could be produced (the provider failed, or its output
#                     was unusable: cut at the token limit, not JSON, not the answer schema,
#                     too long to check)
EXIT_FLAGGED = 4  # `ask`: an answer, with a claim that failed a check (read its flags)
EXIT_REFUSED = (
    5  # `ask`: a refusal, by the support gate (the audience filter included) or the model
)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_CODES: dict[str, int] = {
    "answered": EXIT_ANSWERED,
    "no_answer": EXIT_NO_ANSWER,
    "flagged": EXIT_FLAGGED,
    "refused": EXIT_REFUSED,
}
EXIT_TABLE = (
    f"Exit status: {EXIT_ANSWERED} answered, every claim shown checked ok (a claim withheld"
    " from a public reader is not shown);"
    f" {EXIT_USER_ERROR} a user error (one `error:` line);"
    f" {EXIT_USAGE} a bad option or argument;"
    f" {EXIT_NO_ANSWER} no answer could be produced (the provider failed or its output was"
    " unusable);"
    f" {EXIT_FLAGGED} answered with flagged claims shown;"
    f" {EXIT_REFUSED} refused (by the support gate, the model, --strict"
    " removing every claim, or the verifier withholding every claim from a public reader);"
    f" {EXIT_INTERRUPTED} interrupted."
)
EXIT_HELP = EXIT_TABLE
app.info.epilog = EXIT_TABLE


def ask_exit_code(result: AskResult) -> int:
    """The exit status of `ask` for `result` (see EXIT_TABLE); the same with --json."""
    return EXIT_CODES[result.status]


def as_of_date(value: str) -> date | None:
    """--as-of: YYYY-MM-DD, today or none, by the API's own rule (`tether.app.as_of_value`);
    a bad value is a usage error, exit 2."""
    from tether.app import as_of_value

    try:
        return as_of_value(value)
    except TetherError as exc:
        raise typer.BadParameter(str(exc)) from None


def audience_value(value: str) -> str:
    """--audience: one of `tether.options.AUDIENCES` (else a usage error, exit 2)."""
    if value not in AUDIENCES:
        raise typer.BadParameter(f"{value!r} is not {one_of(AUDIENCES)}")
    return value


def as_of_option(value: str | None) -> str | None:
    """--as-of (and audit's --since and --until) checked as the option is parsed, so that a bad
    date is a usage error naming the flag (exit 2); the command reads the text itself."""
    if value is not None:
        as_of_date(value)
    return value


def audience_option(value: str | None) -> str | None:
    """--audience (or --asked-by) checked as the option is parsed: a usage error naming the
    flag, or the variable when the value came from one (TETHER_MCP_AUDIENCE)."""
    return None if value is None else audience_value(value)


def method_option(value: str) -> str:
    """--method: auto or a retrieval method, by the retriever's own rule
    (`tether.retrieval.retriever.check_method`); else a usage error naming the flag."""
    from tether.retrieval.retriever import check_method

    try:
        return check_method(value)
    except TetherError as exc:
        raise typer.BadParameter(str(exc)) from None


def provider_option(value: str | None) -> str | None:
    """--provider: a provider's name (`recorded` included: the bundled recordings) or auto,
    by the settings' own rule (`tether.config.check_provider`); else a usage error naming the
    flag. The command passes the text on as it was given."""
    if value is not None:
        from tether.config import check_provider

        try:
            check_provider(value)
        except TetherError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


IndexOpt = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="The index file. Default: .tether/index.sqlite here (or in a parent folder).",
        envvar="TETHER_INDEX",
    ),
]


def store_value(value: str | None) -> str | None:
    """--store: a postgresql:// URL (else a usage error, exit 2)."""
    if value is not None and not value.lower().startswith(("postgresql://", "postgres://")):
        raise typer.BadParameter("not a postgresql:// URL (postgresql://user@host/db)")
    return value


StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="A PostgreSQL store instead of the index file:"
        " postgresql://user@host/db?collection=NAME (also TETHER_STORE; wins over --index).",
        callback=store_value,
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
        callback=as_of_option,
    ),
]
AudienceOpt = Annotated[
    str,
    typer.Option(
        "--audience",
        help="public sees only public documents; staff sees all. Default public (fail-closed).",
        callback=audience_option,
    ),
]
ProviderOpt = Annotated[str | None, typer.Option(help="As for `ask`.", callback=provider_option)]
ModelOpt = Annotated[str | None, typer.Option(help="Model name for the provider.")]
QuestionsOpt = Annotated[
    Path | None,
    typer.Option("--questions", help="A question set (JSON Lines); default: the bundled one."),
]


def error_line(message: str) -> None:
    """Print one `error:` line on stderr."""
    err.print(f"[red]error:[/red] {shown(message, one_line=True)}", highlight=False, soft_wrap=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """A TetherError becomes one `error:` line and its class's exit status (`exit_code`: 1,
    a user error, for every branch of `tether.errors`); Ctrl-C exits 130 quietly."""
    try:
        yield
    except TetherError as exc:
        error_line(str(exc))
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def open_workspace(
    index: Path | None,
    demo: bool = False,
    store: str | None = None,
    *,
    provider: str | None = None,
    model: str | None = None,
) -> Workspace:
    """`Workspace.open` as the CLI's commands call it: --index, --demo, --store (else
    TETHER_STORE), --provider and --model; a demo ingest on the way shows its progress and
    says where the demo went."""
    from tether.app import Workspace

    with ingest_progress() as step:
        return Workspace.open(
            index,
            store=store,
            demo=demo,
            provider=provider,
            model=model,
            progress=step,
            on_demo=announce_demo,
        )


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
        TextColumn(first),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        *extra,
        console=err.console(),
        transient=True,
        disable=quiet or verbosity().quiet or not err.is_terminal,
    )


class PhaseLog:
    """Progress as log lines, for output that is not a terminal (a CI log, a file): a line
    when a phase starts, then at most one every `every` seconds with the count, the rate and
    the time left, and one when it ends."""

    def __init__(self, labels: Mapping[str, str], every: float = 5.0) -> None:
        self.labels = labels
        self.every = every
        self.phases: dict[str, list[float]] = {}  # phase -> [started, last printed, ended]

    def step(self, phase: str, done: int, total: int) -> None:
        import time

        if phase.endswith(":tokens"):
            return
        now = time.monotonic()
        state = self.phases.get(phase)
        label = self.labels.get(phase, phase)
        if state is None:
            self.phases[phase] = state = [now, now, 0.0]
            self._print(f"{label}: {done:,} of {total:,}")
            if not (total and done >= total):
                return
        if state[2]:
            return
        finished = bool(total) and done >= total
        if not finished and now - state[1] < self.every:
            return
        state[1] = now
        elapsed = now - state[0]
        rate = done / elapsed if elapsed > 0 else 0.0
        left = f", about {(total - done) / rate:,.0f} s left" if rate > 0 and not finished else ""
        ended = " (done)" if finished else ""
        self._print(
            f"{label}: {done:,} of {total:,} in {elapsed:,.1f} s ({rate:,.1f}/s{left}){ended}"
        )
        if finished:
            state[2] = 1.0

    @staticmethod
    def _print(line: str) -> None:
        print(line, file=sys.stderr, flush=True)


def phase_log(labels: Mapping[str, str]) -> PhaseLog | None:
    """A PhaseLog when stderr is not a terminal and output is not --quiet, else None (the
    progress bar serves a terminal)."""
    return None if verbosity().quiet or err.is_terminal else PhaseLog(labels)


PHASE_LABELS = {
    "fetch": "Fetching pages",  # a website's crawl (`tether ingest URL`)
    "read": "Reading files",
    "embed": "Embedding chunks",
    "embed sentences": "Embedding sentences",
    "write": "Writing index",
    "calibrate": "Calibrating",  # the fusion weight and the gate's floors, on the index itself
}


@contextmanager
def ingest_progress() -> Iterator[IngestProgress]:
    """An ingest's progress callback: a bar per phase on a terminal, a log line per phase
    (and every few seconds) elsewhere; nothing shows until the first phase starts."""
    log = phase_log(PHASE_LABELS)
    with progress("{task.description:<17}", rate=True) as bar:
        tasks: dict[str, Any] = {}

        def step(phase: str, done: int, total: int) -> None:
            if log is not None:
                log.step(phase, done, total)
            if phase == "embed:tokens":  # tokens embedded so far: show the rate
                task = bar.tasks[tasks["embed"]] if "embed" in tasks else None
                if task is not None and task.elapsed:
                    bar.update(task.id, rate=f"{done / task.elapsed:,.0f} tokens/s")
                return
            if phase not in tasks:
                tasks[phase] = bar.add_task(PHASE_LABELS.get(phase, phase), total=total, rate="")
            bar.update(tasks[phase], completed=done, total=total)

        yield step


def announce_demo(report: SyncReport, path: Path) -> None:
    """What `Workspace.open` reports after ingesting the demo on its way: one line."""
    err.print(f"ingested the demo collection into {shown(path)}", highlight=False)


@contextmanager
def working(what: str) -> Iterator[Any]:
    """A spinner with the elapsed time on stderr while `what` runs (loading a model,
    answering); shown only on a terminal and never with --quiet. Yields the rich Progress
    (`stop()` clears the spinner early, for text that follows it)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    on_screen = not verbosity().quiet and err.is_terminal
    with Progress(
        SpinnerColumn(),
        TextColumn(what),
        TimeElapsedColumn(),
        console=err.console(),
        transient=True,
        disable=not on_screen,
    ) as bar:
        bar.add_task(what, total=None)
        yield bar


class DraftPrinter:
    """Prints the answer's unchecked draft on stderr as the model writes it (a terminal only,
    never with --quiet): the spinner `bar` is cleared at the first piece, and `end` closes
    the line before the checked answer is printed."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.on = not verbosity().quiet and err.is_terminal
        self.started = False

    def __call__(self, piece: str) -> None:
        if not self.on:
            return
        if not self.started:
            self.bar.stop()
            err.print("[dim]draft, not yet checked:[/dim] ", end="", highlight=False)
            self.started = True
        err.print(piece, end="", style="dim", markup=False, highlight=False, soft_wrap=True)

    def end(self) -> None:
        if self.started:
            err.print()


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
