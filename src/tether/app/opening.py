"""How a Workspace is opened and documented: `open_workspace`, the body of `Workspace.open`
(which index or server store, the provider choice, the demo's ingest), and `same_doc`, which
gives a Workspace method the docstring of the room function it delegates to, so the full
text is written once (in the room) and `inspect.getdoc` reads it on both.

What it cannot do: it opens nothing itself: the Workspace opens its store on first use, and
whether a named index file exists is found out then. `same_doc` copies the docstring only,
never the signature: the Workspace method keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tether.app.locate import locate_index
from tether.config import load_settings

if TYPE_CHECKING:
    from tether.app.parts import Models
    from tether.app.workspace import Workspace
    from tether.config import Settings
    from tether.protocols import Embedder, Provider
    from tether.types import Progress, SyncReport

F = TypeVar("F", bound=Callable[..., Any])


def same_doc(source: Callable[..., Any]) -> Callable[[F], F]:
    """A decorator that sets the function's docstring to `source`'s."""

    def give(func: F) -> F:
        func.__doc__ = source.__doc__
        return func

    return give


def open_workspace(
    cls: type[Workspace],
    index: Path | str | None,
    *,
    store: str | None,
    demo: bool,
    create: bool,
    settings: Settings | None,
    models: Models | None,
    provider: Provider | str | None,
    model: str | None,
    embedder: Embedder | None,
    refresh_demo: bool,
    progress: Progress | None,
    on_demo: Callable[[SyncReport, Path], None] | None,
) -> Workspace:
    """The one way in: the Workspace every face asks for.

    - Where: the server `store` (a postgresql:// URL; None: TETHER_STORE, "": none), else
      the index file `index`, else TETHER_INDEX, else .tether/index.sqlite here or above
      (`locate_index`); `demo` reads the bundled demo's index instead (the CLI asks for
      it also when a bundled question's ID is asked and no index of the user's own is
      found: `index_found`).
    - `create`: the index is written (created when missing) rather than read.
    - The demo's index is ingested when it is missing or was built by an older tether,
      and again with `refresh_demo`; `progress` follows that ingest and `on_demo` gets its
      report.
    - `provider` (a name from the registry, "recorded", or a Provider) and `model` replace
      the Settings' choice; the provider is built on first use (`Workspace.provider`) and
      the judge follows what it declares (`Workspace.judge`).
    """
    chosen = settings if settings is not None else load_settings()
    given: dict[str, Any] = {"models": models, "embedder": embedder}
    if isinstance(provider, str) or model is not None:
        given["choice"] = (provider, model)
    else:
        given["provider"] = provider
    if create:
        return cls(chosen, index=index, store=store, create=True, **given)
    server = None if demo else (store if store is not None else chosen.store)
    if server:
        return cls(chosen, store=server, **given)
    path = locate_index(index, demo=demo, settings=chosen)
    ws = cls(chosen, index=path, store="", **given)
    if demo:
        ws._demo_ready(refresh_demo, progress, on_demo)
    return ws
