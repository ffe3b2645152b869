"""One module per system in the peers benchmark; each `build(...)` returns a searcher.

The lines of user code each system needs are counted from these modules (code lines only)."""
