"""`tether mcp`: serve the index's tools to AI agents over MCP (stdio or streamable HTTP).

What it cannot do: it parses options and starts `tether.mcp_server`; the audience is fixed
for the server's life (from --audience or TETHER_MCP_AUDIENCE), never taken from a call.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tether.cli.app import (
    DemoOpt,
    IndexOpt,
    audience_option,
    audience_value,
    open_workspace,
    user_errors,
)


def mcp(
    index: IndexOpt = None,
    demo: DemoOpt = False,
    audience: Annotated[
        str,
        typer.Option(
            help="Who the server answers for: public (default) or staff. Fixed for the"
            " server's life; no tool call can change it.",
            envvar="TETHER_MCP_AUDIENCE",
            callback=audience_option,
        ),
    ] = "public",
    transport: Annotated[
        str, typer.Option(help="stdio (for a client that starts the server) or http.")
    ] = "stdio",
    host: Annotated[str, typer.Option(help="With --transport http: the address.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="With --transport http: the port.", min=1, max=65535)
    ] = 8765,
    agent: Annotated[
        bool, typer.Option(help="The ask tool answers through the agent loop (ask --agent).")
    ] = False,
) -> None:
    """Serve the index to AI agents over MCP: tools search, read, ask and check, and the
    documents as resources (streamable HTTP at http://HOST:PORT/mcp with --transport http)."""
    from tether.errors import TetherError

    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"{transport!r} is not stdio or http", param_hint="--transport")
    with user_errors():
        who = audience_value(audience)
        ws = open_workspace(index, demo)
        ws.store  # noqa: B018 (a missing index is an error now, not at the first call)
        ws.close()  # reopened by the server's worker thread
        try:
            from tether.mcp_server import run
        except ImportError as exc:
            from tether.extras import install_hint

            raise TetherError(
                f"tether mcp needs the mcp extra ({exc.name} is missing): {install_hint('mcp')}"
            ) from None
        from tether.tools import Tools

        run(Tools(ws, who, agent=agent), "stdio" if transport == "stdio" else "http", host, port)
