"""Citation verification: check every claim of an answer in code, and judge entailment.

The public names, imported on first use (so `import tether.verify.judges` does not load the
checker): `check_answer`, `VerifierOptions`, `VerifierCache`, `apply_strict`, `describe`,
`flag_kind`, `find_instructions`, `numbers_in`, the flag families and the refusal sentences
(all from `tether.verify.check`, which re-exports them from the module of each check
family), `check_inline`, `split_inline` and `InlineReport` (`tether.verify.inline`), the
learned judge (`AlignmentJudge`, from `tether.verify.learned`) and the other judges
(`tether.verify.judges`). The options, their defaults and the judge names are in
`tether.verify.options`; docs/verification.md describes every check.

What it cannot do: see `tether.verify.check` (the checks), `tether.verify.align` (what the
alignment can and cannot see), `tether.verify.learned` and `tether.verify.judges`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.verify.check import (
        CLUE_FLAGS,
        EXACT_FLAGS,
        REFUSAL_SENTENCE,
        REFUSAL_SENTENCE_FR,
        REFUSAL_SENTENCES,
        SOURCE_FLAGS,
        VerifierCache,
        apply_strict,
        check_answer,
        describe,
        find_instructions,
        flag_kind,
        numbers_in,
    )
    from tether.verify.inline import InlineReport, check_inline, split_inline
    from tether.verify.judges import EmbeddingJudge, LLMJudge, NLIJudge
    from tether.verify.learned import AlignmentJudge
    from tether.verify.options import VerifierOptions

__all__ = [
    "CLUE_FLAGS",
    "EXACT_FLAGS",
    "REFUSAL_SENTENCE",
    "REFUSAL_SENTENCES",
    "REFUSAL_SENTENCE_FR",
    "SOURCE_FLAGS",
    "AlignmentJudge",
    "EmbeddingJudge",
    "InlineReport",
    "LLMJudge",
    "NLIJudge",
    "VerifierCache",
    "VerifierOptions",
    "apply_strict",
    "check_answer",
    "check_inline",
    "describe",
    "find_instructions",
    "flag_kind",
    "numbers_in",
    "split_inline",
]
_HOMES = {
    "AlignmentJudge": "tether.verify.learned",
    "EmbeddingJudge": "tether.verify.judges",
    "LLMJudge": "tether.verify.judges",
    "NLIJudge": "tether.verify.judges",
    "InlineReport": "tether.verify.inline",
    "check_inline": "tether.verify.inline",
    "split_inline": "tether.verify.inline",
    "VerifierOptions": "tether.verify.options",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tether.verify' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES.get(name, "tether.verify.check")), name)
