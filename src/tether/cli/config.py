"""`tether config`: the effective settings, one row per variable, and where each came from
(the environment, the settings file, or the default); API keys are masked.

What it cannot do: it shows what tether would use, it does not check it (that a model exists,
a key is valid or a URL answers is found out by the first request).
"""

from __future__ import annotations

from tether.cli.app import JsonOpt, out, print_json, shown, table, user_errors


def config(as_json: JsonOpt = False) -> None:
    """Print the effective settings and where each came from (environment, file, default);
    API keys are masked. `tether --env-file FILE config` shows what FILE would give."""
    from tether.config import describe_settings
    from tether.schemas import Setting

    with user_errors():
        rows = describe_settings()
    if as_json:
        print_json([Setting.from_source(r) for r in rows])
        return
    listed = table("settings", ("variable", "value", "from"), overflow="fold")
    for r in rows:
        value = "(none)" if r.value is None else shown(r.value, one_line=True)
        listed.add_row(r.variable, value, shown(r.source, one_line=True))
    out.print(listed)
