"""How a check is asked for: `VerifierOptions` (how `tether.verify.check.check_answer`
checks an answer), `CheckOptions` (how `Workspace.check` checks given claims) and their
defaults, re-exported from `tether.options`, the one module of every act's options, so that
the verify package reads them from inside itself.

What it cannot do: it defines nothing; see `tether.options`.
"""

from __future__ import annotations

from tether.options import (
    CROSS_LANGUAGE_CUT,
    DEFAULT_JUDGE_THRESHOLD,
    DEFAULT_PRECEDENCE,
    SAME_POINT_COSINE,
    CheckOptions,
    VerifierOptions,
)

__all__ = [
    "CROSS_LANGUAGE_CUT",
    "DEFAULT_JUDGE_THRESHOLD",
    "DEFAULT_PRECEDENCE",
    "SAME_POINT_COSINE",
    "CheckOptions",
    "VerifierOptions",
]
