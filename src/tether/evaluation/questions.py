"""Question sets and where their answers are: reading a question set (JSON Lines in the shared
format, unknown fields kept) and writing one line of it (`question_line`), the bundled demo
files, staging the Larkfield benchmark, and matching a retrieved chunk to a relevant passage.

What it cannot do: relevance is by location (doc_id, version, section or anchor, evidence
text), so a relevant passage that the chunker split across two chunks matches both halves only
when neither has an `evidence` string that straddles the cut.
"""

from __future__ import annotations

import difflib
import json
import shutil
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any, cast

from tether.errors import TetherError
from tether.types import Audience, Chunk, Filters, Question, Relevant

_KNOWN = {
    "id",
    "question",
    "language",
    "as_of",
    "audience",
    "abstain",
    "kind",
    "reference_answer",
    "keys",
    "must_not",
    "relevant",
    "tags",
}


QUESTION_TEMPLATE = """\
{"id": "Q001", "question": "How long is the return window?", "relevant": [{"doc_id": "guides/returns", "section": "Return window", "evidence": "within 30 days"}], "keys": ["30 days"]}
{"id": "Q002", "question": "Can staff extend the return window?", "audience": "staff", "relevant": [{"doc_id": "staff/returns"}]}
{"id": "Q003", "question": "What did the return window used to be?", "as_of": "2023-06-01", "relevant": [{"doc_id": "guides/returns", "version": "1"}]}
{"id": "Q004", "question": "Do you ship to the Moon?", "abstain": true, "kind": "unanswerable"}
"""
"""A starter question set (`tether questions --template`): replace the questions and the
doc_ids with your own (docs/questions.md explains each key)."""


def demo_collection() -> Path:
    """The bundled demo collection folder (package data)."""
    return Path(str(resources.files("tether.demo") / "collection"))


def demo_questions() -> Path:
    """The bundled question set."""
    return Path(str(resources.files("tether.demo") / "questions.jsonl"))


def demo_recordings() -> Path:
    """The bundled recordings of the local model's answers to bundled questions."""
    return Path(str(resources.files("tether.demo") / "recordings" / "local-qwen.jsonl"))


