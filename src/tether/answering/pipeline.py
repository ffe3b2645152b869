"""`ask()`: the whole flow for one question, and `Collection`, the Python API over it.

question → filters (as_of, audience) → retrieval → support gate → context → prompt →
provider → parse → verify → AskResult.

The support gate refuses before any model call (zero cost) when fewer than `min_support`
retrieved passages clear the method's score floor. The support score of a hit is, by method:
BM25 score (bm25), cosine similarity (dense), the dense cosine of a fused hit (hybrid: RRF
scores carry no absolute meaning, and a hit found only by BM25 gets its BM25 score mapped
below every floor), the reranker's score (rerank). Floors are calibrated on the bundled
questions (`tether calibrate`) and stored in the index; the defaults below are those values.

What it cannot do: the gate judges retrieval strength, not whether the passages answer; a
question phrased very differently from the documents can be refused although answerable
(the trade-off table in the README gives the measured rates).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from tether.answering.answer import build_request, parse_completion
from tether.answering.context import DEFAULT_BUDGET, assemble
from tether.errors import ProviderError, TetherError
from tether.protocols import Provider
from tether.stores.sqlite import DEFAULT_INDEX, SqliteStore
from tether.types import (
    Answer,
    AnswerProblem,
    AskResult,
    Audience,
    Filters,
    Gate,
    Hit,
)

# Default floors per method (support score a passage needs to count), see `calibrate`.
DEFAULT_FLOORS: dict[str, float] = {"bm25": 5.15, "dense": 0.826, "hybrid": 0.826, "rerank": 0.784}
DEFAULT_MIN_SUPPORT = 1


def support_score(hit: Hit) -> float:
    """How strongly one hit supports answering, on its method's scale (see module docstring)."""
    if hit.method == "hybrid":
        return float(hit.signals.get("dense", 0.0))
    return float(hit.score)


def gate(hits: list[Hit], floor: float, min_support: int = DEFAULT_MIN_SUPPORT) -> Gate:
    """Pass when at least `min_support` hits clear `floor`."""
    scores = [support_score(h) for h in hits]
    supporting = sum(s >= floor for s in scores)
    best = max(scores, default=0.0)
    passed = supporting >= min_support
    reason = (
        ""
        if passed
        else f"retrieval too weak: {supporting} passage(s) cleared the floor {floor:.3g}"
        f" (best {best:.3g}); need {min_support}"
    )
    return Gate(passed, floor, min_support, supporting, best, reason)


def floors_for(store: SqliteStore) -> dict[str, float]:
    """The calibrated floors stored in the index, else the defaults."""
    floors = dict(DEFAULT_FLOORS)
    for method in floors:
        value = store.meta_value(f"gate_floor:{method}")
        if value is not None:
            floors[method] = float(value)
    return floors


@dataclass(frozen=True)
class AskOptions:
    as_of: date | None = None
    audience: Audience = "public"
    language: str | None = None  # detected from the question when None
    method: str = "auto"  # rerank when the index has vectors, else bm25
    k: int = 5
    budget: int = DEFAULT_BUDGET
    min_support: int = DEFAULT_MIN_SUPPORT
    floor: float | None = None  # None: the index's calibrated floor for the method
    mode: str = "json"  # json | inline
    closed_book: bool = False
    strict: bool = False
    verify: bool = True


def detect_language(text: str) -> str:
    """en or fr (the languages the prompts and refusal sentences know), else the detector's."""
    import py3langid as langid

    lang, _ = langid.classify(text)
    return lang if lang in ("en", "fr") else "en"


