"""The `tether` command: a thin face over the engine (parsing and printing only).

`main` is the console entry point (`tether.cli:main`); `tether.cli.main.app` is the Typer app.
"""

from tether.cli.main import app, main

__all__ = ["app", "main"]
