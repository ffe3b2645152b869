"""`check_claims`: check given claims (each with the chunk IDs it cites) against given
passages, as `ask` checks a model's answer (`Workspace.check`, `POST /v1/check`), with the
choices of a `tether.verify.options.CheckOptions`.

A passage the audience may not see, or one not in force on `as_of`, is left out of the
context exactly like an unknown ID, so a claim citing it reads `missing_id`.

What it cannot do: it retrieves nothing and asks no model: the judge is the learned alignment
judge (`tether.verify.learned`), never the language model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.answering.context import TokenCounter, header
from tether.config import Profile
from tether.protocols import Embedder, Store
from tether.types import Answer, Claim, ClaimCheck, Context, Filters, Passage
from tether.verify.options import CheckOptions


def check_claims(
    store: Store,
    claims: Sequence[Claim],
    passage_ids: Sequence[str],
    options: CheckOptions,
    *,
    tokens: TokenCounter,
    embedder: Embedder | None,
    profile: Profile,
    cache: Any = None,
    reader: bool = True,
) -> list[ClaimCheck]:
    """The checks of `claims` against the passages `passage_ids` that `options.audience` may
    see on `options.as_of` (see the module docstring)."""
    from tether.answering.pipeline import answer_language, shipped_reader
    from tether.verify import check as verify
    from tether.verify.learned import AlignmentJudge

    o = options
    filters = Filters(as_of=o.as_of, audience=o.audience)
    found = store.get_many(passage_ids)
    count = tokens.count
    shown = [found[i] for i in dict.fromkeys(passage_ids) if i in found]
    shown = [c for c in shown if filters.allows(c.meta)]
    context = Context(
        tuple(Passage(c, header(c), count(c.text), n) for n, c in enumerate(shown, 1))
    )
    text = " ".join(c.text for c in claims)
    language = o.language or answer_language(o.question or text)
    judge = (
        AlignmentJudge(reader=shipped_reader() if reader else None, across_only=True)
        if o.judge
        else None
    )
    check_options = verify.VerifierOptions(
        audience=filters.audience,
        language=language,
        as_of=o.as_of,
        judge=judge,
        embedder=embedder,
        same_point_cosine=profile.same_point_cosine,
        cross_language_cut=profile.cross_language_cut,
    )
    answer = Answer(True, text, tuple(claims))
    return verify.check_answer(answer, store, context, o.question, check_options, cache=cache)
