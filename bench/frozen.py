"""Held-out files frozen by checksum: which of them changed since.

A held-out folder lists its files in `SHA256SUMS` (`sha256sum` format). `changed(folder)` names
every listed file whose content no longer matches (or that is gone); with `only`, just those
names, and a name the list lacks counts as changed. The benches that report held-out figures
refuse, or stop calling a set held out, when it returns anything.

What it cannot do: it knows the files, not who read them: a set looked at is no longer held
out even when its checksums match.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def changed(folder: Path, only: Iterable[str] | None = None) -> list[Path]:
    """The files of `folder/SHA256SUMS` (of `only`, when given) that differ from their sums."""
    sums = folder / "SHA256SUMS"
    listed: dict[str, str] = {}
    if sums.is_file():
        for line in sums.read_text(encoding="utf-8").splitlines():
            if line.strip():
                digest, name = line.split(maxsplit=1)
                listed[name.strip().lstrip("*")] = digest
    names = list(only) if only is not None else list(listed)
    out = []
    for name in names:
        path = folder / name
        ok = (
            name in listed
            and path.is_file()
            and hashlib.sha256(path.read_bytes()).hexdigest() == listed[name]
        )
        if not ok:
            out.append(path)
    return out
