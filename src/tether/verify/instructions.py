"""Text addressed to AI assistants in a source, as the checker reads it: `find_instructions`.

The detector lives in the vocabulary layer (`tether.instructions`) so that ingest, which
records the spans per chunk, and the checker, which flags a claim resting on one
(`instruction_in_source`), read sources with ONE detector. See that module for what it
matches and how text is normalised first (invisible characters, NFKC, Latin look-alikes).

What it cannot do: see `tether.instructions` (patterns in EN and FR only).
"""

from __future__ import annotations

from tether.instructions import find_instructions

__all__ = ["find_instructions"]