def ask(
    question: str,
    store: SqliteStore,
    provider: Provider,
    options: AskOptions | None = None,
    *,
    retriever=None,
    judge=None,
) -> AskResult:
    """Answer one question from the index (see the module docstring for the flow)."""
    o = options or AskOptions()
    if not question.strip():
        raise TetherError("the question is empty")
    timings: dict[str, float] = {}
    language = o.language or detect_language(question)
    filters = Filters(as_of=o.as_of, audience=o.audience)
    base = AskResult(question, o.as_of, o.audience, language, o.method, provider=provider.name)

    if o.closed_book:
        return _answer(base, provider, o, None, timings)

    t = time.perf_counter()
    if retriever is None:
        from tether.retrieval.retriever import Retriever

        retriever = Retriever.for_store(store)
    method = retriever.resolve_method(o.method)
    hits = retriever.search(question, o.k, filters, method=method)
    timings["retrieve_s"] = time.perf_counter() - t
    floor = o.floor if o.floor is not None else floors_for(store).get(method, 0.0)
    decision = gate(hits, floor, o.min_support)
    base = replace(base, method=method, hits=tuple(hits), gate=decision)
    if not decision.passed:
        answer = Answer(False, "", ())
        return replace(
            base, answer=answer, provider="none (refused before the model)", timings=timings
        )

    t = time.perf_counter()
    context = assemble(hits, o.budget)
    timings["context_s"] = time.perf_counter() - t
    result = _answer(replace(base, context=context), provider, o, context, timings)
    if o.verify and result.answer is not None and result.answer.claims:
        from tether.verify import check as verify

        t = time.perf_counter()
        embedder = getattr(retriever, "embedder", None)
        judge = judge if judge is not None else default_judge(provider, embedder)
        # wired by Workspace later: verify no longer loads an embedder for a claim whose
        # passages are in another language; load it here only when the context has one
        if (
            embedder is None
            and getattr(judge, "embedder", None) is None
            and any(p.chunk.meta.language != language for p in context.passages)
        ):
            embedder = verify_embedder()
        checks = verify.check_answer(
            result.answer,
            store,
            context,
            question,
            audience=o.audience,
            language=language,
            as_of=o.as_of,
            judge=judge,
            embedder=embedder,
        )
        answer = result.answer
        if o.strict:
            answer, checks = verify.apply_strict(answer, checks, language=language)
        timings["verify_s"] = time.perf_counter() - t
        result = replace(result, answer=answer, checks=tuple(checks), timings=timings)
    return result


def verify_embedder():
    """The default embedder, for the checker's cross-language test (None when none can be
    built: the checker then matches words). Wired by Workspace later."""
    from tether.embeddings.embedders import default_embedder

    try:
        return default_embedder()
    except Exception:  # no embedder available: the checker falls back to word matching
        return None


def default_judge(provider: Provider, embedder=None):
    """The entailment judge `ask` uses: the local model when it is the provider (already
    loaded), else the embedding judge over the retrieval embedder, else none."""
    from tether.verify.judges import EmbeddingJudge, LLMJudge

    if getattr(provider, "name", "") == "local":
        return LLMJudge(provider)
    if embedder is not None:
        return EmbeddingJudge(embedder)
    return None


def _answer(base: AskResult, provider: Provider, o: AskOptions, context, timings) -> AskResult:
    from tether.types import Context

    ctx = context if context is not None else Context(())
    request = build_request(
        base.question,
        ctx,
        as_of=o.as_of,
        language=base.language,
        mode=o.mode,
        closed_book=o.closed_book,
    )
    t = time.perf_counter()
    try:
        completion = provider.complete(request)
    except ProviderError as exc:
        timings["model_s"] = time.perf_counter() - t
        problem = AnswerProblem("provider_error", str(exc))
        return replace(base, request=request, problem=problem, timings=timings)
    timings["model_s"] = time.perf_counter() - t
    parsed = parse_completion(completion, ctx, mode=o.mode, language=base.language)
    answer = parsed if isinstance(parsed, Answer) else None
    problem = parsed if isinstance(parsed, AnswerProblem) else None
    return replace(
        base,
        request=request,
        completion=completion,
        answer=answer,
        problem=problem,
        provider=completion.provider or provider.name,
        provider_note=completion.note,
        timings=timings,
    )


