"""Question sets and measurement.

Reads question sets (JSON Lines in the shared format, unknown fields kept), matches retrieved
chunks to relevant passages by location, and measures retrieval: hit@k, recall@k,
precision@k, MRR and nDCG@k per question, overall, per kind and per language, for each method
(`run_retrieval_eval`), with a JSON form and a self-contained HTML report (`write_report`).

What it cannot do: relevance is by location (doc_id, version, section or anchor, evidence
text), so a relevant passage that the chunker split across two chunks matches both halves only
when neither has an `evidence` string that straddles the cut.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.types import Chunk, Filters, Question, Relevant

_KNOWN = {
    "id", "question", "language", "as_of", "audience", "abstain", "kind",
    "reference_answer", "keys", "must_not", "relevant", "tags",
}  # fmt: skip


def demo_collection() -> Path:
    """The bundled demo collection folder (package data)."""
    return Path(str(resources.files("tether.demo") / "collection"))


def demo_questions() -> Path:
    """The bundled question set."""
    return Path(str(resources.files("tether.demo") / "questions.jsonl"))


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
            doc_id=str(r["doc_id"]),
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
        audience=audience,
        abstain=bool(raw.get("abstain", False)),
        kind=raw.get("kind") or "answerable",
        reference_answer=raw.get("reference_answer") or "",
        keys=tuple(raw.get("keys") or ()),
        must_not=tuple(raw.get("must_not") or ()),
        relevant=relevant,
        tags=tuple(raw.get("tags") or ()),
        extra={k: v for k, v in raw.items() if k not in _KNOWN},
    )


def matches(chunk: Chunk, rel: Relevant) -> bool:
    """True when a retrieved chunk is at the relevant passage's location (see the map)."""
    if chunk.doc_id != rel.doc_id:
        return False
    if rel.version is not None and chunk.version != rel.version:
        return False
    if rel.section is not None or rel.anchor is not None:
        by_section = rel.section is not None and _norm(rel.section) in {
            _norm(h) for h in chunk.heading_path
        }
        by_anchor = rel.anchor is not None and chunk.anchor == rel.anchor
        if not (by_section or by_anchor):
            return False
    return not (rel.evidence and _norm(rel.evidence) not in _norm(chunk.text))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


# ---- retrieval metrics ---------------------------------------------------------------------
#
# Relevance is by location (`matches`). For one question with R reachable relevant passages
# and a ranked list of chunks, where `covers[i]` is the set of passages chunk i matches:
# - hit@k: 1 when a chunk in the top k matches a relevant passage;
# - recall@k: the share of the R passages matched by some chunk in the top k;
# - precision@k: the share of the k places held by a chunk that matches a relevant passage;
# - MRR: 1 / the rank of the first matching chunk within the retrieved depth (50), else 0;
# - nDCG@k: binary gains by passage: a chunk gains 1 when it matches a passage no earlier chunk
#   matched (two halves of one section count once), ideal = min(R, k) gains at the top.
# A relevant passage is reachable when the index holds a chunk that matches it and the
# question's filters (as_of, audience) let that chunk through. Questions with no reachable
# passage are not scored (those that expect abstention and list no passage, and those whose
# passages are missing from the ingested documents or refused by the filters); the result
# says how many and why.

METRICS: tuple[str, ...] = ("hit", "recall", "precision", "mrr", "ndcg")
DEPTH = 50  # how deep each ranking is read (MRR, "ranked 17", "not in top 50")


def ranking_metrics(covers: Sequence[Set[int]], n_relevant: int, k: int) -> dict[str, float]:
    """hit@k, recall@k, precision@k, MRR (whole list) and nDCG@k of one ranking.

    `covers[i]` is the set of relevant-passage indices that the chunk at rank i+1 matches."""
    if n_relevant <= 0:
        raise ValueError("a ranking is scored against at least one relevant passage")
    top = covers[:k]
    found = set().union(*top) if top else set()
    first = next((i + 1 for i, c in enumerate(covers) if c), None)
    dcg = 0.0
    seen: set[int] = set()
    for i, c in enumerate(top):
        if c - seen:
            dcg += 1.0 / math.log2(i + 2)
        seen |= c
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(n_relevant, k)))
    return {
        "hit": 1.0 if found else 0.0,
        "recall": len(found) / n_relevant,
        "precision": sum(1 for c in top if c) / k,
        "mrr": 1.0 / first if first else 0.0,
        "ndcg": dcg / ideal,
    }


