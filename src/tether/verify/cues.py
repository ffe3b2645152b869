"""Re-exports `tether.language.cues` (scope, condition, negation, period and opposite cues),
where this moved, so that the old import path keeps working. New code imports
`tether.language.cues`.

What it cannot do: it holds no logic of its own.
"""

from __future__ import annotations

from tether.language.cues import (
    BENIGN_ADDED,
    GENERIC,
    LIMITING,
    OPPOSITES,
    PERIOD_WORDS,
    QUANT_NEIGHBOURS,
    classes,
    condition,
    cue_text,
    main_clause,
    periods,
    polarity,
    related,
)

__all__ = [
    "BENIGN_ADDED",
    "GENERIC",
    "LIMITING",
    "OPPOSITES",
    "PERIOD_WORDS",
    "QUANT_NEIGHBOURS",
    "classes",
    "condition",
    "cue_text",
    "main_clause",
    "periods",
    "polarity",
    "related",
]