class Collection:
    """A document collection and its index: `Collection("docs").ask("...")`.

    The index is `<folder>/.tether/index.sqlite` unless `index` is given. The provider is the
    configured one (TETHER_PROVIDER and friends), else the local model when installed, else
    the extractive answerer."""

    def __init__(
        self,
        folder: Path | str,
        *,
        index: Path | str | None = None,
        provider: Provider | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.index = Path(index) if index is not None else self.folder / DEFAULT_INDEX
        self._store: SqliteStore | None = None
        self._provider = provider
        self._retriever = None

    @property
    def store(self) -> SqliteStore:
        if self._store is None:
            if not self.index.exists():
                self.ingest()
            else:
                self._store = SqliteStore(self.index)
        assert self._store is not None
        return self._store

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            from tether.config import load_settings
            from tether.providers.providers import make_provider

            self._provider = make_provider(load_settings())
        return self._provider

    def ingest(self, *, embed: bool = True, progress: Callable | None = None, **kwargs):
        """Sync the index with the folder; returns the SyncReport."""
        from tether.embeddings.embedders import default_embedder

        store = self._store or SqliteStore(self.index)
        self._store = store
        self._retriever = None
        return store.sync(
            self.folder, embedder=default_embedder() if embed else None, progress=progress, **kwargs
        )

    def search(self, query: str, k: int = 5, *, method: str = "auto", **filters) -> list[Hit]:
        return self._get_retriever().search(query, k, Filters(**filters), method=method)

    def ask(self, question: str, **options) -> AskResult:
        return ask(
            question,
            self.store,
            self.provider,
            AskOptions(**options),
            retriever=self._get_retriever(),
        )

    def _get_retriever(self):
        if self._retriever is None:
            from tether.retrieval.retriever import Retriever

            self._retriever = Retriever.for_store(self.store)
        return self._retriever


def result_json(result: AskResult) -> dict:
    """An AskResult as plain JSON-ready data (dates as ISO strings, chunks by ID + location)."""

    def chunk_ref(c) -> dict:
        return {
            "chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "version": c.version,
            "title": c.meta.title,
            "section": c.section,
            "heading_path": list(c.heading_path),
            "anchor": c.anchor,
            "page": c.page,
            "source": c.meta.source,
        }

    ctx = result.context
    comp = result.completion
    return {
        "question": result.question,
        "as_of": result.as_of.isoformat() if result.as_of else None,
        "audience": result.audience,
        "language": result.language,
        "method": result.method,
        "hits": [
            {"rank": h.rank, "score": h.score, "signals": h.signals, **chunk_ref(h.chunk)}
            for h in result.hits
        ],
        "gate": None
        if result.gate is None
        else {
            "passed": result.gate.passed,
            "floor": result.gate.floor,
            "min_support": result.gate.min_support,
            "supporting": result.gate.supporting,
            "best": result.gate.best,
            "reason": result.gate.reason,
        },
        "context": None
        if ctx is None
        else {
            "tokens": ctx.tokens,
            "budget": ctx.budget,
            "tokenizer": ctx.tokenizer,
            "passages": [
                {"marker": p.marker, "header": p.header, "tokens": p.tokens, **chunk_ref(p.chunk)}
                for p in ctx.passages
            ],
            "dropped": [{"reason": d.reason, **chunk_ref(d.chunk)} for d in ctx.dropped],
        },
        "request": None
        if result.request is None
        else {
            "prompt_id": result.request.prompt_id,
            "purpose": result.request.purpose,
            "chunk_ids": list(result.request.chunk_ids),
        },
        "completion": None
        if comp is None
        else {
            "model": comp.model,
            "provider": comp.provider,
            "finish_reason": comp.finish_reason,
            "input_tokens": comp.input_tokens,
            "output_tokens": comp.output_tokens,
            "latency_s": comp.latency_s,
            "cost_usd": comp.cost_usd,
            "note": comp.note,
            "text": comp.text,
        },
        "answer": None
        if result.answer is None
        else {
            "answerable": result.answer.answerable,
            "answer": result.answer.answer,
            "mode": result.answer.mode,
            "claims": [
                {"text": c.text, "chunk_ids": list(c.chunk_ids)} for c in result.answer.claims
            ],
        },
        "problem": None
        if result.problem is None
        else {
            "kind": result.problem.kind,
            "detail": result.problem.detail,
        },
        "checks": [
            {
                "claim": ch.claim.text,
                "chunk_ids": list(ch.claim.chunk_ids),
                "ok": ch.ok,
                "flags": list(ch.flags),
                "entailment": ch.entailment,
                "removed": ch.removed,
                "evidence": [
                    {
                        "chunk_id": e.chunk_id,
                        "text": e.text,
                        "start": e.start,
                        "end": e.end,
                        "score": e.score,
                    }
                    for e in ch.evidence
                ],
            }
            for ch in result.checks
        ],
        "refused": result.refused,
        "provider": result.provider,
        "provider_note": result.provider_note,
        "timings": result.timings,
    }