def passage_label(rel: Relevant) -> str:
    """A short, readable name for a relevant passage."""
    where = rel.section or (f"#{rel.anchor}" if rel.anchor else "")
    label = rel.doc_id + (f" v{rel.version}" if rel.version else "")
    if where:
        label += f" § {where}"
    if rel.evidence:
        label += f' ("{rel.evidence[:40]}")'
    return label


@dataclass(frozen=True)
class QuestionRun:
    """One question under one method: its metrics and where each relevant passage ranked."""

    id: str
    kind: str
    language: str
    method: str
    metrics: dict[str, float]
    expected: tuple[str, ...]  # labels of the reachable relevant passages
    ranks: tuple[int | None, ...]  # first rank (1-based, within DEPTH) of each, or None
    top: tuple[str, ...]  # the top k as "doc_id vN § section"
    seconds: float
    question: str = ""

    @property
    def ok(self) -> bool:
        return self.metrics["hit"] > 0

    def why(self, k: int) -> str:
        """What was expected and where it ranked (for a failing question)."""
        parts = []
        for label, rank in zip(self.expected, self.ranks, strict=True):
            where = f"ranked {rank}" if rank is not None else f"not in top {DEPTH}"
            parts.append(f"expected {label}: {where}")
        return "; ".join(parts)


