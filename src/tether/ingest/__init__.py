"""Ingest: from a collection folder to the change set a store writes.

Public entry points (loaded on first use, so importing `tether.ingest` stays cheap):
`load_inventory(folder)`, `parse_file(path, folder, inventory)`,
`parse_bytes(data, source, fmt, row)`. Also: `tether.ingest.discover.discover(folder)` (the
module shares the name, so the function is not re-exported here),
`tether.ingest.sync.sync(store, folder, ...)` (plans one sync and has the store apply it) and
`tether.ingest.chunking.chunk_document` (cuts a Document into Chunks).

What it cannot do: this package marker holds no logic; see each module's docstring.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SUFFIXES": "tether.ingest.discover",
    "INVENTORY_FILE": "tether.ingest.discover",
    "load_inventory": "tether.ingest.metadata",
    "META_FIELDS": "tether.ingest.metadata",
    "parse_file": "tether.ingest.parse.dispatch",
    "parse_bytes": "tether.ingest.parse.dispatch",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tether.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
