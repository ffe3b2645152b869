"""What an index holds, as an audience may see it: the bodies of `Workspace.documents`,
`.chunks`, `.read` and `.info`, and the rule for what of the index's records a public reader
sees (`PUBLIC_COUNTS`, `PUBLIC_META`, `public_records`).

What it cannot do: it filters what it is given by audience and never widens it; a public
reader's view leaves out whatever moves with staff documents (a record not named here
included), so a new record the index keeps is hidden from the public until it is named in
`PUBLIC_META`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from tether.app.locate import check_audience
from tether.errors import NotFoundError
from tether.retrieval.calibrate import valid_calibration
from tether.types import Audience, Chunk, DocumentInfo, Filters

if TYPE_CHECKING:
    from tether.app.workspace import Workspace
    from tether.protocols import SearchableStore

# What `Workspace.info` shows a public reader besides its own counts: of the index's records
# (its meta rows), those computed from public passages only or saying how the index was built
# (the floors `tether calibrate` stored apply to every audience). Anything else is left out:
# the file's size, its write counter and time, the staff floor, any record not named here.
PUBLIC_COUNTS = frozenset(
    {
        "path",
        "documents",
        "chunks",
        "vectors",
        "by_access",
        "by_language",
        "by_format",
        "documents_with_instructions",
        "instruction_spans",
    }
)
PUBLIC_META = frozenset(
    {
        "schema_version",
        "chunker",
        "embedder",
        "embedder_dim",
        "tether_version",
        "fusion_calibration",
        "gate_self",
    }
)
_DATED = re.compile(r",\s*\d{4}-\d{2}-\d{2}$")  # the date that ends a record's `fitted_on`


def counts(docs: list[DocumentInfo], chunks: list[Chunk], store: SearchableStore) -> dict[str, Any]:
    """`Store.info`'s counts over these documents and chunks only."""
    return {
        "documents": len(docs),
        "chunks": len(chunks),
        "vectors": len(store.vectors_of(c.chunk_id for c in chunks)) if store.has_vectors() else 0,
        "by_access": dict(Counter(d.meta.access for d in docs)),
        "by_language": dict(Counter(d.meta.language for d in docs)),
        "by_format": dict(Counter(d.meta.format for d in docs)),
        "documents_with_instructions": sum(1 for d in docs if d.instructions),
        "instruction_spans": sum(len(d.instructions) for d in docs),
    }


def public_records(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (`Store.info()` with its JSON records parsed, the counts already the public
    ones) as a public reader may see it: `PUBLIC_COUNTS`, `PUBLIC_META`, the floors
    (`gate_floor:*`, `gate_self:*:public`), the gate's self-calibration with its public fits
    only, and no calibration's time (a staff document's ingest runs them again)."""
    out = {
        key: value
        for key, value in data.items()
        if key in PUBLIC_COUNTS
        or key in PUBLIC_META
        or key.startswith("gate_floor:")
        or (key.startswith("gate_self:") and key.endswith(":public"))
    }
    fusion = out.get("fusion_calibration")
    if isinstance(fusion, dict):
        fusion = {k: v for k, v in fusion.items() if k != "at"}
        if isinstance(fusion.get("fitted_on"), str):
            fusion["fitted_on"] = _DATED.sub("", fusion["fitted_on"])
        out["fusion_calibration"] = fusion
    fit = out.get("gate_self")
    if isinstance(fit, dict):
        fit = {k: v for k, v in fit.items() if k not in ("at", "seconds")}
        if isinstance(fit.get("fits"), list):
            fit["fits"] = [
                f for f in fit["fits"] if isinstance(f, dict) and f.get("audience") == "public"
            ]
        out["gate_self"] = fit
    return out


def documents(ws: Workspace, audience: Audience) -> list[DocumentInfo]:
    """`Workspace.documents`: the documents `audience` may see."""
    allows = Filters(audience=check_audience(audience)).allows
    return [d for d in ws.store.documents() if allows(d.meta)]


def chunks(ws: Workspace, doc_id: str, version: str | None, audience: Audience) -> list[Chunk]:
    """`Workspace.chunks`: a document `audience` may not see is worded as an unknown one."""
    allows = Filters(audience=check_audience(audience)).allows
    found = [c for c in ws.store.chunks(doc_id, version) if allows(c.meta)]
    if found:
        return found
    known = [m for m in ws.store.versions(doc_id) if allows(m)]
    if not known:
        raise NotFoundError(f"no document with doc_id {doc_id!r} (see `tether documents`)")
    raise NotFoundError(
        f"{doc_id!r} has no version {version!r}; it has {', '.join(m.version for m in known)}"
    )


def read(ws: Workspace, chunk_id: str, audience: Audience) -> Chunk | None:
    """`Workspace.read`: None for an unknown ID and, alike, for one `audience` may not see."""
    allows = Filters(audience=check_audience(audience)).allows
    chunk = ws.store.get(chunk_id.strip())
    return chunk if chunk is not None and allows(chunk.meta) else None


def info(ws: Workspace, audience: Audience) -> dict[str, Any]:
    """What the index holds and how it was built; the counts are those of what `audience`
    may see (public by default), with the Profile's note when it is not calibrated and,
    on an index with vectors, the embedder in use and its window report. A public reader
    sees nothing that moves with staff documents: counts of public documents only, and of
    the index's records those computed from public passages (not the file's size, its
    write counter or time, the staff floor, or when a calibration ran)."""
    data = ws.store.info()
    for key in ("calibration", "last_eval:answers"):  # the handoff shows them, per audience
        data.pop(key, None)
    for key in ("fusion_calibration", "gate_self"):  # JSON records: objects, not strings
        raw = data.get(key)
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                data[key] = json.loads(raw)
    fusion = data.get("fusion_calibration")
    if isinstance(fusion, dict) and valid_calibration(fusion) is None:
        fusion["in_force"] = False  # an older rule's record: measured at next ingest
    allowed: list[Chunk] | None = None
    if check_audience(audience) != "staff":
        allowed = [c for c in ws.store.chunks() if c.meta.access == "public"]
        data.update(counts(ws.documents(audience), allowed, ws.store))
        data = public_records(data)
    if not ws.profile.calibrated:
        data["profile"] = ws.profile.note
    if data.get("vectors"):
        from tether.embeddings.embedders import describe, embed_text_report

        data["embedder_in_use"] = describe(ws.embedder())
        data.update(embed_text_report(ws.store, ws.embedder(), allowed))
    return data
