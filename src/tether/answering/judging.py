"""The claim judges tether can build, by name: one `JudgeSpec` each (its name, a phrase saying
what it is, how it is built), in the order `tether eval --verifier --judge` lists them.

`JUDGES` holds their names, those of `tether.catalog.JUDGES` (where the CLI reads its
choices, its --judge help and the message for an unknown name without loading this package),
checked on import to be exactly the specs'. `build_judge` builds one by name
(`tether.answering.pipeline.make_judge`, which `Workspace.judge_named` calls, and
`choose_judge` with the name a provider's capabilities give). The judges, in order: the
learned judge (the alignment's word features; the reader, tether's own cross-encoder, where
words cannot judge: a claim in another language than its passages), the same with a language
model as a second opinion, the reader on every claim (combined with the words model), the
word features alone (never the reader), the embedding judge, the language model alone, none.

What it cannot do: there are no third-party judges (no entry-point group, unlike providers);
importing it loads no judge and no model: each factory imports its judge's module when it
builds (numpy, the learned model, the reader's weights), so the CLI lists the names at
start-up for nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tether.catalog import JUDGES as CATALOG
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.config import Profile
    from tether.protocols import Embedder, Judge, PairReader, Provider


@dataclass(frozen=True)
class JudgeBuild:
    """What a judge's factory is given: the judge's `name`, the `embedder` (None: none
    loaded), `llm` (makes the language model's provider; None: there is none), the index's
    `profile`, and `reader`, which gives the reader the alignment judges consult (None when
    the settings turn it off or it cannot be loaded)."""

    name: str
    embedder: Embedder | None
    llm: Callable[[], Provider] | None
    profile: Profile
    reader: Callable[[], PairReader | None]

    def model(self) -> Provider:
        """The language model's provider; a `TetherError` when there is none."""
        if self.llm is None:
            raise TetherError(f"the {self.name} judge needs a language model")
        return self.llm()


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: its `name`, a phrase saying what it is for the CLI's help (`what`; "" when
    the name says it), its `factory` (a `JudgeBuild` → the judge, or None for no entailment
    check) and whether it `needs_reader` (refused when the settings turn the reader off)."""

    name: str
    what: str
    factory: Callable[[JudgeBuild], Judge | None]
    needs_reader: bool = False


def _alignment(**options: Any) -> Judge:
    from tether.verify.learned import AlignmentJudge  # its model and numpy: on first use

    return AlignmentJudge(**options)


def _llm(build: JudgeBuild) -> Judge:
    from tether.verify.judges import LLMJudge  # numpy: on first use

    return LLMJudge(build.model())


def _embedding(build: JudgeBuild) -> Judge | None:
    if build.embedder is None:
        return None
    from tether.verify.judges import EmbeddingJudge  # numpy: on first use

    low, high = build.profile.judge_low, build.profile.judge_high
    return EmbeddingJudge(build.embedder, low=low, high=high)


_SPECS = (
    JudgeSpec(
        "align",
        CATALOG["align"],
        lambda b: _alignment(reader=b.reader(), across_only=True),
    ),
    JudgeSpec(
        "align+llm",
        CATALOG["align+llm"],
        lambda b: _alignment(second=_llm(b), reader=b.reader(), across_only=True),
    ),
    JudgeSpec("reader", CATALOG["reader"], lambda b: _alignment(reader=b.reader()), True),
    JudgeSpec("words", CATALOG["words"], lambda b: _alignment()),
    JudgeSpec("embedding", CATALOG["embedding"], _embedding),
    JudgeSpec("llm", CATALOG["llm"], _llm),
    JudgeSpec("none", CATALOG["none"], lambda b: None),
)
if tuple(s.name for s in _SPECS) != tuple(CATALOG):  # the catalog's names, in its order
    raise TetherError("the judge registry does not cover tether.catalog.JUDGES")

JUDGE_SPECS: Mapping[str, JudgeSpec] = MappingProxyType({s.name: s for s in _SPECS})
"""The judges by name, in the order the CLI lists them."""

JUDGES: tuple[str, ...] = tuple(JUDGE_SPECS)
"""The judge names `tether eval --verifier --judge` and `Workspace.judge_named` accept."""


def judge_spec(name: str) -> JudgeSpec:
    """The judge called `name`; a `TetherError` listing the names for another."""
    found = JUDGE_SPECS.get(name)
    if found is None:
        raise TetherError(f"unknown judge {name!r}: {', '.join(JUDGES)}")
    return found


def shipped_reader() -> PairReader | None:
    """The reader that ships with tether (`tether.embeddings.reader.available_reader`);
    None where it cannot be loaded (warned once in the log): the claim judge then reads the
    alignment alone, as `words` does."""
    from tether.embeddings.reader import available_reader  # the reader's model: on first use

    return available_reader()


def build_judge(
    name: str,
    embedder: Embedder | None,
    llm: Callable[[], Provider] | None,
    profile: Profile,
    *,
    reader: bool = True,
) -> Judge | None:
    """The judge called `name` (one of `JUDGES`), built by its spec: `llm()` makes the
    language model's provider for the judges that ask one; without `reader` (the Settings'
    `reader` off) the alignment judges read words alone, as `words` does, and the `reader`
    judge is refused. An unknown name is a TetherError."""
    spec = judge_spec(name)
    if spec.needs_reader and not reader:
        raise TetherError(
            f"the {name} judge needs tether's reader, which TETHER_READER=off turns off"
        )
    return spec.factory(
        JudgeBuild(name, embedder, llm, profile, lambda: shipped_reader() if reader else None)
    )
