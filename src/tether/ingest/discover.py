"""Discovery: the files of a collection folder that tether can read.

`discover(folder)` lists the files tether can read (.md/.markdown, .html/.htm, .pdf, .txt),
recursively and sorted, skipping hidden files and folders and `inventory.csv`; `SUFFIXES`
maps a suffix to its format.

What it cannot do: it looks at names only (a .txt that holds binary is found here and refused
by the parser); it does not follow the inventory (a file listed there but absent is not found).
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.errors import TetherError
from tether.types import FileFormat

SUFFIXES: dict[str, FileFormat] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".txt": "text",
}
INVENTORY_FILE = "inventory.csv"


def discover(folder: Path) -> list[Path]:
    """The readable files under `folder`, recursively, sorted by relative path.

    Hidden files and folders (name starting with ".") and `inventory.csv` are skipped; the
    suffix match ignores case. Raises `TetherError` when `folder` is not a directory.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise TetherError(f"collection folder not found: {folder}")
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        base = Path(dirpath)
        for name in filenames:
            if name.startswith(".") or name.lower() == INVENTORY_FILE:
                continue
            if Path(name).suffix.lower() not in SUFFIXES:
                continue
            path = base / name
            found.append((path.relative_to(folder).as_posix(), path))
    found.sort(key=lambda item: item[0])
    return [path for _, path in found]
