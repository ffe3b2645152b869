"""Citation verification: check every claim of an answer in code, and judge entailment.

The public names, imported on first use (so `import tether.verify.judges` does not load the
checker): `check_answer`, `check_inline`, `CheckOptions`, `VerifierCache`, `apply_strict`,
`describe`, `flag_kind`, `find_instructions`, `numbers_in`, `split_inline`, `InlineReport`,
the flag families and the refusal sentences (all from `tether.verify.check`, which re-exports
them from the module of each check family), the learned judge (`AlignmentJudge`, from
`tether.verify.learned`) and the other judges (`tether.verify.judges`).

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
        CheckOptions,
        InlineReport,
        VerifierCache,
        apply_strict,
        check_answer,
        check_inline,
        describe,
        find_instructions,
        flag_kind,
        numbers_in,
        split_inline,
    )
    from tether.verify.judges import EmbeddingJudge, LLMJudge, NLIJudge
    from tether.verify.learned import AlignmentJudge

__all__ = [
    "CLUE_FLAGS",
    "EXACT_FLAGS",
    "REFUSAL_SENTENCE",
    "REFUSAL_SENTENCES",
    "REFUSAL_SENTENCE_FR",
    "SOURCE_FLAGS",
    "AlignmentJudge",
    "CheckOptions",
    "EmbeddingJudge",
    "InlineReport",
    "LLMJudge",
    "NLIJudge",
    "VerifierCache",
    "apply_strict",
    "check_answer",
    "check_inline",
    "describe",
    "find_instructions",
    "flag_kind",
    "numbers_in",
    "split_inline",
]
_JUDGES = frozenset({"EmbeddingJudge", "LLMJudge", "NLIJudge"})


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tether.verify' has no attribute {name!r}")
    module = (
        "tether.verify.learned"
        if name == "AlignmentJudge"
        else "tether.verify.judges"
        if name in _JUDGES
        else "tether.verify.check"
    )
    return getattr(importlib.import_module(module), name)
