"""A usage error (a bad option value, a missing argument, an unknown option) in one line that
names the flag as the user typed it: `--k: must be at least 1 (got 0)`, `-k: must be a whole
number (got 'abc')`; the environment variable instead when the value came from one
(`TETHER_MCP_AUDIENCE: 'robot' is not public or staff`); never a Python parameter's name.
`tether.cli.app` prints the line after `error:` and exits 2.

What it cannot do: it checks no value (the option's bounds and type, its callback or the
command do) and prints nothing; it only words the error they raised.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

import typer

# typer's exceptions are click's, or (newer typer) its own copy of click's: the module that
# defines typer.BadParameter holds the others
_errors = importlib.import_module(typer.BadParameter.__module__)
UsageError: type[Exception] = _errors.UsageError
NoArgsIsHelpError: type[Exception] | None = getattr(_errors, "NoArgsIsHelpError", None)
MissingParameter: type[Exception] = _errors.MissingParameter

# what a value failed, from the pydantic error typer's number types raise (newer typer); the
# bound comes from the error's ctx
_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be more than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
}
_KINDS = {
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "bool_parsing": "must be true or false",
}


def _got(value: Any, number: bool = False) -> str:
    """The value as given: a number as it was written, other text quoted."""
    return str(value) if number or not isinstance(value, str) else repr(value)


def _reason(exc: Any) -> str:
    """What was wrong with the value, in words: the pydantic error behind typer's number
    types reworded (`must be at least 1 (got 0)`), else the error's own message."""
    errors = getattr(exc.__cause__, "errors", None)
    if callable(errors):
        try:
            first = errors(include_url=False)[0]
        except (TypeError, IndexError):
            first = None
        if isinstance(first, dict):
            kind, ctx, got = first.get("type"), first.get("ctx") or {}, first.get("input")
            if kind in _BOUNDS and _BOUNDS[kind][0] in ctx:
                key, words = _BOUNDS[kind]
                bound = ctx[key]
                bound = f"{bound:g}" if isinstance(bound, float) else bound
                return f"{words.format(bound)} (got {_got(got, number=True)})"
            if kind in _KINDS:
                return f"{_KINDS[kind]} (got {_got(got)})"
    return str(getattr(exc, "message", exc)).strip().rstrip(".")


def typed_flag(opts: Sequence[str], argv: Sequence[str]) -> str | None:
    """Which of an option's spellings (`--k`, `-k`) the command line used, the last one given
    (`--k=0` and `-k0` count), or None when none of them is on it."""
    found = None
    for token in argv:
        if token == "--":
            break
        for opt in opts:
            if opt.startswith("--"):  # --k, --k=0
                given = token == opt or token.startswith(opt + "=")
            else:  # -k, -k0
                given = token.startswith(opt) and not token.startswith("--")
            if given:
                found = opt
    return found


def _variable(param: Any) -> str | None:
    """The environment variable an option read its value from (the first set one)."""
    names = param.envvar
    names = [names] if isinstance(names, str) else list(names or ())
    return next((n for n in names if os.environ.get(n)), names[0] if names else None)


def _param_name(exc: Any, argv: Sequence[str]) -> str | None:
    """The flag as typed (or the variable, or the argument's name) the error is about."""
    hint = getattr(exc, "param_hint", None)
    param = getattr(exc, "param", None)
    if hint is not None:
        return hint if isinstance(hint, str) else " / ".join(hint)
    if param is None:
        return None
    ctx = getattr(exc, "ctx", None)
    source = ctx.get_parameter_source(param.name) if ctx is not None and param.name else None
    if getattr(source, "name", None) == "ENVIRONMENT":
        variable = _variable(param)
        if variable:
            return variable
    if getattr(param, "param_type_name", "") == "option":
        opts = [*param.opts, *getattr(param, "secondary_opts", ())]
        return typed_flag(opts, argv) or max(param.opts, key=len)
    return str(param.metavar or param.name)


def _help_hint(exc: Any) -> str:
    ctx = getattr(exc, "ctx", None)
    return f" (see `{ctx.command_path} --help`)" if ctx is not None else ""


def usage_message(exc: Any, argv: Sequence[str]) -> str:
    """The one line (without `error:`) for a usage error raised while parsing `argv`."""
    name = _param_name(exc, argv)
    if isinstance(exc, MissingParameter) and name is not None:
        kind = getattr(getattr(exc, "param", None), "param_type_name", "") or "parameter"
        return f"missing {kind} {name}{_help_hint(exc)}"
    if name is not None:
        return f"{name}: {_reason(exc)}"
    if getattr(exc, "param", None) is None and type(exc).__name__ == "BadParameter":
        return _reason(exc)  # raised by a command with no option to name: its message alone
    return f"{exc.format_message().strip().rstrip('.')}{_help_hint(exc)}"