@dataclass(frozen=True)
class EvalResult:
    """A retrieval evaluation: per-question rows, aggregates and what was not scored."""

    methods: tuple[str, ...]
    k: int
    rows: tuple[QuestionRun, ...]
    aggregates: dict[str, dict[str, dict]]  # method -> overall | by_kind | by_language
    timings: dict[str, dict[str, float]]  # method -> median_ms, p95_ms, mean_ms
    n_questions: int
    skipped: tuple[tuple[str, str], ...]  # (question id, why it was not scored)
    partial: tuple[tuple[str, str], ...] = ()  # scored on part of its passages: (id, why)
    questions_file: str = ""
    index: str = ""
    notes: tuple[str, ...] = ()

    @property
    def n_scored(self) -> int:
        return len({r.id for r in self.rows})

    def failures(self, method: str) -> list[QuestionRun]:
        return [r for r in self.rows if r.method == method and not r.ok]

    def to_dict(self) -> dict:
        return {
            "k": self.k,
            "depth": DEPTH,
            "methods": list(self.methods),
            "questions_file": self.questions_file,
            "index": self.index,
            "n_questions": self.n_questions,
            "n_scored": self.n_scored,
            "n_skipped": len(self.skipped),
            "skipped": [{"id": i, "reason": r} for i, r in self.skipped],
            "partial": [{"id": i, "reason": r} for i, r in self.partial],
            "aggregates": self.aggregates,
            "timings": self.timings,
            "notes": list(self.notes),
            "rows": [
                {
                    "id": r.id,
                    "kind": r.kind,
                    "language": r.language,
                    "method": r.method,
                    **{m: round(v, 6) for m, v in r.metrics.items()},
                    "expected": [
                        {"passage": e, "rank": rank}
                        for e, rank in zip(r.expected, r.ranks, strict=True)
                    ],
                    "top": list(r.top),
                    "ms": round(r.seconds * 1000, 2),
                    **({} if r.ok else {"why": r.why(self.k)}),
                }
                for r in self.rows
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)


def _mean_metrics(rows: Sequence[QuestionRun]) -> dict[str, float]:
    out: dict[str, float] = {"n": float(len(rows))}
    for m in METRICS:
        out[m] = sum(r.metrics[m] for r in rows) / len(rows) if rows else 0.0
    return out


def aggregate(rows: Sequence[QuestionRun], methods: Sequence[str]) -> dict[str, dict[str, dict]]:
    """Mean metrics per method: overall, per kind and per language."""
    result: dict[str, dict[str, dict]] = {}
    for method in methods:
        mine = [r for r in rows if r.method == method]
        by_kind: dict[str, list[QuestionRun]] = {}
        by_lang: dict[str, list[QuestionRun]] = {}
        for r in mine:
            by_kind.setdefault(r.kind, []).append(r)
            by_lang.setdefault(r.language, []).append(r)
        result[method] = {
            "overall": _mean_metrics(mine),
            "by_kind": {kd: _mean_metrics(v) for kd, v in sorted(by_kind.items())},
            "by_language": {lg: _mean_metrics(v) for lg, v in sorted(by_lang.items())},
        }
    return result


class _Reachability:
    """Which relevant passages the index holds, and which of them a question's filters allow."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.by_doc: dict[str, list[Chunk]] = {}
        for c in store.chunks():
            self.by_doc.setdefault(c.doc_id, []).append(c)
        self._allowed: dict[tuple, set[str]] = {}
        self._where: dict[Relevant, set[str]] = {}

    def where(self, rel: Relevant) -> set[str]:
        """IDs of the chunks (any version, any access) that match a relevant passage."""
        if rel not in self._where:
            chunks = self.by_doc.get(rel.doc_id, [])
            self._where[rel] = {c.chunk_id for c in chunks if matches(c, rel)}
        return self._where[rel]

    def allowed(self, filters: Filters) -> set[str]:
        key = (filters.as_of, filters.audience)
        if key not in self._allowed:
            self._allowed[key] = self.store.allowed_ids(filters)
        return self._allowed[key]


def question_filters(q: Question, audience: str | None = None) -> Filters:
    return Filters(as_of=q.as_of, audience=audience or q.audience)  # type: ignore[arg-type]


def run_retrieval_eval(
    store: Any,
    retriever: Any,
    questions: Sequence[Question],
    methods: Sequence[str],
    k: int = 5,
    progress: Callable[[int, int], None] | None = None,
    *,
    audience: str | None = None,
    questions_file: str = "",
) -> EvalResult:
    """Run every scorable question through every method and measure the rankings.

    `audience` overrides each question's own (for question sets written for the help desk)."""
    if k < 1 or k > DEPTH:
        raise TetherError(f"k must be between 1 and {DEPTH}")
    reach = _Reachability(store)
    skipped: list[tuple[str, str]] = []
    partial: list[tuple[str, str]] = []
    plan: list[tuple[Question, Filters, list[Relevant]]] = []
    for q in questions:
        if not q.relevant:
            why = "expects abstention; no relevant passage" if q.abstain else "no relevant passage"
            skipped.append((q.id, why))
            continue
        filters = question_filters(q, audience)
        allowed = reach.allowed(filters)
        usable: list[Relevant] = []
        missing: list[str] = []
        refused: list[str] = []
        for rel in q.relevant:
            found = reach.where(rel)
            if not found:
                missing.append(passage_label(rel))
            elif not (found & allowed):
                refused.append(passage_label(rel))
            else:
                usable.append(rel)
        reasons = []
        if missing:
            reasons.append("not in the index: " + ", ".join(missing))
        if refused:
            reasons.append(
                f"refused by the filters (as_of {filters.as_of}, audience {filters.audience}): "
                + ", ".join(refused)
            )
        if not usable:
            skipped.append((q.id, "; ".join(reasons)))
            continue
        if reasons:
            partial.append((q.id, "; ".join(reasons)))
        plan.append((q, filters, usable))

    rows: list[QuestionRun] = []
    times: dict[str, list[float]] = {m: [] for m in methods}
    total = len(plan) * len(methods)
    done = 0
    for q, filters, usable in plan:
        sets = [reach.where(rel) for rel in usable]
        for method in methods:
            if hasattr(retriever, "clear_query_cache"):
                retriever.clear_query_cache()  # each method's time includes the query vector
            began = time.perf_counter()
            hits = retriever.search(q.question, DEPTH, filters, method=method)
            seconds = time.perf_counter() - began
            times[method].append(seconds)
            covers = [
                {j for j, s in enumerate(sets) if h.chunk.chunk_id in s} for h in hits[:DEPTH]
            ]
            ranks = tuple(
                next((i + 1 for i, c in enumerate(covers) if j in c), None)
                for j in range(len(usable))
            )
            rows.append(
                QuestionRun(
                    id=q.id,
                    kind=q.kind,
                    language=q.language,
                    method=method,
                    metrics=ranking_metrics(covers, len(usable), k),
                    expected=tuple(passage_label(r) for r in usable),
                    ranks=ranks,
                    top=tuple(_hit_label(h) for h in hits[:k]),
                    seconds=seconds,
                    question=q.question,
                )
            )
            done += 1
            if progress:
                progress(done, total)
    timings = {
        m: {
            "median_ms": 1000 * statistics.median(v) if v else 0.0,
            "p95_ms": 1000 * _percentile(v, 95) if v else 0.0,
            "mean_ms": 1000 * statistics.fmean(v) if v else 0.0,
        }
        for m, v in times.items()
    }
    n_abstain = sum(1 for _, why in skipped if why.startswith("expects abstention"))
    notes = (
        f"{len(plan)} of {len(questions)} questions scored; {len(skipped)} not scored"
        f" ({n_abstain} expect abstention and list no passage,"
        f" {len(skipped) - n_abstain} have no reachable relevant passage);"
        f" {len(partial)} scored on part of their passages",
    )
    return EvalResult(
        methods=tuple(methods),
        k=k,
        rows=tuple(rows),
        aggregates=aggregate(rows, methods),
        timings=timings,
        n_questions=len(questions),
        skipped=tuple(skipped),
        partial=tuple(partial),
        questions_file=questions_file,
        index=str(getattr(store, "path", "")),
        notes=notes,
    )


def _hit_label(hit: Any) -> str:
    c = hit.chunk
    return f"{c.doc_id} v{c.version} § {c.section}"


def _percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * pct / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def larkfield_collection(root: Path | str, dest: Path | str) -> Path:
    """Stage the shared Larkfield benchmark's available documents once each in `dest`:
    `corpus/documents/` plus the text forms of its two PDFs (`corpus/formats/warranty-policy.md`
    and `product-care-pw2200.html`), as its README says. Returns `dest`."""
    import shutil

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


# ---- the HTML report -----------------------------------------------------------------------


def _chart(result: EvalResult, metric: str) -> str:
    """A grouped bar chart (overall and per kind, one bar per method) as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = ["overall", *sorted({r.kind for r in result.rows})]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) + 2), 3.2), dpi=100)
    width = 0.8 / max(1, len(result.methods))
    for i, method in enumerate(result.methods):
        agg = result.aggregates[method]
        values = [
            agg["overall"][metric] if g == "overall" else agg["by_kind"].get(g, {}).get(metric, 0)
            for g in groups
        ]
        xs = [j + (i - (len(result.methods) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, values, width, label=method)
    name = METRIC_NAMES.get(metric, metric).replace("@k", f"@{result.k}")
    ax.set_title(name, loc="left")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.legend(
        fontsize=8,
        ncols=len(result.methods),
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


METRIC_NAMES = {
    "hit": "hit@k",
    "recall": "recall@k",
    "precision": "precision@k",
    "mrr": "MRR",
    "ndcg": "nDCG@k",
}


def write_report(result: EvalResult, path: Path | str) -> Path:
    """A self-contained HTML report: tables, one chart per metric (bars per method, overall
    and per kind) embedded as PNG, and the failing questions with why."""
    esc = html.escape
    k = result.k

    def table(title: str, key: str | None) -> str:
        head = "".join(f"<th>{esc(METRIC_NAMES[m].replace('@k', f'@{k}'))}</th>" for m in METRICS)
        body = []
        for method in result.methods:
            agg = result.aggregates[method]
            groups = {"overall": agg["overall"]} if key is None else agg[key]
            for group, vals in groups.items():
                cells = "".join(f"<td>{vals[m]:.3f}</td>" for m in METRICS)
                body.append(
                    f"<tr><td>{esc(method)}</td><td>{esc(group)}</td>"
                    f"<td>{int(vals['n'])}</td>{cells}</tr>"
                )
        return (
            f"<h2>{esc(title)}</h2><table><tr><th>method</th><th>group</th><th>n</th>{head}</tr>"
            + "".join(body)
            + "</table>"
        )

    charts = "".join(
        f'<figure><img alt="{esc(m)}" src="data:image/png;base64,{_chart(result, m)}"></figure>'
        for m in METRICS
    )
    fails = []
    for method in result.methods:
        for r in result.failures(method):
            fails.append(
                f"<tr><td>{esc(method)}</td><td>{esc(r.id)}</td><td>{esc(r.kind)}</td>"
                f"<td>{esc(r.question)}</td><td>{esc(r.why(k))}</td></tr>"
            )
    skipped = "".join(f"<tr><td>{esc(i)}</td><td>{esc(why)}</td></tr>" for i, why in result.skipped)
    timing = "".join(
        f"<tr><td>{esc(m)}</td><td>{t['median_ms']:.1f}</td><td>{t['p95_ms']:.1f}</td></tr>"
        for m, t in result.timings.items()
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tether eval: retrieval</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 75em; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }}
figure {{ display: inline-block; margin: 0.5em; }}
</style></head><body>
<h1>Retrieval evaluation</h1>
<p>Questions: {esc(result.questions_file or "bundled set")} · index: {esc(result.index)} ·
k = {k} · methods: {esc(", ".join(result.methods))}</p>
<p>{esc(" ".join(result.notes))}</p>
{table("Overall", None)}
<h2>Charts</h2>{charts}
{table("Per kind", "by_kind")}
{table("Per language", "by_language")}
<h2>Search time (ms per query)</h2>
<table><tr><th>method</th><th>median</th><th>p95</th></tr>{timing}</table>
<h2>Failing questions (no relevant passage in the top {k})</h2>
<table><tr><th>method</th><th>id</th><th>kind</th><th>question</th><th>why</th></tr>
{"".join(fails) or '<tr><td colspan="5">none</td></tr>'}</table>
<h2>Not scored</h2>
<table><tr><th>id</th><th>why</th></tr>{skipped or '<tr><td colspan="2">none</td></tr>'}</table>
</body></html>
"""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out


# ---- the verifier measured on a labelled claim set ----------------------------------------


def demo_claims() -> list[Path]:
    """The bundled labelled claim set: constructed claims and labelled recorded ones."""
    folder = Path(str(resources.files("tether.demo")))
    return sorted(folder.glob("claims-*.jsonl"))


def load_claims(paths: Sequence[Path] | None = None) -> list[dict]:
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


def _resolve(store: Any, location: dict, cache: dict) -> str | None:
    key = (location["doc_id"], location.get("version"), location.get("section"))
    if key not in cache:
        rel = Relevant(location["doc_id"], location.get("version"), location.get("section"))
        cache[key] = next(
            (c.chunk_id for c in store.chunks(rel.doc_id, rel.version) if matches(c, rel)), None
        )
    return cache[key]


def run_verifier_eval(
    store: Any,
    items: Sequence[dict],
    *,
    judge: Any = None,
    embedder: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerifierResult:
    """Check every labelled claim and count where the checker is wrong.

    The overall verdict is ok when a claim carries no flag at all; a false pass is an
    unsupported claim marked ok, a false alarm a supported claim flagged."""
    import time as _time

    from tether.answering.context import header
    from tether.answering.pipeline import verify_embedder
    from tether.types import Answer, Claim, Context, Passage
    from tether.verify.check import VerifierCache, check_answer, flag_kind

    if embedder is None and getattr(judge, "embedder", None) is None:
        embedder = verify_embedder()  # wired by Workspace later
    checked = VerifierCache()  # one for the run: each passage is prepared once
    cache: dict = {}
    rows: list[VerifierRow] = []
    for n, item in enumerate(items, 1):
        context_ids = list(item.get("context_ids") or [])
        context_ids += [
            cid for loc in item.get("context", []) if (cid := _resolve(store, loc, cache))
        ]
        cites = list(item.get("cite_ids") or [])
        cites += [cid for loc in item.get("cites", []) if (cid := _resolve(store, loc, cache))]
        chunks = store.get_many(context_ids)
        passages = tuple(
            Passage(chunks[cid], header(chunks[cid]), 0, i + 1)
            for i, cid in enumerate(dict.fromkeys(context_ids))
            if cid in chunks
        )
        context = Context(passages)
        claim = Claim(item["claim"], tuple(cites))
        as_of = date.fromisoformat(item["as_of"]) if item.get("as_of") else None
        t = _time.perf_counter()
        (check,) = check_answer(
            Answer(True, item["claim"], (claim,)),
            store,
            context,
            item.get("question", ""),
            audience=item.get("audience", "public"),
            language=item.get("language", "en"),
            as_of=as_of,
            judge=judge,
            embedder=embedder,
            cache=checked,
        )
        rows.append(
            VerifierRow(item["id"], item["made"], item.get("kind", "recorded"), item["label"],
                        check.flags, _time.perf_counter() - t)
        )  # fmt: skip
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


# ---- the support gate's floors ------------------------------------------------------------


@dataclass(frozen=True)
class GateRow:
    """One floor's trade-off for one method."""

    method: str
    floor: float
    wrongly_refused: int  # answerable questions the gate would refuse
    answerable: int
    let_through: int  # questions that must be refused (unanswerable, staff-only for the public)
    must_refuse: int


@dataclass(frozen=True)
class GateCalibration:
    floors: dict[str, float]
    chosen: tuple[GateRow, ...]
    table: tuple[GateRow, ...]  # a few floors per method, for the README


def calibrate_gate(
    store: Any,
    retriever: Any,
    questions: Sequence[Question],
    methods: Sequence[str] = ("bm25", "dense", "hybrid", "rerank"),
    *,
    k: int = 5,
    max_wrongly_refused: float = 0.02,
    progress: Callable[[int, int], None] | None = None,
) -> GateCalibration:
    """For each method: the highest floor that refuses at most `max_wrongly_refused` of the
    answerable questions (min_support 1), and how many must-refuse questions it lets through.

    Answerable: `abstain` false. Must refuse: `abstain` true (unanswerable questions and
    staff-only questions asked by the public)."""
    from tether.answering.pipeline import support_score

    best: dict[str, list[tuple[float, bool]]] = {m: [] for m in methods}
    steps = len(questions) * len(methods)
    done = 0
    for q in questions:
        filters = Filters(as_of=q.as_of, audience=q.audience)
        for method in methods:
            hits = retriever.search(q.question, k, filters, method=method)
            score = max((support_score(h) for h in hits), default=float("-inf"))
            best[method].append((score, q.abstain))
            done += 1
            if progress:
                progress(done, steps)
    floors: dict[str, float] = {}
    chosen: list[GateRow] = []
    table: list[GateRow] = []
    for method, pairs in best.items():
        answerable = sorted(s for s, abstain in pairs if not abstain)
        refuse = [s for s, abstain in pairs if abstain]
        allowed = int(max_wrongly_refused * len(answerable))
        floor = answerable[allowed] if answerable else 0.0  # refuse `allowed` at most

        def row(f: float, method: str = method, answerable=answerable, refuse=refuse) -> GateRow:
            return GateRow(
                method, f, sum(s < f for s in answerable), len(answerable),
                sum(s >= f for s in refuse), len(refuse),
            )  # fmt: skip

        floors[method] = floor
        chosen.append(row(floor))
        quantiles = sorted(
            {answerable[int(p * (len(answerable) - 1))] for p in (0.0, 0.05, 0.1, 0.2, 0.3)}
        )
        table.extend(row(f) for f in quantiles)
    return GateCalibration(floors, tuple(chosen), tuple(table))
