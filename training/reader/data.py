"""The reader's training examples: the written sets, the health sets' labelled pairs, and
rule-made variants of both (FactCC-style perturbations by error class).

Every example is `Example(task, a, sents, order, label, ...)`: text A (claim, sentence or
question), text B as sentences with the order they are packed in (best first, by e5 cosine to
A when a vector function is given), and the label's index in `TASKS[task][1]`. The trainer
turns them into ids with the runtime's own `build_pair` / `pack_evidence`.

What it cannot do: the rule-made variants are only as right as their rules (a number swapped
in a claim that says "or more" can still be true); they are marked `made="rule"` so their
share and their effect can be measured apart.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from tether.embeddings.reader import TASKS
from tether.types import Chunk, DocMeta
from tether.verify.passages import VerifierCache

LABEL = {t: {name: i for i, name in enumerate(v[1])} for t, v in TASKS.items()}


@dataclass
class Example:
    task: str
    a: str
    sents: list[str]
    label: int
    source: str
    kind: str = ""
    lang: str = ""
    made: str = "written"
    order: list[int] | None = None
    group: str = ""  # the item this was made from (variants share their parent's group)
    extra: dict = field(default_factory=dict)


_CACHE = VerifierCache()


def passage_sentences(text: str, title: str = "", language: str = "en") -> list[str]:
    """The passage's sentences as the verifier reads them (table rows with their header)."""
    chunk = Chunk(
        chunk_id="t" + str(abs(hash(text)) % 10**12),
        meta=DocMeta(doc_id="train", version="1", title=title, language=language),
        text=text, heading_path=(), start=0, end=len(text), ordinal=0,
    )  # fmt: skip
    out = [s.text.strip() for s in _CACHE.prepare(chunk).sentences if s.text.strip()]
    return out or [text]


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a writer's half-written last line
    return rows


def written(path: Path, name: str) -> list[Example]:
    """One written set's claims, pairs and questions."""
    passages = {p["pid"]: p for p in _jsonl(path / "passages.jsonl") if "pid" in p}
    sents = {
        pid: passage_sentences(p.get("text", ""), "", p.get("lang", "en"))
        for pid, p in passages.items()
    }
    out: list[Example] = []
    for c in _jsonl(path / "claims.jsonl"):
        pids = [p for p in c.get("pids", []) if p in sents]
        if not pids or c.get("label") not in LABEL["support"] or not c.get("claim"):
            continue
        ss = [s for p in pids for s in sents[p]]
        out.append(Example("support", c["claim"], ss, LABEL["support"][c["label"]], name,
                           c.get("kind", ""), c.get("lang", ""), group=f"{name}:{c.get('id')}",
                           extra={"pids": pids, "domain": passages[pids[0]].get("domain", "")}))  # fmt: skip
    for p in _jsonl(path / "pairs.jsonl"):
        if p.get("label") not in LABEL["conflict"] or not p.get("a") or not p.get("b"):
            continue
        a = _titled(p.get("a_title", ""), p["a"])
        b = _titled(p.get("b_title", ""), p["b"])
        out.append(Example("conflict", a, [b], LABEL["conflict"][p["label"]], name,
                           p.get("kind", ""), p.get("lang_a", ""), group=f"{name}:{p.get('id')}",
                           extra={"a_raw": p["a"], "b_raw": p["b"]}))  # fmt: skip
    for q in _jsonl(path / "questions.jsonl"):
        pid = q.get("pid")
        if pid not in sents or q.get("label") not in LABEL["relevance"] or not q.get("question"):
            continue
        title = passages[pid].get("title", "")
        out.append(Example("relevance", q["question"], ([title] if title else []) + sents[pid],
                           LABEL["relevance"][q["label"]], name, q.get("kind", ""), q.get("lang", ""),
                           group=f"{name}:{q.get('id')}",
                           extra={"pid": pid, "domain": passages[pid].get("domain", "")}))  # fmt: skip
    for e in out:
        e.extra.setdefault("passages", passages)
    return out


def _titled(title: str, text: str) -> str:
    return f"{title}: {text}" if title else text


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end > 0:
            try:
                return yaml.safe_load(text[3:end]) or {}
            except yaml.YAMLError:
                return {}
    return {}


