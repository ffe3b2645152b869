"""tether: answers from a document collection with claims an agent can check.

The Python API: `Collection("docs").ask("...")` (see docs/api.md). The names below are
imported on first use, so `import tether` (and `tether --help`) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tether._version import __version__

if TYPE_CHECKING:
    from tether.answering.pipeline import AskOptions
    from tether.app import Models, SearchOptions, Workspace
    from tether.collection import Collection
    from tether.errors import TetherError
    from tether.types import AskResult, Hit

_LAZY = {
    "Collection": "tether.collection",
    "Workspace": "tether.app",
    "Models": "tether.app",
    "SearchOptions": "tether.app",
    "AskOptions": "tether.answering.pipeline",
    "AskResult": "tether.types",
    "Hit": "tether.types",
    "TetherError": "tether.errors",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:  # imported lazily: `tether --help` stays fast
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)


__all__ = [
    "AskOptions", "AskResult", "Collection", "Hit", "Models", "SearchOptions", "TetherError",
    "Workspace", "__version__",
]  # fmt: skip
