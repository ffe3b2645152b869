"""The verifier measured on a labelled claim set: `load_claims` reads it (the bundled one by
default, or a set of the user's own on any collection), `run_verifier_eval` checks every claim
and counts false passes (unsupported claims marked ok) and false alarms (supported claims
flagged), overall, per flag and per kind.

A claim names its passages by location (`doc_id`, `version`, `section`; resolved in the store
given) or by chunk ID; a location the store does not hold is an error that names the claim,
so a set run on the wrong collection is never scored as if its citations were missing. Each
claim is checked as `ask` and `check` would check it: its context keeps only the passages in
force on its `as_of` that its audience may see, so a claim citing a superseded version or a
staff passage for a public reader is flagged as those paths flag it.

What it cannot do: it measures `tether.verify.check.check_answer` with the judge and embedder
the caller passes (it builds none); a claim's verdict is ok only when it carries no flag, so a
flag that is right for another reason still counts as an alarm on a supported claim.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from tether.answering.context import header
from tether.errors import TetherError
from tether.evaluation.questions import demo_claims, matches
from tether.protocols import Embedder, Judge, Store, StoreReader
from tether.types import Answer, Claim, Context, Filters, Passage, Relevant
from tether.verify.check import VerifierCache, check_answer, flag_kind


def load_claims(paths: Sequence[Path] | None = None) -> list[dict]:
    """The labelled claims in `paths` (the bundled set when None); a bad line is a clear error."""
    items: list[dict] = []
    for path in paths or demo_claims():
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    item = json.loads(line)
                    if item["label"] not in ("supported", "unsupported"):
                        _bad("label")
                    if not (item["claim"] and item["made"]):
                        _bad("claim/made")
                except (ValueError, KeyError, TypeError) as exc:
                    raise TetherError(
                        f"{Path(path).name} line {n}: not a labelled claim ({exc})"
                    ) from None
                items.append(item)
    return items


def _bad(what: str) -> None:
    raise ValueError(f"bad {what}")


@dataclass(frozen=True)
class VerifierRow:
    """One labelled claim: how it was made, its label, the flags the checker gave, the time."""

    item_id: str
    made: str
    kind: str
    label: str
    flags: tuple[str, ...]
    seconds: float

    @property
    def passed(self) -> bool:
        return not self.flags


@dataclass(frozen=True)
class VerifierResult:
    """The checker on a labelled claim set: every row, and where it was wrong."""

    judge: str
    rows: tuple[VerifierRow, ...]
    false_passes: int  # unsupported claims marked ok
    false_alarms: int  # supported claims flagged
    unsupported: int
    supported: int
    per_check: dict[
        str, dict[str, int]
    ]  # flag kind -> {"fired_on_supported", "fired_on_unsupported"}
    per_kind: dict[str, dict[str, int]]  # item kind -> {"n", "wrong"}
    median_ms: float

    @property
    def false_pass_rate(self) -> float:
        return self.false_passes / self.unsupported if self.unsupported else 0.0

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.supported if self.supported else 0.0


def _resolve(store: StoreReader, item: dict, location: dict, cache: dict) -> str:
    """The ID of the chunk at a claim item's location (doc_id, version, section); a location
    this store does not hold is a `TetherError` naming the claim."""
    key = (location["doc_id"], location.get("version"), location.get("section"))
    if key not in cache:
        rel = Relevant(location["doc_id"], location.get("version"), location.get("section"))
        cache[key] = next(
            (c.chunk_id for c in store.chunks(rel.doc_id, rel.version) if matches(c, rel)), None
        )
    if cache[key] is None:
        where = " / ".join(str(part) for part in key if part is not None)
        raise TetherError(
            f"claim {item.get('id', '?')}: no passage at {where} in this index"
            " (is it the collection the claims were written on?)"
        )
    return cache[key]


def run_verifier_eval(
    store: Store,
    items: Sequence[dict],
    *,
    judge: Judge | None = None,
    embedder: Embedder | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerifierResult:
    """Check every labelled claim and count where the checker is wrong.

    The overall verdict is ok when a claim carries no flag at all; a false pass is an
    unsupported claim marked ok, a false alarm a supported claim flagged. `judge` and
    `embedder` go to the checker as they are (None: none given)."""
    cache: dict = {}
    checked = VerifierCache()  # one for the run: each passage is prepared once
    rows: list[VerifierRow] = []
    for n, item in enumerate(items, 1):
        rows.append(check_item(store, item, cache, judge, embedder, checked))
        if progress:
            progress(n, len(items))
    per_check: dict[str, dict[str, int]] = {}
    per_kind: dict[str, dict[str, int]] = {}
    for row in rows:
        for kind in {flag_kind(f) for f in row.flags}:
            slot = per_check.setdefault(kind, {"fired_on_supported": 0, "fired_on_unsupported": 0})
            slot["fired_on_" + row.label] += 1
        wrong = row.passed == (row.label == "unsupported")
        slot = per_kind.setdefault(f"{row.made}:{row.kind}", {"n": 0, "wrong": 0})
        slot["n"] += 1
        slot["wrong"] += int(wrong)
    times = sorted(r.seconds for r in rows)
    return VerifierResult(
        judge=getattr(judge, "name", "none") if judge is not None else "none",
        rows=tuple(rows),
        false_passes=sum(r.passed and r.label == "unsupported" for r in rows),
        false_alarms=sum((not r.passed) and r.label == "supported" for r in rows),
        unsupported=sum(r.label == "unsupported" for r in rows),
        supported=sum(r.label == "supported" for r in rows),
        per_check=per_check,
        per_kind=per_kind,
        median_ms=1000 * times[len(times) // 2] if times else 0.0,
    )


def check_item(
    store: Store,
    item: dict,
    cache: dict,
    judge: Judge | None,
    embedder: Embedder | None,
    checked: VerifierCache,
) -> VerifierRow:
    """One labelled claim checked as the only claim of an answer, in its own context."""
    context_ids = list(item.get("context_ids") or [])
    context_ids += [_resolve(store, item, loc, cache) for loc in item.get("context", [])]
    cites = list(item.get("cite_ids") or [])
    cites += [_resolve(store, item, loc, cache) for loc in item.get("cites", [])]
    chunks = store.get_many(context_ids)
    as_of = date.fromisoformat(item["as_of"]) if item.get("as_of") else None
    audience = item.get("audience", "public")
    # the context as `ask` builds it and `check` reads it: only passages in force on the
    # claim's date that its audience may see (a superseded version cited is not_in_context)
    allowed = Filters(as_of=as_of, audience="staff" if audience == "staff" else "public")
    shown = [chunks[cid] for cid in dict.fromkeys(context_ids) if cid in chunks]
    passages = tuple(
        Passage(c, header(c), 0, i + 1)
        for i, c in enumerate(c for c in shown if allowed.allows(c.meta))
    )
    context = Context(passages)
    claim = Claim(item["claim"], tuple(cites))
    t = time.perf_counter()
    (check,) = check_answer(
        Answer(True, item["claim"], (claim,)),
        store,
        context,
        item.get("question", ""),
        audience=audience,
        language=item.get("language", "en"),
        as_of=as_of,
        judge=judge,
        embedder=embedder,
        cache=checked,
    )
    return VerifierRow(
        item["id"],
        item["made"],
        item.get("kind", "recorded"),
        item["label"],
        check.flags,
        time.perf_counter() - t,
    )
