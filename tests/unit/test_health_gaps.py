"""How content gaps group their questions (`tether.health.gaps`), without a model: vectors
and cosines are made by hand. Average linkage joins the closest groups first,
so a subject whose questions are each close to a few of the others comes together under a
low cut in any order of asking; two subjects whose questions are not closer than that on
average stay apart."""

from __future__ import annotations

import itertools

import numpy as np

from tether.health.gaps import SAME_SUBJECT_CENTRED, Asked, _agglomerated, _groups, find_gaps


def _two_subjects(within: float, across: float) -> np.ndarray:
    """Cosines of eight questions: 0-3 one subject, 4-7 another; in each subject the pairs
    (0, 1), (2, 3) are close (0.5) and the other pairs `within`; `across` between them."""
    m = np.full((8, 8), across)
    for block in (range(4), range(4, 8)):
        for i, j in itertools.product(block, block):
            m[i, j] = within
    for i, j in ((0, 1), (2, 3), (4, 5), (6, 7)):
        m[i, j] = m[j, i] = 0.5
    np.fill_diagonal(m, 1.0)
    return m


def test_a_subject_in_pairs_comes_together_and_two_subjects_stay_apart() -> None:
    # each subject's pairs are close and its other questions only a little closer than
    # the other subject's: a single pass at the old cut (0.2) left them in pairs
    cosines = _two_subjects(within=0.12, across=-0.05)
    assert sorted(_agglomerated(cosines, SAME_SUBJECT_CENTRED)) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_the_order_of_asking_does_not_change_the_groups() -> None:
    cosines = _two_subjects(within=0.12, across=-0.05)
    for order in ([0, 4, 2, 6, 1, 5, 3, 7], [7, 6, 5, 4, 3, 2, 1, 0]):
        shuffled = cosines[np.ix_(order, order)]
        groups = [sorted(order[i] for i in g) for g in _agglomerated(shuffled, 0.08)]
        assert sorted(groups) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_two_subjects_no_closer_than_the_cut_on_average_are_not_joined() -> None:
    # a look-alike: one close pair across the subjects (0.3), the rest far apart; the
    # groups' mean stays under the cut, so the pair does not pull them together
    cosines = _two_subjects(within=0.12, across=-0.08)
    cosines[3, 4] = cosines[4, 3] = 0.3
    groups = sorted(_agglomerated(cosines, SAME_SUBJECT_CENTRED))
    assert groups == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_groups_read_centred_vectors_and_findings_count_each_subject() -> None:
    # eight questions in two subjects, in pairs, each with words of its own, and a company
    # direction shared by all of them that lifts every cosine: it is taken out first
    rows = np.zeros((8, 15))
    for i in range(8):
        rows[i, 0] = 4.0  # the company
        rows[i, 1 + i // 4] = 1.0  # the subject
        rows[i, 3 + i // 2] = 0.8  # the pair
        rows[i, 7 + i] = 0.8  # the question's own words
    texts = [f"question {i}" for i in range(8)]
    assert sorted(_groups(texts, rows)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    asked = [Asked(t, "refused", n) for n, t in enumerate(texts)]
    found = find_gaps(asked, lambda ts: rows[[texts.index(t) for t in ts]], lambda _q: [],
                      lambda _h: None)  # type: ignore[arg-type,return-value]  # fmt: skip
    assert [f.count for f in found] == [4, 4]
