"""The MCP face: tether's tools for AI agents over the Model Context Protocol (`tether mcp`).

`build_server(tools)` makes an `mcp` SDK server (`MCPServer`) with the tools `search`,
`read`, `ask` and `check` and the documents as resources; `run(...)` serves it over stdio
or streamable HTTP. See `tether.mcp_server.server`.
"""

from tether.mcp_server.server import build_server, run

__all__ = ["build_server", "run"]
