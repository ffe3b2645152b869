"""Shared parts of the peers benchmark (`make bench-peers`): the question sets, tether's index
of each set (the reference for document metadata and for mapping any system's passage back to
a location), the e5 embedder every system is given, and the scoring rules.

Scoring, the same for every system (tether included), on the top 50 passages a system returns:
- location rule: a passage is mapped to the tether chunks of the same source file whose text
  it overlaps (5-word shingles, at least half of the smaller side shared), and it is relevant
  when one of those chunks is at a relevant location (`tether.evaluation.questions.matches`);
- text rule (chunking-neutral): a passage is relevant when it overlaps the text of the
  labelled section (all tether chunks at that location) by the same shingle rule;
- budget rule: the passages are read in rank order and cut after N words in all (N = 1,000,
  about tether's context budget); a question counts when the text shown before the cut holds
  a relevant passage by the text rule.
Metrics come from `tether.evaluation.metrics.ranking_metrics` (recall@5, MRR, nDCG@5).

Filters: tether applies a question's as_of and audience before ranking. The peers have no such
filter over their own chunks, so they retrieve 50 passages and the ones from a document
version the question may not see are dropped afterwards (a benefit tether does not get).

What it cannot do: it measures retrieval only (answers with citations are compared by
`answers.py`); the shingle rule can miss a passage that paraphrases its section (no system here rewrites
text, so this does not arise).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.evaluation.metrics import ranking_metrics
from tether.evaluation.questions import (
    demo_collection,
    demo_questions,
    larkfield_collection,
    load_questions,
    matches,
    question_filters,
)
from tether.protocols import Store
from tether.types import Chunk, Question, Relevant

ROOT = Path(__file__).resolve().parents[2]
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"
DEPTH = 50
K = 5
BUDGET_WORDS = 1000
SHINGLE = 5
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The casefolded words of `text`."""
    return _WORD.findall(text.casefold())


def shingles(text: str) -> set[tuple[str, ...]]:
    """5-word shingles of `text` (the words themselves for a text shorter than that)."""
    w = words(text)
    if len(w) < SHINGLE:
        return {tuple(w)} if w else set()
    return {tuple(w[i : i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def overlaps(a: set, b: set) -> bool:
    """At least half of the smaller shingle set is shared."""
    if not a or not b:
        return False
    return len(a & b) >= 0.5 * min(len(a), len(b))


@dataclass
class QuestionSet:
    """One question set and the folder of documents it is asked about."""

    name: str
    folder: Path
    questions: list[Question]
    audience: str | None  # overrides each question's own (the help desk asks Larkfield's)
    note: str = ""


MANUALS = ("gettext", "mkdocs", "doxygen")  # held out (bench/corpora/HELDOUT.md)


def question_sets(work: Path, names: Sequence[str]) -> list[QuestionSet]:
    """The bundled demo set, Larkfield when ../shared holds it (staged in `work`), and the
    held-out manuals set up by bench/corpora/setup.py (TETHER_CORPORA, else /work/corpora)."""
    import os

    out = []
    corpora = Path(os.environ.get("TETHER_CORPORA", "/work/corpora"))
    for name in MANUALS:
        folder = corpora / name
        if name in names and folder.is_dir():
            qs = load_questions(ROOT / "bench" / "corpora" / name / "questions.jsonl")
            copy = work / f"{name}-docs"  # the pages only: no index or ingest record inside
            if not copy.is_dir():
                import shutil

                shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(".tether", "*.json"))
            # asked as staff: the pages carry no access label (the bench ingests them as is)
            out.append(QuestionSet(name, copy, qs, "staff", "held out"))
    if "bundled" in names:
        out.append(QuestionSet("bundled", demo_collection(), load_questions(demo_questions()), None))
    if "larkfield" in names and LARKFIELD.is_dir():
        folder = larkfield_collection(LARKFIELD, work / "larkfield-docs")
        qs = load_questions(LARKFIELD / "questions" / "questions.jsonl")
        out.append(QuestionSet("larkfield", folder, qs, "staff", "7 of 36 documents present"))
    return out


@dataclass
class Passage:
    """A passage a system returned: the file it came from (relative to the collection
    folder, forward slashes) and its text."""

    source: str
    text: str
    _sh: set | None = field(default=None, repr=False)

    @property
    def sh(self) -> set:
        if self._sh is None:
            self._sh = shingles(self.text)
        return self._sh


class Reference:
    """tether's index of a question set, read for metadata and locations only."""

    def __init__(self, store: Store, qset: QuestionSet) -> None:
        self.store = store
        self.qset = qset
        self.chunks = store.chunks()
        self.by_source: dict[str, list[Chunk]] = {}
        for c in self.chunks:
            self.by_source.setdefault(c.meta.source, []).append(c)
        self._sh = {c.chunk_id: shingles(c.text) for c in self.chunks}
        self._allowed: dict[tuple, set[str]] = {}

    def sources(self) -> list[str]:
        """The files tether indexed (every system is given these and no others)."""
        return sorted(self.by_source)

    def allowed_sources(self, q: Question) -> set[str]:
        """The files whose document version the question may see."""
        f = question_filters(q, self.qset.audience)
        key = (f.as_of, f.audience)
        if key not in self._allowed:
            ids = self.store.allowed_ids(f)
            self._allowed[key] = {c.meta.source for c in self.chunks if c.chunk_id in ids}
        return self._allowed[key]

    def usable(self, q: Question) -> list[Relevant]:
        """The question's relevant passages the index holds and its filters allow."""
        allowed = self.allowed_sources(q)
        return [
            r for r in q.relevant
            if any(matches(c, r) and c.meta.source in allowed for c in self.chunks)
        ]  # fmt: skip

    def mapped(self, p: Passage) -> list[Chunk]:
        """The tether chunks of the passage's file that it overlaps."""
        return [c for c in self.by_source.get(p.source, []) if overlaps(p.sh, self._sh[c.chunk_id])]

    def section_shingles(self, rel: Relevant) -> set:
        """Shingles of the labelled section's whole text."""
        out: set = set()
        for c in self.chunks:
            if matches(c, rel):
                out |= self._sh[c.chunk_id]
        return out


def score_question(
    ref: Reference, q: Question, ranked: Sequence[Passage]
) -> dict[str, dict[str, float]] | None:
    """The three rules' metrics for one question's ranking (None when it is not scorable)."""
    rels = ref.usable(q)
    if not rels:
        return None
    allowed = ref.allowed_sources(q)
    shown = [p for p in ranked if p.source in allowed][:DEPTH]
    loc = [
        {i for i, r in enumerate(rels) if any(matches(c, r) for c in ref.mapped(p))} for p in shown
    ]
    sections = [ref.section_shingles(r) for r in rels]
    txt = [{i for i, s in enumerate(sections) if overlaps(p.sh, s)} for p in shown]
    budget: set[int] = set()
    left = BUDGET_WORDS
    for p in shown:
        if left <= 0:
            break
        w = words(p.text)
        cut = Passage(p.source, " ".join(w[:left]))
        left -= len(w)
        budget |= {i for i, s in enumerate(sections) if overlaps(cut.sh, s)}
    words_top5 = sum(len(words(p.text)) for p in shown[:K])
    return {
        "location": ranking_metrics(loc, len(rels), K),
        "text": ranking_metrics(txt, len(rels), K),
        "budget": {"hit": 1.0 if budget else 0.0},
        "words_top5": {"words": float(words_top5)},
    }
