"""Re-exports `tether.language.stems` (content-word stems), where this moved, so that the old
import path keeps working. New code imports `tether.language.stems`.

What it cannot do: it holds no logic of its own.
"""

from __future__ import annotations

from tether.language.stems import DIGIT, SKIP_WORDS, WORD_RE, content_stem, stem_set

__all__ = ["DIGIT", "SKIP_WORDS", "WORD_RE", "content_stem", "stem_set"]
