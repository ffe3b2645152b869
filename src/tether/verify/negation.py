"""Re-exports `tether.language.negation` (negation by scope), where this moved, so that the old
import path keeps working. New code imports `tether.language.negation`.

What it cannot do: it holds no logic of its own.
"""

from __future__ import annotations

from tether.language.negation import (
    CUE_STEMS,
    NEGATION_CUES,
    negation_mismatch,
    negation_scope,
)

__all__ = ["CUE_STEMS", "NEGATION_CUES", "negation_mismatch", "negation_scope"]