def health_pairs(root: Path, members: Iterable[str], name: str) -> list[Example]:
    """The health sets' labelled contradictions (contradiction) and look-alikes (consistent),
    as sentence pairs with their documents' titles. Look-alikes between versions of one
    document are left out: the finder never compares a document with its own versions."""
    out: list[Example] = []
    for member in members:
        base = root / member
        faults = json.loads((base / "faults.json").read_text(encoding="utf-8"))
        titles: dict[str, str] = {}
        for f in (base / "docs").rglob("*"):
            if f.is_file() and f.suffix in (".md", ".markdown"):
                fm = _front_matter(f)
                if fm.get("doc_id"):
                    titles[str(fm["doc_id"])] = str(fm.get("title", ""))
        for key, label in (("contradictions", "contradiction"), ("distractors", "consistent")):
            for item in faults.get(key, []):
                a, b = item.get("a", {}), item.get("b", {})
                if not a.get("quote") or not b.get("quote"):
                    continue
                if key == "distractors" and a.get("doc_id") == b.get("doc_id"):
                    continue
                out.append(Example(
                    "conflict", _titled(titles.get(a.get("doc_id", ""), ""), a["quote"]),
                    [_titled(titles.get(b.get("doc_id", ""), ""), b["quote"])],
                    LABEL["conflict"][label], name, item.get("style", item.get("kind", "")), "en",
                    group=f"{name}:{member}:{item.get('id')}",
                    extra={"a_raw": a["quote"], "b_raw": b["quote"]},
                ))  # fmt: skip
    return out


# ----------------------------------------------------------------------------- rule-made

_NUM = re.compile(r"(?<![\w.,])(\d{1,3}(?:[ ,.\u202f\u00a0]\d{3})+|\d+(?:[.,]\d+)?)(?![\w])")
_SWAPS_EN = [
    ("before", "after"),
    ("minimum", "maximum"),
    ("at least", "at most"),
    ("always", "never"),
    ("all", "some"),
    ("more than", "less than"),
    ("earliest", "latest"),
    ("increase", "decrease"),
    ("free", "charged"),
    ("refundable", "non-refundable"),
    ("days", "weeks"),
    ("hours", "minutes"),
    ("weekdays", "weekends"),
    ("monthly", "yearly"),
    ("per day", "per week"),
    ("can", "cannot"),
    ("must", "need not"),
    ("may", "may not"),
    ("is", "is not"),
    ("are", "are not"),
    ("working days", "calendar days"),
    ("included", "not included"),
    ("only", "also"),
]
_SWAPS_FR = [
    ("avant", "après"),
    ("minimum", "maximum"),
    ("au moins", "au plus"),
    ("toujours", "jamais"),
    ("tous", "certains"),
    ("plus de", "moins de"),
    ("gratuit", "payant"),
    ("gratuite", "payante"),
    ("jours", "semaines"),
    ("heures", "minutes"),
    ("peut", "ne peut pas"),
    ("doit", "ne doit pas"),
    ("est", "n'est pas"),
    ("sont", "ne sont pas"),
    ("par jour", "par semaine"),
    ("jours ouvrables", "jours civils"),
    ("mensuel", "annuel"),
    ("inclus", "exclus"),
    ("remboursable", "non remboursable"),
    ("seulement", "aussi"),
]


def _swap_word(text: str, lang: str, rng: random.Random) -> tuple[str, str] | None:
    pairs = _SWAPS_FR if lang == "fr" else _SWAPS_EN
    cands = []
    for x, y in pairs:
        for a, b in ((x, y), (y, x)):
            if re.search(rf"(?<![\w']){re.escape(a)}(?![\w'])", text, re.I):
                cands.append((a, b))
    if not cands:
        return None
    a, b = rng.choice(cands)
    new = re.sub(rf"(?<![\w']){re.escape(a)}(?![\w'])", b, text, count=1, flags=re.I)
    return (new, f"{a}→{b}") if new != text else None


def _swap_number(text: str, pool: list[str], rng: random.Random) -> tuple[str, str] | None:
    nums = list(_NUM.finditer(text))
    if not nums:
        return None
    m = rng.choice(nums)
    old = m.group(0)
    others = [p for p in pool if p != old]
    if others and rng.random() < 0.6:
        new = rng.choice(others)  # a number the passage holds elsewhere (another row, column)
    else:
        try:
            v = float(
                old.replace(",", ".").replace(" ", "").replace("\u202f", "").replace("\u00a0", "")
            )
        except ValueError:
            return None
        f = rng.choice([0.5, 2, 1.5, 0.75, 3, 10])
        nv = v * f if v > 3 else v + rng.choice([1, 2, 3])
        new = str(round(nv)) if nv >= 1 else f"{nv:.2f}"
        if new == old:
            new = str(int(v) + 1)
    return text[: m.start()] + new + text[m.end() :], f"{old}→{new}"


