"""`handoff`: what a person taking over an index needs on one screen (`tether info`): the
collection (documents, versions, languages, access split, documents holding text addressed
to AI assistants), the models and their versions, the calibration of the support gate (the
question set, when, the trade-off chosen), the last answer evaluation stored with the index
and the weaknesses it found.

For a public reader it counts only public documents, leaves out the access split and the
calibration's trade-off counts, and shows evaluation figures only from an evaluation that
asked no staff question (its figures would otherwise be scores of staff matches).

What it cannot do: it reports what was stored (by `tether calibrate` and `tether eval
--answers` on a writable index); an index never evaluated has no figures to show.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from tether.config import Profile
from tether.protocols import Store, StoreReader
from tether.types import DocumentInfo


def _stored(store: StoreReader, key: str) -> dict[str, Any] | None:
    raw = store.meta_value(key)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def handoff(
    store: Store, documents: list[DocumentInfo], audience: str, profile: Profile
) -> dict[str, Any]:
    """The handoff record of `store` for `audience` (`documents`: those it may see)."""
    staff = audience == "staff"
    collection: dict[str, Any] = {
        "documents": len({d.meta.doc_id for d in documents}),
        "versions": len(documents),
        "languages": dict(Counter(d.meta.language for d in documents)),
        "documents_with_instructions": sorted({d.meta.doc_id for d in documents if d.instructions}),
    }
    if staff:
        collection["by_access"] = dict(Counter(d.meta.access for d in documents))
    floors = {
        k.split(":", 1)[1]: float(str(v))
        for k, v in (store.info().items())
        if isinstance(k, str) and k.startswith("gate_floor:")
    }
    calibration: dict[str, Any] = {"floors": floors, "profile": profile.note or "calibrated"}
    record = _stored(store, "calibration")
    if record:
        calibration.update({k: v for k, v in record.items() if staff or k != "chosen"})
    models = {
        "embedder": store.meta_value("embedder"),
        "tether_version": store.meta_value("tether_version"),
        "chunker": store.meta_value("chunker"),
    }
    last = _stored(store, "last_eval:answers")
    weaknesses: list[str] = []
    if last and last.get("staff_questions") and not staff:
        last = {"hidden": "the last evaluation asked staff questions: shown to staff only"}
    elif last:
        weaknesses = [
            f"{w['kind']}: {w['value']:.0%}"
            for w in last.get("weakest_kinds", [])
            if w.get("value") is not None and w["value"] < 0.7
        ]
    return {
        "collection": collection,
        "models": models,
        "calibration": calibration,
        "last_eval": last,
        "weaknesses": weaknesses,
    }
