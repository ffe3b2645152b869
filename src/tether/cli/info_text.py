"""`tether info` as a person reads it: one short line per subject (the documents, how the
index was built, the fusion weight, the gate floors, the handoff's calibration and last
evaluation) instead of the records' JSON. `--json` prints the records themselves
(`tether.schemas.IndexInfo`); this module never changes what they hold.

What it cannot do: it reads only what `Workspace.info` and `Workspace.handoff` give (so a
public reader's lines hold nothing of staff documents, as the records do not); a key it does
not know is shown as `key: value` flattened, never dropped (a remembered source's crawl
state, `source:...`, is said by its one `source` line).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tether.cli.ingest_web import source_lines

Line = tuple[str, str]

_FIT = re.compile(r"^gate_(self|floor):")


def _num(value: Any) -> str:
    """A number as a person writes it: 0.33, 5, 0.7688 (not 5.0 or 0.7688000001)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:.4g}" if isinstance(value, float) else f"{value:,}"


def _pct(value: Any) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) else "—"


def _counts(counts: Any) -> str:
    """{"en": 26, "fr": 4} as `en 26, fr 4`, the largest first."""
    if not isinstance(counts, Mapping) or not counts:
        return "none"
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1] if isinstance(kv[1], int) else 0, kv[0]))
    return ", ".join(f"{k} {_num(v)}" for k, v in ranked)


