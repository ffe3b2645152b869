"""tether: answers from a document collection with claims an agent can check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tether._version import __version__

if TYPE_CHECKING:
    from tether.app import Collection


def __getattr__(name: str) -> Any:
    if name == "Collection":  # imported lazily: `tether --help` stays fast
        from tether.app import Collection

        return Collection
    raise AttributeError(name)


__all__ = ["Collection", "__version__"]
