"""The `tether` command: a thin face over the Workspace (parsing and printing only)."""

from tether.cli.main import main

__all__ = ["main"]
