"""Training the learned claim judge (`tether.verify.learned`): claim–passage pairs made from
real document collections, their alignment features, a logistic regression, the model file.

One command rebuilds `src/tether/verify/judge_model.json`:

    python -m tether.evaluation.judge_training [--out PATH] [--collection DIR ...]

Collections (each ingested into a temporary index without embeddings): the bundled demo
collection, the Maplebrook collection (`bench/data/verifier_heldout/collection`), the
Larkfield documents (`../shared/benchmarks/larkfield`, when present) and the real manuals
that `bench/corpora/setup.py` copies (`/work/corpora/NAME` or `TETHER_CORPORA`, when present).
The judge's held-out claim set (`bench/data/judge_heldout/`) is never read here.

Pairs (`make_pairs`), from each sentence of each chunk (5 to 45 words, not a heading), with
the chunk as the only cited passage, in the chunk's language (EN and FR rules):
- supported: the sentence itself; with "Yes, "/"Oui, " before it; a small number written as
  a word; its first clause when the rest states no condition; a table row said as a sentence
  ("For Students, Single ride is $1.75.");
- unsupported, one per error class: a number replaced by another number of the passage
  (another row, another item) or a near one (`wrong_number`); a table cell of another row or
  column (`wrong_row`, `wrong_column`); a content word swapped for one from another sentence
  (`swapped_entity`); a scope word added (only, all, always, at least, at most, never; EN and
  FR: `quantifier`); a condition or exception removed (`condition_dropped`); a negation added
  or removed, "can" → "cannot", "no longer" (`negation`); a rate's period changed (per day →
  per item: `wrong_period`); a clause of another passage appended (`invented_detail`); a
  heading quoted (`not_a_statement`).
A made pair can be wrong (a swapped word that happens to be a synonym): the labels are the
rule's, not a person's, which is why the judge is measured on claim sets people labelled.

Fitting (`fit`): scikit-learn's LogisticRegression (balanced classes) on standardised
features, the labelled claims weighted `LABELLED_WEIGHT`; the threshold is the one under
which the checker's whole decision (any rule flag, or the judge under the threshold) makes
the fewest false passes plus false alarms on the labelled claims' out-of-fold probabilities
(five folds by document); those rates, the rules' alone, the made pairs' and the errors by
kind are written into the model's `trained` record, with the counts and the seconds the run
took.

What it cannot do: it needs scikit-learn (the `dev` extra), which the judge itself does not;
the made errors are those the rules know how to make, so the judge learns to see those.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.answering.context import header
from tether.evaluation.questions import demo_claims, demo_collection, larkfield_collection
from tether.evaluation.verifier_eval import check_item, load_claims
from tether.ingest.sync import sync
from tether.language.number_words import training_words
from tether.language.stems import content_stem
from tether.linear import fit_scaled
from tether.protocols import Store
from tether.stores.sqlite import SqliteStore
from tether.text import fold, fold_fast, sentences
from tether.types import Answer, Chunk, Claim, Context, Passage
from tether.verify.align import FEATURES
from tether.verify.check import check_answer
from tether.verify.learned import MODEL_PATH, JudgeModel
from tether.verify.passages import VerifierCache

__all__ = ["Pair", "features_of", "fit", "main", "make_pairs", "training_collections"]

REPO = Path(__file__).resolve().parents[3]
SEED = 20261201


@dataclass(frozen=True)
class Pair:
    """A made claim, the chunk it cites, its label (True: supported) and how it was made."""

    claim: str
    chunk: Chunk
    supported: bool
    kind: str


# ------------------------------------------------------------------ the rules that make pairs

_NUM = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)?)(?![\w]|[.,]\d)")
_WORDS = {"en": training_words("en"), "fr": training_words("fr")}  # 0 to 12
_QUANT = {
    "en": [("before_number", "at least "), ("before_number", "at most "),
           ("before_number", "only "), ("before_number", "more than "),
           ("after_modal", "always "), ("after_modal", "only "), ("after_modal", "never "),
           ("start", "All ")],
    "fr": [("before_number", "au moins "), ("before_number", "au plus "),
           ("before_number", "seulement "), ("before_number", "plus de "),
           ("after_modal", "toujours "), ("after_modal", "seulement "), ("start", "Tous ")],
}  # fmt: skip
_MODALS = {
    "en": r"\b(can|may|must|will|should|is|are)\b",
    "fr": r"\b(peut|peuvent|doit|doivent|est|sont)\b",
}
_NEGATE = {
    "en": [(r"\bcan\b", "cannot"), (r"\bcannot\b", "can"), (r"\bis not\b", "is"),
           (r"\bare not\b", "are"), (r"\bis\b", "is not"), (r"\bare\b", "are not"),
           (r"\bmust\b", "must not"), (r"\bwill\b", "will not"), (r"\bdoes not\b", "does"),
           (r"\bdo not\b", "do"), (r"\bmay\b", "may not"), (r"\bno longer\b", "still"),
           (r"\bnever\b", "always")],
    "fr": [(r"\bpeut\b", "ne peut pas"), (r"\bpeuvent\b", "ne peuvent pas"),
           (r"\bne peut pas\b", "peut"), (r"\best\b", "n'est pas"), (r"\bsont\b", "ne sont pas"),
           (r"\bn'est pas\b", "est"), (r"\bne sont pas\b", "sont"), (r"\bdoit\b", "ne doit pas"),
           (r"\bn'est plus\b", "est toujours"), (r"\best\b", "n'est plus")],
}  # fmt: skip
_PERIODS = {
    "en": ["per day", "per item", "per month", "per ride", "per person", "per year", "per hour",
           "per order", "per visit", "per week"],
    "fr": ["par jour", "par article", "par mois", "par trajet", "par personne", "par année",
           "par heure", "par commande", "par semaine"],
}  # fmt: skip
_CONDITION = re.compile(
    r"(?:,\s*|\s)(?:unless|if|except|provided|as long as|only if|only when|sauf|si|à condition|"
    r"à moins|pourvu)\b[^.;]*",
    re.IGNORECASE,
)
_LEAD_CONDITION = re.compile(r"^(?:If|Unless|Except|Si|Sauf|À moins)\b[^,]*,\s*", re.IGNORECASE)
_CONTENT = re.compile(r"\b[^\W\d_]{4,}\b")


def _sentences(chunk: Chunk) -> list[str]:
    heads = {fold(h).strip(" #") for h in (*chunk.heading_path, chunk.meta.title)}
    out = []
    for s, e in sentences(chunk.text):
        text = " ".join(chunk.text[s:e].split())
        n = len(text.split())
        if 5 <= n <= 45 and "|" not in text and fold(text).strip(" #.") not in heads:
            out.append(text)
    return out


def _rows(chunk: Chunk) -> list[list[str]]:
    """A chunk's table as rows of cells (the header row first), or []."""
    rows = []
    for line in chunk.text.splitlines():
        if " | " in line and not re.fullmatch(r"[\s|:-]+", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    if len(rows) < 3 or len(rows[0]) < 2:
        return []
    return [r for r in rows if len(r) == len(rows[0])]


def _number_word(text: str, lang: str, rng: random.Random) -> str | None:
    spots = [m for m in _NUM.finditer(text) if m.group(1).isdigit() and 2 <= int(m.group(1)) <= 12]
    if not spots:
        return None
    m = rng.choice(spots)
    return text[: m.start()] + _WORDS[lang][int(m.group(1))] + text[m.end() :]


def _other_number(text: str, pool: Sequence[str], rng: random.Random) -> str | None:
    spots = list(_NUM.finditer(text))
    if not spots:
        return None
    m = rng.choice(spots)
    raw = m.group(1)
    mine = {x.group(1) for x in spots}
    others = [n for n in pool if n not in mine and n.replace(",", ".") != raw.replace(",", ".")]
    if others and rng.random() < 0.6:
        new = rng.choice(others)
    else:
        value = float(raw.replace(",", "."))
        delta = rng.choice([1, 2, 5, 10]) if value >= 3 else 1
        new_value = value + delta * rng.choice([-1, 1])
        if new_value <= 0:
            new_value = value + delta
        new = str(int(new_value)) if raw.isdigit() else f"{new_value:.2f}"
        if new in mine:
            return None
    return text[: m.start()] + new + text[m.end() :]


def _swap_word(text: str, pool: Sequence[str], rng: random.Random) -> str | None:
    mine = [m for m in _CONTENT.finditer(text) if content_stem(fold_fast(m.group(0)))]
    have = {content_stem(fold_fast(w)) for w in _CONTENT.findall(text)}
    others = [w for w in pool if (st := content_stem(fold_fast(w))) and st not in have]
    if not mine or not others:
        return None
    m = rng.choice(mine)
    new = rng.choice(others)
    if m.group(0)[0].isupper():
        new = new[0].upper() + new[1:]
    return text[: m.start()] + new + text[m.end() :]


def _quantifier(text: str, lang: str, rng: random.Random) -> str | None:
    options = list(_QUANT[lang])
    rng.shuffle(options)
    for where, word in options:
        if word.strip().lower() in text.lower():
            continue
        if where == "before_number":
            m = _NUM.search(text)
            if m:
                return text[: m.start()] + word + text[m.start() :]
        elif where == "after_modal":
            m = re.search(_MODALS[lang], text)
            if m:
                return text[: m.end()] + " " + word.strip() + text[m.end() :]
        elif where == "start" and re.match(r"[A-Z][a-z]+s\b", text):
            return word + text[0].lower() + text[1:]
    return None


def _drop_condition(text: str) -> str | None:
    m = _LEAD_CONDITION.match(text)
    if m:
        rest = text[m.end() :]
        return rest[:1].upper() + rest[1:] if rest else None
    m = _CONDITION.search(text)
    if m and len(text[: m.start()].split()) >= 4:
        return (text[: m.start()] + text[m.end() :]).strip()
    return None


def _first_clause(text: str) -> str | None:
    if _CONDITION.search(text) or _LEAD_CONDITION.match(text):
        return None
    for sep in ("; ", ", and ", ", et ", ", but "):
        if sep in text:
            head = text.split(sep, 1)[0].strip()
            if len(head.split()) >= 4:
                return head + "."
    return None


def _negate(text: str, lang: str, rng: random.Random) -> str | None:
    rules = list(_NEGATE[lang])
    rng.shuffle(rules)
    for pattern, repl in rules:
        m = re.search(pattern, text)
        if m:
            return text[: m.start()] + repl + text[m.end() :]
    return None


def _period(text: str, lang: str, rng: random.Random) -> str | None:
    periods = _PERIODS[lang]
    for p in periods:
        if p in text:
            return text.replace(p, rng.choice([q for q in periods if q != p]), 1)
    m = _NUM.search(text)
    if m and re.search(r"[$€£]|\bdollars?\b|\$", text):
        end = text.find(" ", m.end())
        end = len(text.rstrip(".")) if end < 0 else end
        return text[:end] + " " + rng.choice(periods) + text[end:]
    return None


_SYNONYMS = {
    "en": {
        "can": "may", "may": "can", "must": "has to", "free": "at no charge", "buy": "purchase",
        "purchase": "buy", "customers": "clients", "customer": "client", "receive": "get",
        "allowed": "permitted", "permitted": "allowed", "required": "needed", "begin": "start",
        "start": "begin", "items": "products", "item": "product", "store": "shop",
        "shop": "store", "help": "assist", "contact": "reach", "provide": "give",
        "give": "provide", "keep": "hold", "fee": "charge", "charge": "fee", "before": "prior to",
        "after": "following", "use": "make use of", "repair": "fix", "fix": "repair",
        "damaged": "broken", "request": "ask for", "send": "ship", "book": "reserve",
        "reserve": "book", "reservation": "booking", "children": "kids", "also": "as well",
        "about": "around", "show": "present", "cancel": "call off", "staff": "employees",
        "employees": "staff", "members": "cardholders", "need": "require", "get": "receive",
        "ends": "finishes", "closed": "shut", "open": "available", "price": "cost",
    },
    "fr": {
        "gratuit": "sans frais", "gratuite": "sans frais", "acheter": "se procurer",
        "client": "usager", "clients": "usagers", "demander": "solliciter",
        "envoyer": "expédier", "réparer": "remettre en état", "billet": "titre",
        "réserver": "retenir", "utiliser": "employer", "commencer": "débuter",
        "terminer": "finir", "aussi": "également", "également": "aussi",
        "environ": "à peu près", "avant": "au préalable de", "magasin": "boutique",
        "boutique": "magasin", "article": "produit", "articles": "produits", "frais": "coûts",
        "personnel": "employés", "employés": "personnel", "recevoir": "obtenir",
        "obtenir": "recevoir", "permis": "autorisé", "autorisé": "permis", "aider": "assister",
    },
}  # fmt: skip
_FRAMES = {
    "en": ["According to the policy, ", "Under the rules, ", "As stated, ", "Note that "],
    "fr": ["Selon la politique, ", "D'après les règles, ", "Comme indiqué, ", "À noter : "],
}


def _synonyms(text: str, lang: str, rng: random.Random) -> str | None:
    """The sentence with one to three words replaced by a synonym (a true paraphrase)."""
    table = _SYNONYMS[lang]
    spots = [m for m in re.finditer(r"\b[^\W\d_]+\b", text) if m.group(0).lower() in table]
    if not spots:
        return None
    chosen = sorted(
        rng.sample(spots, min(len(spots), rng.choice([1, 2, 3]))), key=lambda m: m.start()
    )
    out, last = [], 0
    for m in chosen:
        new = table[m.group(0).lower()]
        if m.group(0)[0].isupper():
            new = new[0].upper() + new[1:]
        out += [text[last : m.start()], new]
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def _framed(text: str, lang: str, rng: random.Random) -> str:
    return rng.choice(_FRAMES[lang]) + text[0].lower() + text[1:]


def _invent(text: str, clauses: Sequence[str], rng: random.Random) -> str | None:
    if not clauses:
        return None
    extra = rng.choice(clauses).strip().rstrip(".")
    base = text.rstrip(". ")
    return f"{base}, {extra}."


_ROW_SAYINGS = {
    "en": ["For {}, {} is {}.", "{}: {} costs {}.", "For {}, the {} comes to {}.",
           "{} pay for {} {}.", "{} - {}: {}."],
    "fr": ["Pour {}, {} : {}.", "Pour {}, {} coûte {}.", "{} : {} à {}.", "{}, {} : {}."],
}  # fmt: skip


def make_pairs(chunks: Sequence[Chunk], rng: random.Random) -> list[Pair]:
    """Supported and unsupported pairs from `chunks` (see the module docstring)."""
    pairs: list[Pair] = []
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    all_clauses = [
        m.group(0).strip(" ,")
        for c in chunks
        for m in _CONDITION.finditer(c.text)
        if 3 <= len(m.group(0).split()) <= 12
    ]
    for chunk in chunks:
        lang = "fr" if chunk.meta.language == "fr" else "en"
        sents = _sentences(chunk)
        doc_text = " ".join(c.text for c in by_doc[chunk.doc_id])
        numbers = [m.group(1) for m in _NUM.finditer(chunk.text)]
        words = [m.group(0) for m in _CONTENT.finditer(doc_text)]

        def add(text: str | None, ok: bool, kind: str, chunk: Chunk = chunk) -> None:
            if text and text.strip():
                pairs.append(Pair(" ".join(text.split()), chunk, ok, kind))

        for sent in sents:
            add(sent, True, "copy")
            if rng.random() < 0.3:
                add(("Yes, " if lang == "en" else "Oui, ") + sent[0].lower() + sent[1:], True,
                    "yes_copy")  # fmt: skip
            add(_number_word(sent, lang, rng), True, "number_words")
            add(_synonyms(sent, lang, rng), True, "synonyms")
            if rng.random() < 0.25:
                add(_framed(sent, lang, rng), True, "framed")
            if rng.random() < 0.5:
                changed = _synonyms(sent, lang, rng)
                add(changed and _other_number(changed, numbers, rng), False, "wrong_number")
                add(changed and _swap_word(changed, words, rng), False, "swapped_entity")
            add(_first_clause(sent), True, "first_clause")
            add(_other_number(sent, numbers, rng), False, "wrong_number")
            add(_swap_word(sent, words, rng), False, "swapped_entity")
            add(_quantifier(sent, lang, rng), False, "quantifier")
            add(_drop_condition(sent), False, "condition_dropped")
            add(_negate(sent, lang, rng), False, "negation")
            add(_period(sent, lang, rng), False, "wrong_period")
            if rng.random() < 0.5:
                add(_invent(sent, all_clauses, rng), False, "invented_detail")
        rows = _rows(chunk)
        if rows:
            head, body = rows[0], rows[1:]
            for r, row in enumerate(body):
                for j in range(1, len(row)):
                    if not row[j] or not re.search(r"\d", row[j]):
                        continue
                    say = rng.choice(_ROW_SAYINGS[lang])
                    add(say.format(row[0], head[j].lower(), row[j]), True, "table_row")
                    other_rows = [b for k, b in enumerate(body) if k != r and b[j] != row[j]]
                    if other_rows:
                        wrong = rng.choice(other_rows)[j]
                        add(say.format(row[0], head[j].lower(), wrong), False, "wrong_row")
                    other_cols = [k for k in range(1, len(row)) if k != j and row[k] != row[j]
                                  and re.search(r"\d", row[k])]  # fmt: skip
                    if other_cols:
                        k = rng.choice(other_cols)
                        add(say.format(row[0], head[j].lower(), row[k]), False, "wrong_column")
        for heading in chunk.heading_path[-1:]:
            if 1 <= len(heading.split()) <= 8:
                add(heading, False, "not_a_statement")
    return pairs


# ------------------------------------------------------------------------- features, fitting


class _Recorder:
    """A judge that records the alignment features it is shown and passes every claim."""

    aligned = True
    name = "recorder"
    threshold = 0.5

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.evidence = ""

    def judge(
        self,
        features: dict[str, float],
        claim: str,
        passages: Sequence[str],
        evidence: str = "",
        flagged: bool = False,
    ) -> float:
        self.seen = dict(features)
        self.evidence = evidence
        return 1.0

    def score(self, claim: str, passages: Sequence[str]) -> float:
        return 1.0


def features_of(pair: Pair, store: Store | None = None, cache: Any = None) -> dict[str, float]:
    """The features of a made pair, read through `check_answer` as a claim is (with `store`,
    the cited document's other sections are known, as in a real index)."""
    recorder = _Recorder()
    chunk = pair.chunk
    context = Context((Passage(chunk, header(chunk), 0, 1),))
    answer = Answer(True, pair.claim, (Claim(pair.claim, (chunk.chunk_id,)),))
    check_answer(answer, store, context, "", audience="staff",
                 language=chunk.meta.language or "en", judge=recorder, cache=cache)  # fmt: skip
    return recorder.seen


def hash_fold(doc: str, folds: int = 5) -> int:
    """The fold of a document: a stable hash of its key (the same on every run)."""
    return zlib.crc32(doc.encode("utf-8")) % folds


def fit(
    rows: Sequence[tuple[dict[str, float], bool, str, str, float]], seconds_so_far: float = 0.0
) -> JudgeModel:
    """A logistic regression on (features, supported, kind, doc key, weight) rows. Five
    folds by document give every row an out-of-fold probability; the threshold is the one
    under which the checker's decision (a rule flag, or the judge under the threshold) makes
    the fewest false passes plus false alarms on the labelled claims' out-of-fold
    probabilities (on every row when fewer than 50 are labelled); the model is then fitted on
    every row."""
    import numpy as np

    began = time.perf_counter()
    x = np.array([[r[0].get(f, 0.0) for f in FEATURES] for r in rows], dtype=np.float64)
    y = np.array([1 if r[1] else 0 for r in rows])
    w = np.array([r[4] for r in rows], dtype=np.float64)
    docs = sorted({r[3] for r in rows})

    def model(xs: np.ndarray, ys: np.ndarray, ws: np.ndarray) -> tuple[Any, Any]:
        return fit_scaled(xs, ys, 1.0, weights=ws)

    # out-of-fold probabilities (5 folds by document) for choosing the threshold on the
    # claims people labelled, and the held-back figures on the made pairs of one fold
    fold = np.array([hash_fold(r[3]) for r in rows])
    oof = np.zeros(len(rows))
    for k in range(5):
        part = fold == k
        scaler, lr = model(x[~part], y[~part], w[~part])
        oof[part] = lr.predict_proba(scaler.transform(x[part]))[:, 1]
    labelled = np.array([r[2].startswith("labelled:") for r in rows])
    pick = labelled if labelled.sum() >= 50 else np.ones(len(rows), dtype=bool)
    # what the checker decides: a rule flag, or the judge under the threshold
    col = {f: i for i, f in enumerate(FEATURES)}
    ruled = (x[:, col["clue_flags"]] > 0) | (x[:, col["not_statement"]] > 0)
    for name in ("quantifier_added", "condition_dropped", "period_other", "period_absent"):
        ruled |= x[:, col[name]] > 0
    p, yt, rt = oof[pick], y[pick], ruled[pick]

    def rates(t: float) -> tuple[float, float]:
        flagged = rt | (p < t)
        neg, pos = yt == 0, yt == 1
        fp = float(np.mean(~flagged[neg])) if neg.any() else 0.0
        fa = float(np.mean(flagged[pos])) if pos.any() else 0.0
        return fp, fa

    best = (3.0, 0.5)
    for t in np.linspace(0.02, 0.9, 45):
        fp, fa = rates(float(t))
        best = min(best, (fp + fa, float(t)))
    threshold = round(best[1], 3)
    fp_rate, fa_rate = rates(threshold)
    rules_fp, rules_fa = rates(0.0)
    made = ~labelled
    p_made, y_made = oof[made], y[made]
    made_fp = float(np.mean(p_made[y_made == 0] >= threshold)) if (y_made == 0).any() else 0.0
    made_fa = float(np.mean(p_made[y_made == 1] < threshold)) if (y_made == 1).any() else 0.0
    kinds_all = [r[2] for r in rows]
    wrong = Counter(
        k for k, pi, yi in zip(kinds_all, oof, y, strict=True) if (pi >= threshold) != bool(yi)
    )
    total = Counter(kinds_all)
    scaler, lr = model(x, y, w)
    return JudgeModel.fitted(
        FEATURES,
        scaler,
        lr,
        threshold,
        {
            "pairs": len(rows),
            "supported": int(y.sum()),
            "unsupported": int(len(y) - y.sum()),
            "documents": len(docs),
            "kinds": dict(sorted(Counter(r[2] for r in rows).items())),
            "threshold_chosen_on": "labelled claims, out of fold"
            if pick is labelled
            else "every pair, out of fold",
            "out_of_fold_labelled_rules_only": [round(rules_fp, 4), round(rules_fa, 4)],
            "out_of_fold_labelled_false_passes": round(fp_rate, 4),
            "out_of_fold_labelled_false_alarms": round(fa_rate, 4),
            "out_of_fold_made_false_passes": round(made_fp, 4),
            "out_of_fold_made_false_alarms": round(made_fa, 4),
            "out_of_fold_wrong_by_kind": {k: f"{wrong[k]}/{total[k]}" for k in sorted(total)},
            "seconds": round(seconds_so_far + time.perf_counter() - began, 1),
            "seed": SEED,
        },
    )


# ------------------------------------------------------------------------------ the command


LABELLED_WEIGHT = 5.0  # a claim a person labelled counts as this many made pairs


def training_collections() -> list[tuple[str, Path, list[Path]]]:
    """(name, folder, labelled claim files) of every training collection present here: the
    demo collection with the bundled claims, Maplebrook and Larkfield with theirs (all three
    tuned on), and the real manuals (no claims)."""
    heldout = REPO / "bench" / "data" / "verifier_heldout"
    out: list[tuple[str, Path, list[Path]]] = [
        ("demo", demo_collection(), [Path(str(p)) for p in demo_claims()])
    ]
    if (heldout / "collection").is_dir():
        out.append(("maplebrook", heldout / "collection", [heldout / "claims-own.jsonl"]))
    lark = REPO.parent / "shared" / "benchmarks" / "larkfield"
    if lark.is_dir():
        staged = Path(tempfile.mkdtemp(prefix="tether-larkfield-"))
        out.append(("larkfield", larkfield_collection(lark, staged),
                    [heldout / "claims-larkfield.jsonl"]))  # fmt: skip
    corpora = Path(os.environ.get("TETHER_CORPORA", "/work/corpora"))
    for name in ("python", "postgresql", "sqlite", "git"):
        if (corpora / name).is_dir():
            out.append((name, corpora / name, []))
    return out


@contextlib.contextmanager
def _indexed(folder: Path) -> Iterator[Store]:
    """The folder ingested into a temporary index without embeddings."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "index.sqlite")
        try:
            sync(store, folder, default_access="public")
            yield store
        finally:
            store.close()


def labelled_rows(
    store: Store, files: Sequence[Path], name: str
) -> list[tuple[dict[str, float], bool, str, str, float]]:
    """Feature rows of labelled claims whose check reaches the judge (a claim with only an
    exact flag, such as a made-up ID, never does)."""
    rows: list[tuple[dict[str, float], bool, str, str, float]] = []
    if not files:
        return rows
    cache: dict = {}
    checked = VerifierCache()
    for item in load_claims(list(files)):
        recorder = _Recorder()
        check_item(store, item, cache, recorder, None, checked)
        if recorder.seen:
            doc = (item.get("cites") or [{}])[0].get("doc_id", item["id"])
            rows.append((recorder.seen, item["label"] == "supported",
                         "labelled:" + item.get("kind", ""), f"{name}/{doc}", LABELLED_WEIGHT))  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tether.evaluation.judge_training",
        description="Rebuild the learned claim judge's model from pairs made on real collections"
        " and the tuned-on labelled claim sets.",
    )
    parser.add_argument("--out", type=Path, default=MODEL_PATH, help="where to write the model")
    parser.add_argument(
        "--collection",
        type=Path,
        action="append",
        default=[],
        help="a collection folder (default: every training collection present)",
    )
    parser.add_argument(
        "--no-labelled",
        action="store_true",
        help="made pairs only (leave the labelled claim sets out)",
    )
    parser.add_argument("--max-pairs-per-collection", type=int, default=6000)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    rng = random.Random(SEED)
    sets: list[tuple[str, Path, list[Path]]] = [
        (p.name, p, []) for p in args.collection
    ] or training_collections()
    rows: list[tuple[dict[str, float], bool, str, str, float]] = []
    for name, folder, files in sets:
        with _indexed(folder) as store:
            chunks = store.chunks()
            pairs = make_pairs(chunks, rng)
            if len(pairs) > args.max_pairs_per_collection:
                pairs = rng.sample(pairs, args.max_pairs_per_collection)
            cache = VerifierCache()
            for pair in pairs:
                rows.append((features_of(pair, store, cache), pair.supported, pair.kind,
                             f"{name}/{pair.chunk.doc_id}", 1.0))  # fmt: skip
            labelled = [] if args.no_labelled else labelled_rows(store, files, name)
            rows += labelled
        print(f"{name}: {len(chunks)} chunks, {len(pairs)} made pairs, {len(labelled)} labelled"
              " claims", file=sys.stderr)  # fmt: skip
    model = fit(rows, time.perf_counter() - began)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    t = model.trained
    print(
        f"wrote {args.out}: {t['pairs']} pairs, threshold {model.threshold}; out of fold, on"
        f" the labelled claims: false passes {t['out_of_fold_labelled_false_passes']:.1%},"
        f" false alarms {t['out_of_fold_labelled_false_alarms']:.1%}; {t['seconds']} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