def variants(examples: list[Example], rng: random.Random, per_item: int = 4) -> list[Example]:
    """Rule-made variants (see the module docstring): for each supported claim, number,
    word and polarity swaps (contradicted) and the same claim against a passage of its domain
    that is not its own (nei); for each sentence pair, the pair reversed, and for each
    consistent pair a swapped copy of one side (contradiction); for each passage sentence,
    itself (supported) and a swapped copy (contradicted)."""
    out: list[Example] = []
    by_domain: dict[tuple[str, str], list[str]] = {}
    for e in examples:
        if e.task == "support" and e.extra.get("domain"):
            for pid in e.extra.get("pids", []):
                key = (e.source, e.extra["domain"])
                if pid not in by_domain.setdefault(key, []):
                    by_domain[key].append(pid)
    seen_pass: set[tuple[str, str]] = set()
    for e in examples:
        if e.task == "support":
            pool = [m.group(0) for s in e.sents for m in _NUM.finditer(s)]
            lang = e.lang or "en"
            if e.label == LABEL["support"]["supported"]:
                made = 0
                for _ in range(per_item * 2):
                    if made >= per_item - 1:
                        break
                    r = (
                        _swap_number(e.a, pool, rng)
                        if rng.random() < 0.5
                        else _swap_word(e.a, lang, rng)
                    )
                    if r is None:
                        continue
                    out.append(Example("support", r[0], e.sents, LABEL["support"]["contradicted"],
                                       e.source, "rule:" + r[1], lang, "rule", e.order, e.group))  # fmt: skip
                    made += 1
                key = (e.source, e.extra.get("domain", ""))
                others = [p for p in by_domain.get(key, []) if p not in e.extra.get("pids", [])]
                passages = e.extra.get("passages", {})
                if others and passages:
                    pid = rng.choice(others)
                    text = passages[pid].get("text", "")
                    out.append(Example("support", e.a, passage_sentences(text, "", passages[pid].get("lang", "en")),
                                       LABEL["support"]["nei"], e.source, "rule:other_passage", lang,
                                       "rule", None, e.group))  # fmt: skip
            # sentences of its passages: themselves and a swapped copy
            for pid in e.extra.get("pids", []):
                if (e.source, pid) in seen_pass:
                    continue
                seen_pass.add((e.source, pid))
                passages = e.extra.get("passages", {})
                plang = passages.get(pid, {}).get("lang", "en")
                sents = passage_sentences(passages.get(pid, {}).get("text", ""), "", plang)
                for s in rng.sample(sents, min(2, len(sents))):
                    if len(s) < 25:
                        continue
                    out.append(Example("support", s, sents, LABEL["support"]["supported"],
                                       e.source, "rule:copy", plang, "rule", None, f"{e.source}:{pid}"))  # fmt: skip
                    r = _swap_number(s, pool, rng) if _NUM.search(s) else _swap_word(s, plang, rng)
                    if r is not None:
                        out.append(Example("support", r[0], sents, LABEL["support"]["contradicted"],
                                           e.source, "rule:" + r[1], plang, "rule", None, f"{e.source}:{pid}"))  # fmt: skip
        elif e.task == "conflict":
            out.append(Example("conflict", e.sents[0], [e.a], e.label, e.source, e.kind, e.lang,
                               "rule", None, e.group))  # fmt: skip
            if e.label == LABEL["conflict"]["consistent"]:
                raw = e.extra.get("b_raw", "")
                r = (
                    _swap_number(e.sents[0], [], rng)
                    if _NUM.search(raw)
                    else _swap_word(e.sents[0], e.lang or "en", rng)
                )
                if r is not None:
                    out.append(Example("conflict", e.a, [r[0]], LABEL["conflict"]["contradiction"],
                                       e.source, "rule:" + r[1], e.lang, "rule", None, e.group))  # fmt: skip
        elif e.task == "relevance" and e.label == LABEL["relevance"]["answers"]:
            # the question against a passage of another domain: unrelated
            passages = e.extra.get("passages", {})
            others = [p for p, v in passages.items() if v.get("domain") != e.extra.get("domain")]
            if others:
                pid = rng.choice(others)
                v = passages[pid]
                out.append(Example("relevance", e.a, ([v.get("title", "")] if v.get("title") else [])
                                   + passage_sentences(v.get("text", ""), "", v.get("lang", "en")),
                                   LABEL["relevance"]["unrelated"], e.source, "rule:other_domain",
                                   e.lang, "rule", None, e.group))  # fmt: skip
    return out


def rank_by_vectors(
    examples: list[Example], embed: Callable[[list[str], bool], np.ndarray]
) -> None:
    """Set each example's packing order: B's sentences by e5 cosine to A, best first (the
    conflict pairs have one sentence and keep theirs)."""
    need: dict[str, None] = {}
    for e in examples:
        if len(e.sents) > 1:
            need[e.a] = None
            for s in e.sents:
                need[s] = None
    texts = list(need)
    vecs = embed(texts, False) if texts else np.zeros((0, 384))
    index = {t: i for i, t in enumerate(texts)}
    for e in examples:
        if len(e.sents) > 1:
            qa = vecs[index[e.a]]
            sims = [float(vecs[index[s]] @ qa) for s in e.sents]
            e.order = sorted(range(len(e.sents)), key=lambda i: -sims[i])
        else:
            e.order = list(range(len(e.sents)))
