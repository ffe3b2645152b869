"""Stores: where an index lives. `open_store(location)` is the one factory; every store
implements `tether.protocols.Store` (reads, filtered lexical and dense search, `apply` of a
change set, generations) and passes the contract tests in tests/contract/.

- `sqlite`: the embedded default, one SQLite file (writing in `sqlite_write`);
- `dense`: cosine search over the vectors (brute force or a faiss HNSW graph).

What it cannot do: only SQLite files for now (a PostgreSQL URL is refused); importing this
package loads no backend until `open_store` is called.
"""

from __future__ import annotations

from pathlib import Path

from tether.errors import TetherError
from tether.protocols import Store


def open_store(location: Path | str, *, must_exist: bool = True) -> Store:
    """Open the index at `location` (a file path); a missing one is a clear error unless
    `must_exist` is False, in which case an empty index is created."""
    text = str(location)
    if "://" in text:
        raise TetherError(f"{text.split('://')[0]}:// stores are not supported yet; pass a file")
    from tether.stores.sqlite import SqliteStore

    return SqliteStore(location, create=not must_exist)
