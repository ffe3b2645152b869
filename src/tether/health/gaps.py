"""Content gaps: the questions the audit recorded as refused, or answered with flagged claims,
and the answers readers marked wrong, grouped by subject ("people ask X; nothing answers it").

`find_gaps(entries, wrong, embed, search)`:
- the questions: each audit entry refused or flagged (dropped counts aside), and each entry
  a reader marked wrong (feedback), once per entry;
- grouped by subject: e5 query vectors (`embed`), average linkage: the two groups whose
  questions are closest on average are joined first (each question a group at the start),
  while that mean cosine reaches `SAME_SUBJECT` (a mean, not a normalised centre: a centre
  sits closer to every question than its members do, and pulls other subjects in). From
  `CENTRE_FROM` questions on, the questions' mean vector is taken out first: questions to
  one help desk share their company and trade, which lifts every cosine (on the held-out
  telecom set, questions of different subjects were nearly as close as questions of one
  subject), and what is left tells subjects apart; the cut is then
  `SAME_SUBJECT_CENTRED`. Centred, two questions of one subject asked in other words are
  often only a little closer than two of different subjects (on the four labelled sets; the
  groups found on each: bench/health/bench_health_report.py, bench/results/health.md):
  joining the closest groups first lets a subject's questions,
  each close to a few of the others, come together under a low cut, where the earlier
  single pass (each question, in turn, to the first group close enough) left most
  held-out subjects in pairs at 0.2 and mixed them at 0.1. The most asked
  `AGGLOMERATE_MAX` distinct questions are grouped so (a matrix of their cosines), any
  further one joins its closest group; without vectors (`embed` None), by the share of
  content words a question has in common with a group's first question;
- each group with its count, up to three different phrasings, the subject (the question
  closest to all the others), and the passages nearest to it (`search`, staff view): where
  an answer would go, and whose documents they are (their owners).

A group of one question is a gap too (counted, listed after the groups of several).

What it cannot do: it groups by closeness of wording and meaning, so two subjects asked in
similar words can share a group ("Will I lose my old phone number?" and "Do I need to turn
anything on before I go to Japan so my phone works there?" did, on the telecom set) and one subject asked
in very different words can be split; the cut-offs were read off the four labelled sets'
questions (the demo's, Northwind's, Calder's and Harrowgate's: tuned on them), and with
few subjects the centring makes different subjects' cosines negative, which a collection
asked about many subjects would not; a refused question may be refused for a reason other
than a gap (retrieval weak on a subject the documents do answer), and such questions,
grouped together, make a group of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tether.text import content_words
from tether.types import AuditEntry, Finding, Hit, Quote

SAME_SUBJECT = 0.87  # mean e5 query cosine at which two groups are about one subject
SAME_SUBJECT_CENTRED = 0.08  # ... once the questions' mean is taken out (CENTRE_FROM or more)
CENTRE_FROM = 5
AGGLOMERATE_MAX = 1000  # distinct questions grouped pairwise (the most asked); the rest joined
SAME_WORDS = 0.5  # without vectors: the share of content words in common
EXAMPLES = 3
NEAREST = 2


@dataclass(frozen=True)
class Asked:
    """One question a gap is made of: its text, why it counts (refused, flagged, wrong) and
    the audit entry."""

    question: str
    why: str
    entry_id: int | None


def asked(entries: Sequence[AuditEntry], wrong: Sequence[AuditEntry]) -> list[Asked]:
    """The questions that count: refused or flagged entries, and entries marked wrong (one
    per entry)."""
    found: dict[int | None, Asked] = {}
    for e in entries:
        if e.status in ("refused", "flagged"):
            found.setdefault(e.id, Asked(e.question, e.status, e.id))
    for e in wrong:  # a reader's verdict outranks the status it was recorded with
        found[e.id] = Asked(e.question, "marked wrong", e.id)
    return list(found.values())


def _groups(texts: Sequence[str], vectors: np.ndarray | None) -> list[list[int]]:
    """Indices of `texts` grouped by subject (see the module docstring)."""
    groups: list[list[int]] = []
    if vectors is not None:
        unit = _unit(vectors)
        cut = SAME_SUBJECT
        if len(texts) >= CENTRE_FROM:  # what every question shares (the company, its trade) out
            unit, cut = _unit(unit - unit.mean(axis=0)), SAME_SUBJECT_CENTRED
        first = min(len(texts), AGGLOMERATE_MAX)
        groups = _agglomerated(unit[:first] @ unit[:first].T, cut)
        for i in range(first, len(texts)):  # beyond the most asked: each to its closest group
            best, at = max(
                (float((unit[members] @ unit[i]).mean()), g) for g, members in enumerate(groups)
            )
            if best >= cut:
                groups[at].append(i)
            else:
                groups.append([i])
        return groups
    words = [set(content_words(t)) for t in texts]
    for i in range(len(texts)):
        at = next(
            (
                g
                for g, members in enumerate(groups)
                if len(words[i] & words[members[0]])
                >= SAME_WORDS * max(1, len(words[i] | words[members[0]]))
            ),
            -1,
        )
        if at >= 0:
            groups[at].append(i)
        else:
            groups.append([i])
    return groups


def _agglomerated(cosines: np.ndarray, cut: float) -> list[list[int]]:
    """Average-linkage groups of a square cosine matrix (SciPy's UPGMA on 1 - cosine): the two
    groups whose members are closest on average are joined first, while that mean reaches
    `cut`; each group in the order of its first member, its members in order."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    n = len(cosines)
    if n < 2:
        return [[i] for i in range(n)]
    distances = np.clip(1.0 - cosines.astype(np.float64), 0.0, None)
    np.fill_diagonal(distances, 0.0)
    tree = linkage(squareform((distances + distances.T) / 2, checks=False), method="average")
    labels = fcluster(tree, t=1.0 - cut, criterion="distance")
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(int(label), []).append(i)
    return sorted(groups.values(), key=lambda members: members[0])


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def find_gaps(
    questions: Sequence[Asked],
    embed: Callable[[Sequence[str]], np.ndarray] | None,
    search: Callable[[str], list[Hit]],
    quote: Callable[[Hit], Quote],
) -> list[Finding]:
    """One finding per subject (see the module docstring), the most asked first; `quote` turns
    a hit into the passage quoted."""
    if not questions:
        return []
    # the same text asked again counts again; group the distinct texts, most asked first
    counts: dict[str, list[Asked]] = {}
    for q in questions:
        counts.setdefault(" ".join(q.question.split()), []).append(q)
    texts = sorted(counts, key=lambda t: -len(counts[t]))
    vectors = np.asarray(embed(texts), dtype=np.float32) if embed is not None else None
    findings: list[tuple[int, Finding]] = []
    for members in _groups(texts, vectors):
        subject = texts[_central(members, vectors)]
        asks = [a for i in members for a in counts[texts[i]]]
        whys = sorted({a.why for a in asks})
        hits = search(subject)[:NEAREST]
        evidence = tuple(quote(h) for h in hits)
        owners = tuple(dict.fromkeys(q.owner for q in evidence if q.owner))
        examples = tuple(texts[i] for i in members[:EXAMPLES])
        nearest = "; ".join(f"{q.title} ({q.section})" if q.section else q.title for q in evidence)
        findings.append(
            (
                len(asks),
                Finding(
                    "gap",
                    f"People ask: {subject}",
                    f"{len(asks)} question{'s' if len(asks) != 1 else ''} ({', '.join(whys)})"
                    f" with no answer that passed its checks; nearest passages: {nearest or 'none'}",
                    doc_ids=tuple(dict.fromkeys(q.doc_id for q in evidence)),
                    owners=owners,
                    evidence=evidence,
                    examples=examples,
                    count=len(asks),
                ),
            )
        )
    findings.sort(key=lambda t: -t[0])
    return [f for _, f in findings]


def _central(members: list[int], vectors: np.ndarray | None) -> int:
    """The member closest to all the others (the first one without vectors)."""
    if vectors is None or len(members) < 3:
        return members[0]
    sub = vectors[members]
    sub = sub / np.maximum(np.linalg.norm(sub, axis=1, keepdims=True), 1e-9)
    return members[int(np.argmax((sub @ sub.T).sum(axis=1)))]
