"""Labelled claim sets read straight from their collections, for the reader alone (no index,
no verifier): each claim against the sentences of the sections it cites.

`claim_examples(folder)` reads a claim set in the judge sets' format (`claims.jsonl` or
`claims-*.jsonl` beside a `collection/` of Markdown files with front matter and `## `
sections). Claims with no citation are left out (the exact checks decide those, not the
reader). Binary labels: supported 0, anything else 1.

What it cannot do: it splits sections on `## ` headings only, as those sets are written; the
verifier's own chunks can differ (a long section split in two).
"""

from __future__ import annotations

import json
from pathlib import Path

from reader.data import Example, _front_matter, passage_sentences


def sections(collection: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(doc_id, version, section) -> (text, language) for every `## ` section."""
    out: dict[tuple[str, str, str], tuple[str, str]] = {}
    for f in sorted(collection.rglob("*.md")):
        fm = _front_matter(f)
        text = f.read_text(encoding="utf-8")
        body = text[text.find("\n---", 3) + 4 :] if text.startswith("---") else text
        doc, ver, lang = (
            str(fm.get("doc_id", f.stem)),
            str(fm.get("version", "1")),
            str(fm.get("language", "en")),
        )
        current, buf = "", []
        for line in [*body.splitlines(), "## "]:
            if line.startswith("## "):
                if current:
                    out[(doc, ver, current)] = ("\n".join(buf).strip(), lang)
                current, buf = line[3:].strip(), []
            else:
                buf.append(line)
    return out


def claim_examples(folder: Path, name: str) -> list[Example]:
    coll = folder / "collection"
    secs = sections(coll) if coll.is_dir() else {}
    files = sorted(folder.glob("claims*.jsonl"))
    out: list[Example] = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            c = json.loads(line)
            cites = c.get("cites") or []
            sents: list[str] = []
            for cite in cites:
                key = (cite["doc_id"], str(cite.get("version", "1")), cite.get("section", ""))
                if key in secs:
                    text, lang = secs[key]
                    sents += passage_sentences(text, "", lang)
            if not sents:
                continue
            label = 0 if c.get("label") == "supported" else 1
            out.append(Example("support", c["claim"], sents, label, name, c.get("kind", ""),
                               c.get("language", ""), "heldout", group=c.get("id", "")))  # fmt: skip
    return out
