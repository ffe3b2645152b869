"""Re-exports `tether.language.quantities` (the reader of numbers, codes, dates, times, units,
ranges and periods), where this moved, so that the old import path keeps working. New code
imports `tether.language.quantities`.

What it cannot do: it holds no logic of its own.
"""

from __future__ import annotations

from tether.language.quantities import (
    MONTH_NAMES,
    NUMBER,
    UNIT_AFTER,
    UNITS,
    WORD_NUMBERS,
    Quantities,
    canon_number,
    found_keys,
    numbers_in,
    qualify,
    read_periods,
    read_quantities,
    unit_keys,
    word_numbers,
)

__all__ = [
    "MONTH_NAMES",
    "NUMBER",
    "UNITS",
    "UNIT_AFTER",
    "WORD_NUMBERS",
    "Quantities",
    "canon_number",
    "found_keys",
    "numbers_in",
    "qualify",
    "read_periods",
    "read_quantities",
    "unit_keys",
    "word_numbers",
]