def flat(value: Any) -> str:
    """Any record as one line without JSON's braces: `key value · key value`, lists joined
    by commas, a nested record in parentheses."""
    if isinstance(value, Mapping):
        return " · ".join(f"{k} {_nested(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(_nested(v) for v in value) or "none"
    return _num(value)


def _nested(value: Any) -> str:
    return (
        f"({flat(value)})" if isinstance(value, Mapping | list | tuple) and value else flat(value)
    )


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _date(stamp: Any) -> str:
    """The day of an ISO time stamp (2026-11-30T10:00:00Z: 2026-11-30)."""
    return str(stamp)[:10]


# ---- the index ----------------------------------------------------------------------------


def fusion_line(record: Mapping[str, Any]) -> str:
    """fusion_calibration: the BM25 weight and what it was fitted on."""
    weight = record.get("lexical_weight")
    line = f"BM25 weight {_num(weight)} against dense 1" if weight is not None else "no weight"
    fitted = record.get("fitted_on")
    if fitted:
        line += f", fitted on {fitted}"
    if "bm25_mrr" in record and "dense_mrr" in record:
        line += f"; MRR BM25 {_num(record['bm25_mrr'])} · dense {_num(record['dense_mrr'])}"
    if record.get("in_force") is False:
        line += " (an older rule's record, not in force: measured again at the next ingest)"
    return line


def _self_fit_words(record: Mapping[str, Any], fit: Mapping[str, Any]) -> str:
    """How one self-fitted floor was reached."""
    z = record.get("z")
    how = (
        f"off-topic mean {_num(fit.get('offtopic_mean'))} + {_num(z)} sd"
        f" ({_num(fit.get('offtopic_sd'))}) over {_plural(fit.get('offtopic_n', 0), 'question')}"
    )
    if fit.get("capped"):
        quantile = record.get("quantile")
        share = f"{quantile:.0%}" if isinstance(quantile, int | float) else "low"
        how += (
            f", capped at the {share} quantile of"
            f" {_plural(fit.get('generated_n', 0), 'generated question')}"
        )
    return how


def gate_lines(data: Mapping[str, Any]) -> list[Line]:
    """The support gate's floors that ingest fitted on the index itself
    (gate_self:METHOD:AUDIENCE, with the gate_self record saying how); those `tether
    calibrate` stored (gate_floor:METHOD) are the handoff's calibration line."""
    lines: list[Line] = []
    calibrated = {k.split(":", 1)[1] for k in data if k.startswith("gate_floor:")}
    fitted: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key.startswith("gate_self:") and key.count(":") == 2:
            _, method, audience = key.split(":")
            fitted.setdefault(method, {})[audience] = _float(value)
    record = data.get("gate_self")
    fits = record.get("fits", []) if isinstance(record, Mapping) else []
    for method, by_audience in sorted(fitted.items()):
        floors = " · ".join(
            f"{_num(v)} for {a}" if len(by_audience) > 1 else _num(v)
            for a, v in sorted(by_audience.items(), key=lambda av: av[0] != "public")
        )
        line = f"{method} {floors}, fitted at ingest"
        first = next(
            (f for f in fits if isinstance(f, Mapping) and f.get("method") == method), None
        )
        if isinstance(record, Mapping) and first is not None:
            line += f": {_self_fit_words(record, first)}"
            if len(by_audience) > 1:
                line += f" ({first.get('audience')})"
        if isinstance(record, Mapping) and record.get("at"):
            line += f", {_date(record['at'])}"
        if method in calibrated:
            line += " (the calibration below wins)"
        lines.append(("gate floor", line))
    return lines


def _float(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def documents_words(documents: Any, versions: Any) -> str:
    """How many documents and versions, said one way wherever `tether info` says it: a
    document is one doc_id, however many versions of it are indexed (`36 documents, 38
    versions`); the versions alone when the documents are not known."""
    if not isinstance(documents, int) or isinstance(documents, bool):
        return _plural(versions, "document version")
    return f"{_plural(documents, 'document')}, {_plural(versions, 'version')}"


def index_lines(data: Mapping[str, Any], documents: int | None = None) -> list[Line]:
    """`Workspace.info`'s record (without its handoff) as labelled lines. Its `documents`
    counts versions (one per doc_id and version), as do `by_access`, `by_language` and
    `by_format`: said so, beside `documents` (doc_ids, from the handoff) when given."""
    rest = dict(data)
    take = rest.pop
    lines: list[Line] = []
    where = str(take("path", ""))
    size = take("size_bytes", None)
    if isinstance(size, int) and size:
        where += f" ({size / 1_000_000:,.1f} MB)"
    lines.append(("path", where))
    versions, chunks, vectors = take("documents", 0), take("chunks", 0), take("vectors", 0)
    access = take("by_access", None)
    line = documents_words(documents, versions)
    line += f" (versions by access: {_counts(access)})" if access else ""
    line += f" · {_plural(chunks, 'chunk')}, {_num(vectors)} with vectors"
    lines.append(("documents", line))
    lines.append(("languages", _counts(take("by_language", None)) + " (versions)"))
    lines.append(("formats", _counts(take("by_format", None)) + " (files)"))
    spans, holding = take("instruction_spans", 0), take("documents_with_instructions", 0)
    if spans or holding:
        lines.append(
            (
                "text for AI",
                f"{_plural(spans, 'span')} addressed to AI assistants in"
                f" {_plural(holding, 'document version')} (never obeyed; `tether documents` shows"
                " them)",
            )
        )
    built = [str(take("chunker", "")) or "unknown chunker"]
    embedder, dim = take("embedder", None), take("embedder_dim", None)
    if embedder:
        built.append(f"{embedder}" + (f", {dim}-d" if dim else ""))
    for key, label in (("tether_version", "tether"), ("schema_version", "schema")):
        if key in rest:
            built.append(f"{label} {take(key)}")
    lines.append(("built with", " · ".join(built)))
    if "default_access" in rest:
        default = take("default_access")
        as_what = {"staff": "staff-only (fail-closed)", "public": "public"}.get(default, default)
        lines.append(("unlabelled", f"documents without an access label are {as_what}"))
    if "updated_at" in rest or "generation" in rest:
        when = take("updated_at", "unknown")
        generation = take("generation", None)
        lines.append(("written", f"{when}" + (f" (write {generation})" if generation else "")))
    if "embedder_in_use" in rest:
        lines.append(("embedder here", str(take("embedder_in_use"))))
    window = take("chunks_window_tokens", None)
    over, cut = take("chunks_over_window", None), take("chunks_truncated", None)
    if over is not None:
        size_words = f"the {window}-token window" if window else "the embedder's window"
        line = (
            f"{_plural(over, 'chunk')} over {size_words}" if over else f"no chunk over {size_words}"
        )
        if cut:
            line += f", {_num(cut)} cut"
        lines.append(("token window", line + (" (embedded as averaged windows)" if over else "")))
    fusion = take("fusion_calibration", None)
    if isinstance(fusion, Mapping):
        lines.append(("fusion", fusion_line(fusion)))
    elif fusion is not None:
        lines.append(("fusion", str(fusion)))
    lines += gate_lines(rest)
    for key in [k for k in rest if _FIT.match(k) or k == "gate_self"]:
        take(key)
    if "profile" in rest:
        lines.append(("tuned values", str(take("profile"))))
    state = take("ingest:state", None)
    if state is not None:
        lines.append(("last ingest", ingest_line(state)))
    lines += source_lines(rest)  # the sources `tether ingest URL` remembers, one line each
    lines += [(key, flat(value)) for key, value in rest.items()]  # anything newer, as it is
    return lines


def ingest_line(state: Any) -> str:
    """What the ingests recorded for the health report, in words (the folder, how many
    documents carry no access label, how many files could not be read)."""
    if isinstance(state, str):
        try:
            state = json.loads(state)
        except ValueError:
            return "(a damaged record)"
    if not isinstance(state, Mapping):
        return flat(state)
    unlabelled, problems = state.get("unlabelled") or [], state.get("problems") or {}
    return (
        f"from {state.get('folder', 'an unknown folder')} · "
        f"{_plural(len(unlabelled), 'file')} without an access label · "
        f"{_plural(len(problems), 'file')} not read (`tether health` names them)"
    )


# ---- the handoff --------------------------------------------------------------------------


def collection_line(c: Mapping[str, Any]) -> str:
    """The handoff's collection: documents and versions in the index lines' words, then the
    versions by language and access."""
    line = documents_words(c.get("documents", 0), c.get("versions", 0))
    if c.get("languages"):
        line += f" · versions by language: {_counts(c['languages'])}"
    if c.get("by_access"):
        line += f" · by access: {_counts(c['by_access'])}"
    holding = c.get("documents_with_instructions") or []
    if holding:
        line += f" · text for AI assistants in {', '.join(map(str, holding))}"
    return line


def models_line(m: Mapping[str, Any]) -> str:
    words = {"embedder": "embedder", "chunker": "chunker", "tether_version": "tether"}
    parts = [f"{words.get(k, k)} {v}" for k, v in m.items() if v]
    return " · ".join(parts) or "none recorded"


def calibration_lines(c: Mapping[str, Any]) -> list[Line]:
    """The gate floors `tether calibrate` stored (and on what, when), and the Profile's
    word on the tuned values."""
    floors = c.get("floors") or {}
    if floors:
        line = " · ".join(f"{m} {_num(v)}" for m, v in floors.items())
        said = "calibrated" + (f" {_date(c['at'])}" if c.get("at") else "")
        if c.get("n_questions") is not None or c.get("questions"):
            n = c.get("n_questions")
            count = _plural(n, "question") if isinstance(n, int) else "questions"
            said += f" on {count} of {c.get('questions', 'a question set')}"
        if isinstance(c.get("max_wrongly_refused"), int | float):
            said += f", refusing at most {_pct(c['max_wrongly_refused'])} of answerable ones"
        line += f" ({said})"
    else:
        line = (
            "no floors from `tether calibrate` (the gate uses the floor fitted at ingest, else"
            " the tuned values)"
        )
    lines = [("calibration", line)]
    chosen = c.get("chosen")
    if isinstance(chosen, list) and chosen:
        rows = [
            f"{r.get('method')} {_num(r.get('floor'))} refuses {r.get('wrongly_refused', '?')}"
            f" answerable"
            + (f", lets {r['let_through']} must-refuse through" if r.get("let_through") else "")
            for r in chosen
            if isinstance(r, Mapping)
        ]
        lines.append(("trade-off", "; ".join(rows)))
    profile = c.get("profile")
    if profile and profile != "calibrated":
        lines.append(("tuned values", str(profile)))
    known = {"floors", "profile", "at", "n_questions", "questions", "max_wrongly_refused", "chosen"}
    lines += [(k, flat(v)) for k, v in c.items() if k not in known]
    return lines


def last_eval_line(e: Mapping[str, Any] | None) -> str:
    if e is None:
        return "none stored (run `tether eval --answers`)"
    if "hidden" in e and len(e) == 1:
        return str(e["hidden"])
    o = e.get("overall")
    asked = e.get("questions_file")
    asked = (
        "the bundled questions" if asked == "bundled" else f"questions of {asked}" if asked else ""
    )
    head = " ".join(
        p
        for p in (
            _date(e["at"]) if e.get("at") else "",
            f"by {e['provider']}" if e.get("provider") else "",
            f"on {asked}" if asked else "",
        )
        if p
    )
    if not isinstance(o, Mapping):
        return head or flat(e)
    parts = [f"{_num(o.get('n', 0))} asked"]
    if o.get("answerable"):
        parts.append(
            f"accuracy {_pct(o.get('accuracy'))} ({o.get('correct', '?')}/{o['answerable']} answerable)"
        )
    if o.get("must_refuse"):
        parts.append(
            f"abstention precision {_pct(o.get('abstention_precision'))}, recall"
            f" {_pct(o.get('abstention_recall'))} ({o['must_refuse']} must refuse)"
        )
    if o.get("claims"):
        parts.append(f"flagged claims {_pct(o.get('flagged_claim_rate'))} of {o['claims']}")
    if isinstance(o.get("median_s"), int | float):
        parts.append(f"median {o['median_s']:.2f} s")
    if isinstance(o.get("cost_usd"), int | float):
        parts.append(f"cost ${o['cost_usd']:.4f}" if o["cost_usd"] else "cost $0")
    return (f"{head}: " if head else "") + " · ".join(parts)


def handoff_lines(h: Mapping[str, Any]) -> list[Line]:
    """`Workspace.handoff`'s record as labelled lines."""
    lines: list[Line] = []
    for key, value in h.items():
        if key == "collection" and isinstance(value, Mapping):
            lines.append(("collection", collection_line(value)))
        elif key == "models" and isinstance(value, Mapping):
            lines.append(("models", models_line(value)))
        elif key == "calibration" and isinstance(value, Mapping):
            lines += calibration_lines(value)
        elif key == "last_eval" and (value is None or isinstance(value, Mapping)):
            lines.append(("last evaluation", last_eval_line(value)))
        elif key == "weaknesses" and isinstance(value, list):
            lines.append(
                ("weaknesses", "; ".join(map(str, value)) or "none found (or no evaluation stored)")
            )
        else:
            lines.append((key, flat(value)))
    return lines


def info_sections(data: Mapping[str, Any], audience: str = "") -> dict[str, list[Line]]:
    """`tether info`'s record (with its handoff) as two titled lists of lines, a line the
    index already says (the Profile's note) not said again in the handoff. The index's
    counts take the handoff's documents (doc_ids) beside their versions, so the two say one
    thing; `audience` (when given) says whose view the counts are."""
    rest = dict(data)
    handoff_record = rest.get("handoff") or {}
    collection = handoff_record.get("collection") if isinstance(handoff_record, Mapping) else None
    documents = collection.get("documents") if isinstance(collection, Mapping) else None
    index = index_lines({k: v for k, v in rest.items() if k != "handoff"}, documents)
    if audience == "public":
        # no word of staff here: what a public reader is told moves with no staff document
        index.insert(
            1,
            (
                "counted for",
                "the public audience: public documents only (the default; --audience changes it)",
            ),
        )
    elif audience == "staff":
        index.insert(1, ("counted for", "the staff audience: every document, public and staff"))
    handoff = handoff_lines(handoff_record)
    return {"index": index, "handoff": [line for line in handoff if line not in index]}


def width(sections: Iterable[list[Line]]) -> int:
    """The width of the widest label, for aligning the values."""
    return max((len(label) for lines in sections for label, _ in lines), default=0)