def load_questions(path: Path | str | None = None) -> list[Question]:
    """Read a question set; the bundled one when `path` is None. Bad lines are clear errors."""
    path = Path(path) if path is not None else demo_questions()
    if not path.is_file():
        raise TetherError(f"no question set at {path}")
    questions: list[Question] = []
    ids: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            q = _question(raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise TetherError(f"{path.name} line {n}: {exc}") from None
        if q.id in ids:
            raise TetherError(f"{path.name} line {n}: duplicate question id {q.id!r}")
        ids.add(q.id)
        questions.append(q)
    return questions


_RELEVANT_KEYS = ("doc_id", "version", "section", "anchor", "evidence")


def _checked_relevant(r: dict) -> dict:
    """A `relevant` entry whose keys are not misspellings of the keys that narrow a match (a
    `sectoin` dropped in silence would widen it to the whole document); other extra keys are
    kept out of the match, as documented."""
    if not isinstance(r, dict):
        raise ValueError("each relevant passage must be a JSON object")
    for key in r:
        if key not in _RELEVANT_KEYS:
            close = difflib.get_close_matches(key, _RELEVANT_KEYS, n=1, cutoff=0.75)
            if close:
                raise ValueError(f"relevant key {key!r} is not known: did you mean {close[0]!r}?")
    return r


def _question(raw: dict) -> Question:
    if not isinstance(raw, dict):
        raise ValueError("a question must be a JSON object")
    for field_name in ("id", "question"):
        if not isinstance(raw.get(field_name), str) or not raw[field_name].strip():
            raise ValueError(f"missing or empty {field_name!r}")
    as_of = raw.get("as_of")
    audience = raw.get("audience") or "public"
    if audience not in ("public", "staff"):
        raise ValueError(f"audience {audience!r} is not public or staff")
    relevant = tuple(
        Relevant(
            doc_id=str(_checked_relevant(r)["doc_id"]),
            version=None if r.get("version") is None else str(r["version"]),
            section=r.get("section"),
            anchor=r.get("anchor"),
            evidence=r.get("evidence"),
        )
        for r in raw.get("relevant") or []
    )
    return Question(
        id=raw["id"],
        question=raw["question"],
        language=raw.get("language") or "en",
        as_of=date.fromisoformat(as_of) if as_of else None,
        audience=cast(Audience, audience),
        abstain=bool(raw.get("abstain", False)),
        kind=raw.get("kind") or "answerable",
        reference_answer=raw.get("reference_answer") or "",
        keys=tuple(raw.get("keys") or ()),
        must_not=tuple(raw.get("must_not") or ()),
        relevant=relevant,
        tags=tuple(raw.get("tags") or ()),
        extra={k: v for k, v in raw.items() if k not in _KNOWN},
    )


def question_line(q: Question) -> dict[str, Any]:
    """`q` as one line of a question set (JSON data `load_questions` reads back as `q`): id,
    question, language and audience always, the other keys when they differ from their
    defaults, a relevant passage's keys when set, and `extra`'s keys as they are."""
    line: dict[str, Any] = {
        "id": q.id,
        "question": q.question,
        "language": q.language,
        "audience": q.audience,
    }
    if q.as_of is not None:
        line["as_of"] = q.as_of.isoformat()
    if q.abstain:
        line["abstain"] = True
    if q.kind != "answerable":
        line["kind"] = q.kind
    if q.reference_answer:
        line["reference_answer"] = q.reference_answer
    for key in ("keys", "must_not", "tags"):
        if getattr(q, key):
            line[key] = list(getattr(q, key))
    if q.relevant:
        line["relevant"] = [
            {k: getattr(r, k) for k in _RELEVANT_KEYS if getattr(r, k) is not None}
            for r in q.relevant
        ]
    line.update({k: v for k, v in q.extra.items() if k not in _KNOWN})
    return line


def matches(chunk: Chunk, rel: Relevant) -> bool:
    """True when a retrieved chunk is at the relevant passage's location (see the map)."""
    if chunk.doc_id != rel.doc_id:
        return False
    if rel.version is not None and chunk.version != rel.version:
        return False
    if rel.section is not None or rel.anchor is not None:
        by_section = rel.section is not None and _heading(rel.section) in {
            _heading(h) for h in chunk.heading_path
        }
        by_anchor = rel.anchor is not None and rel.anchor in (chunk.anchor, *chunk.anchors)
        if not (by_section or by_anchor):
            return False
    return not (rel.evidence and _norm(rel.evidence) not in _norm(chunk.text))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _heading(text: str) -> str:
    """A heading as a section label names it: a trailing permalink sign (the pilcrow that
    Sphinx and other generators append to every heading) is not part of its text."""
    return _norm(text).rstrip("\u00b6").rstrip()


def passage_label(rel: Relevant) -> str:
    """A short, readable name for a relevant passage."""
    where = rel.section or (f"#{rel.anchor}" if rel.anchor else "")
    label = rel.doc_id + (f" v{rel.version}" if rel.version else "")
    if where:
        label += f" § {where}"
    if rel.evidence:
        label += f' ("{rel.evidence[:40]}")'
    return label


def question_filters(q: Question, audience: str | None = None) -> Filters:
    """The filters a question is asked under (`audience` overrides its own)."""
    return Filters(as_of=q.as_of, audience=audience or q.audience)  # type: ignore[arg-type]


def larkfield_collection(root: Path | str, dest: Path | str) -> Path:
    """Stage the shared Larkfield benchmark's available documents once each in `dest`:
    `corpus/documents/` plus the text forms of its two PDFs (`corpus/formats/warranty-policy.md`
    and `product-care-pw2200.html`), as its README says. Returns `dest`."""
    corpus = Path(root) / "corpus"
    if not (corpus / "documents").is_dir():
        raise TetherError(f"no Larkfield corpus at {corpus}")
    dest = Path(dest)
    (dest / "documents").mkdir(parents=True, exist_ok=True)
    (dest / "formats").mkdir(parents=True, exist_ok=True)
    for f in sorted((corpus / "documents").iterdir()):
        if f.is_file():
            shutil.copyfile(f, dest / "documents" / f.name)
    for name in ("warranty-policy.md", "product-care-pw2200.html"):
        if (corpus / "formats" / name).is_file():
            shutil.copyfile(corpus / "formats" / name, dest / "formats" / name)
    return dest


def demo_claims() -> list[Path]:
    """The bundled labelled claim set: constructed claims and labelled recorded ones."""
    folder = Path(str(resources.files("tether.demo")))
    return sorted(folder.glob("claims-*.jsonl"))
