"""The Workspace: the ONE place that builds the parts of tether from Settings and hands them
to the engine. Every face (the CLI, `tether.collection`'s Python API, the HTTP server, MCP)
calls a Workspace; no other module opens an index, loads a model or picks a provider.

The package's rooms, each behind the one door `Workspace` (`tether.app.workspace`, its
lifecycle: `open`, the store, `close`):

- `locate`: which index to open (`locate_index`, `index_found`), "today", as-of dates and
  audiences (`as_of_value`, `today`, `check_audience`).
- `opening`: the body of `Workspace.open`, and `same_doc`, by which a Workspace method
  carries the docstring of the room function it delegates to.
- `parts`: the loaded models (`Models`, `shared_models()`), an index's tuned values
  (`index_profile`), a retriever over it (`retriever_for`), and the Workspace's embedders,
  provider, judges, token counter and verifier parts.
- `public`: what the index holds as an audience may see it (documents, chunks, `info`).
- `asking`: `SearchOptions`, search, ask, the agentic loop, claim checks.
- `writing`: ingest and the calibrations it runs, gate floors, the handoff.
- `records`: the audit, feedback on it, and the health report built from both.

What it cannot do: a Workspace is meant for one thread at a time (the store's connection,
the caches); a server holds one per worker thread over shared `Models`. It does not watch the
folder: `ingest()` syncs when asked.
"""

from tether.app.asking import CheckRequest, SearchOptions
from tether.app.locate import AsOf, as_of_value, check_audience, index_found, locate_index, today
from tether.app.parts import Models, index_profile, retriever_for, shared_models
from tether.app.public import PUBLIC_COUNTS, PUBLIC_META
from tether.app.workspace import Workspace, shared_state_of

__all__ = [
    "PUBLIC_COUNTS",
    "PUBLIC_META",
    "AsOf",
    "CheckRequest",
    "Models",
    "SearchOptions",
    "Workspace",
    "as_of_value",
    "check_audience",
    "index_found",
    "index_profile",
    "locate_index",
    "retriever_for",
    "shared_models",
    "shared_state_of",
    "today",
]
