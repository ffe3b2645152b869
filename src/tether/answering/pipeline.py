"""`ask()`: the whole flow for one question from parts the caller built; `choose_judge`, the
judge that suits a provider, and `make_judge`, a judge by name from the judge registry
(`tether.answering.judging`, whose `JUDGES` and `shipped_reader` are re-exported here); the
Workspace in `tether.app` builds the parts.

question → filters (as_of, audience) → retrieval → support gate (`tether.answering.gate`, a
cheap off-topic filter) → answerability (`tether.answering.answerable`: does a retrieved
passage give what the question asks for?) → context → prompt → provider → parse → verify →
AskResult.

`ask` builds nothing: the retriever (with its embedder), the provider, the judge and the token
counter are parameters, built once by whoever holds them (the application's Workspace), so a
question never loads a model.

A question (or a search query) over `MAX_QUESTION_CHARS` characters is refused before any
retrieval: ranking's time and memory grow with its length (bench/serve/hostile_soak.py sends
questions at and over the cap: bench/results/hostile_soak.md).

What it cannot do: the gate judges retrieval strength and the answerability judge reads words,
numbers and sentence vectors (see their modules), so a passage that looks like an answer and is
not passes both, and the claim checks are what catch it; the answer's language is English or French only (the languages the
prompts and refusal sentences know).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tether.answering.answer import build_request, parse_completion
from tether.answering.answerable import AnswerabilityJudge, read_question, reader_probabilities
from tether.answering.context import TokenCounter, assemble
from tether.answering.draft import Draft
from tether.answering.evidence import (
    Closeness,
    Evidence,
    build_select_request,
    parse_selection,
    sentence_closeness,
    span_cosines,
)
from tether.answering.gate import (
    check_question,
    explain,
    filtered_out,
    floor_method,
    floors_for,
    gate,
)
from tether.answering.judging import JUDGES as JUDGES  # re-exported: the names
from tether.answering.judging import build_judge
from tether.answering.judging import shipped_reader as shipped_reader  # re-exported
from tether.asks import asks, gives
from tether.config import DEFAULT_PROFILE, Profile
from tether.errors import DeadlineError, ProviderError
from tether.options import AskOptions as AskOptions
from tether.protocols import (
    Embedder,
    Judge,
    Provider,
    SearchableStore,
    Searcher,
    Store,
    StreamingProvider,
    capabilities_of,
)
from tether.retrieval.deep import window_title
from tether.text import detect_language
from tether.types import (
    Answer,
    Answerability,
    AnswerProblem,
    AskResult,
    Context,
    Filters,
    Hit,
)
from tether.verify import check as verify
from tether.verify.flags import public_answer

_log = logging.getLogger(__name__)


def answer_language(text: str) -> str:
    """en or fr (the languages the prompts and refusal sentences know), else en."""
    lang = detect_language(text)
    return lang if lang in ("en", "fr") else "en"


def answer_mode(mode: str, provider: Provider) -> str:
    """The answer mode to use: `mode`, or for "auto" the one the provider's capabilities
    name (select for the local model, which chooses evidence sentences better than it writes
    cited answers: bench/results/local_answers.md; json for the others)."""
    if mode != "auto":
        return mode
    return capabilities_of(provider).answer_mode


def make_judge(
    name: str,
    embedder: Embedder | None,
    llm: Callable[[], Provider] | None = None,
    profile: Profile = DEFAULT_PROFILE,
    *,
    reader: bool = True,
) -> Judge | None:
    """The judge called `name` (one of `JUDGES`), built by its spec in the judge registry
    (`tether.answering.judging`): `align`, the learned alignment judge (no model to load);
    `align+llm`, the same with a language model as a second opinion on the claims it leaves
    uncertain (`llm()` makes the provider); `embedding`, the cosine judge (None without an
    embedder); `llm`, the model on every claim; `none`. Without `reader` (the Settings'
    `reader` off) the alignment judges read words alone, as `words` does. An unknown name is
    a TetherError."""
    return build_judge(name, embedder, llm, profile, reader=reader)


def choose_judge(
    embedder: Embedder | None,
    provider: Provider,
    profile: Profile = DEFAULT_PROFILE,
    *,
    reader: bool = True,
) -> Judge | None:
    """The judge the provider's capabilities name: the learned alignment judge, with the
    provider as its second opinion on uncertain claims when that costs no paid call (`align+llm`:
    the local model, already loaded), else alone (`align`)."""
    return make_judge(
        capabilities_of(provider).judge, embedder, lambda: provider, profile, reader=reader
    )


def ask(
    question: str,
    store: Store,
    provider: Provider,
    options: AskOptions | None = None,
    *,
    retriever: Searcher,
    judge: Judge | None,
    tokens: TokenCounter,
    verifier: VerifierParts | None = None,
    profile: Profile = DEFAULT_PROFILE,
    events: Events | None = None,
    answerability: AnswerabilityJudge | None = None,
    on_text: Callable[[str], None] | None = None,
) -> AskResult:
    """Answer one question from the index with the given parts (see the module docstring).

    `retriever` searches `store` (a `tether.retrieval.retriever.Retriever`; its `embedder`, when
    it has one, also serves the verifier), `judge` scores entailment for the verifier (None: no
    entailment check; `choose_judge` gives the usual one), `tokens` counts the context budget,
    `verifier` carries the checker's cache and an embedder to load for cross-language claims
    on an index without vectors (None: a fresh cache, no such embedder), `profile` the tuned
    values of the index's embedder (gate floors, the checker's cosine cut-offs). `events`, when
    given, is called with each stage's name and the result so far as it completes (see
    `Events`), so a face can stream them. `answerability` judges, after the gate, whether a
    retrieved passage answers (None, or `options.answerability` False: not judged); it judges
    reranked passages only (what it was trained on: an index without vectors, or another
    method asked for, is not judged, and the gate and the model decide)."""
    o = options or AskOptions()
    o = replace(o, mode=answer_mode(o.mode, provider))
    emit = events or _no_events
    # a draft is unchecked: it may hold claims the checks will withhold from a public reader
    on_text = on_text if o.audience == "staff" else None
    check_question(question)
    timings: dict[str, float] = {}
    language = o.language or answer_language(question)
    filters = Filters(as_of=o.as_of, audience=o.audience)
    base = AskResult(question, o.as_of, o.audience, language, o.method, provider=provider.name)

    if o.closed_book:
        closed = _answer(base, provider, o, None, timings, on_text=on_text)
        emit("answer", _unchecked(closed))
        return closed

    on_time(o, "retrieval")
    t = time.perf_counter()
    method = retriever.answer_method if o.method == "auto" else retriever.resolve_method(o.method)
    hits = retriever.search(question, o.k, filters, method=method)
    timings["retrieve_s"] = time.perf_counter() - t
    floors = floors_for(store, profile.gate_floors, o.audience)
    floor = o.floor if o.floor is not None else floors.get(floor_method(method), 0.0)
    decision = gate(hits, floor, o.min_support)
    if not decision.passed and not hits:  # nothing found: the filters may be why
        decision = explain(decision, filtered_out(store, question, filters))
    base = replace(base, method=method, hits=tuple(hits))
    emit("retrieval", base)
    base = replace(base, gate=decision)
    emit("gate", base)
    if not decision.passed:
        return _refused_before_model(base, timings)
    if answerability is not None and o.answerability and method in ("rerank", "deep"):
        on_time(o, "answerability")
        t = time.perf_counter()
        verdict = judge_answerability(answerability, question, hits, store, filters, retriever)
        timings["answerability_s"] = time.perf_counter() - t
        base = replace(base, answerability=verdict)
        emit("answerability", base)
        if not verdict.answerable:
            return _refused_before_model(base, timings)

    on_time(o, "the model call")
    t = time.perf_counter()
    context = assemble(hits, o.budget, count=tokens.count, tokenizer=tokens.name)
    timings["context_s"] = time.perf_counter() - t
    closeness = _closeness(question, store, retriever, context) if o.mode == "select" else None
    spans = (
        _span_closeness(question, store, retriever, context) if o.mode in ("json", "inline") else ()
    )
    # an answerer that quotes (no model) chooses its sentences by what the reader says
    readings = (
        span_answers(question, retriever, context, spans)
        if spans and not capabilities_of(provider).model
        else ()
    )
    result = _answer(
        replace(base, context=context),
        provider,
        o,
        context,
        timings,
        closeness,
        spans,
        on_text,
        readings,
    )
    if o.mode == "select" and o.answerability:
        result = chosen_answer(result)
    emit("answer", _unchecked(result))
    on_time(o, "the checks")
    embedder = getattr(retriever, "embedder", None)
    result = checked(
        result,
        store,
        context,
        o,
        judge=judge,
        embedder=embedder,
        verifier=verifier,
        profile=profile,
    )
    if result.checks:
        emit("checks", result)
    return result


def _unchecked(result: AskResult) -> AskResult:
    """What the "answer" event shows before the checks: everything for staff; for a public
    reader no answer or reply yet (they may hold claims the checks will withhold)."""
    if result.audience == "staff":
        return result
    return replace(result, answer=None, completion=None)


def _refused_before_model(base: AskResult, timings: dict[str, float]) -> AskResult:
    """`base` as a refusal made before the answer's model call (by the gate or
    answerability; the latter's second opinion may have asked the model one yes/no)."""
    answer = Answer(False, "", ())
    asked = base.answerability is not None and base.answerability.second is not None
    provider = (
        "none (refused after the model's yes/no on answerability)"
        if asked
        else "none (refused before the model)"
    )
    return replace(base, answer=answer, provider=provider, timings=timings)


def on_time(o: AskOptions, stage: str) -> None:
    """Raise `DeadlineError` when `o.deadline` has passed (before `stage` starts)."""
    if o.deadline is not None and time.monotonic() > o.deadline:
        raise DeadlineError(f"the request ran past its deadline before {stage}; stopped there")


def chosen_answer(result: AskResult) -> AskResult:
    """Select mode's abstention: the sentences the model chose answer only when one of them
    gives what the question asks for (`tether.asks`: a price for how much, a length for how
    long, a time for when); when none does, the answer is a refusal by answerability."""
    answer = result.answer
    if answer is None or not answer.answerable or not answer.claims:
        return result
    kind = asks(result.question)
    if any(gives(kind, c.text) for c in answer.claims):
        return result
    language = result.language
    prior = result.answerability
    reason = (
        "les phrases choisies ne donnent pas ce qui est demandé ; reformulez la question"
        if language == "fr"
        else "the sentences the model chose do not give what the question asks for; rephrase"
        " the question, or ask a person on the team"
    )
    verdict = Answerability(
        answerable=False,
        probability=prior.probability if prior else 0.0,
        threshold=prior.threshold if prior else 0.0,
        asked=kind,
        reason=reason,
        second=prior.second if prior else None,
    )
    return replace(result, answer=Answer(False, "", (), mode=answer.mode), answerability=verdict)


def judge_answerability(
    judge: AnswerabilityJudge,
    question: str,
    hits: list[Hit],
    store: Store,
    filters: Filters,
    retriever: Searcher,
) -> Answerability:
    """The answerability judge's decision on `question` and its retrieved `hits` (the
    retriever's query vector gives the sentence cosines when it has an embedder)."""
    embedder = getattr(retriever, "embedder", None)
    vector = retriever.query_vector(question) if embedder is not None else None
    read = reader_probabilities(question, hits, retriever)
    reading = read_question(question, hits, store, filters, vector, read)
    verdict = judge.decide(reading, question, reading.evidence)
    language = answer_language(question)
    return Answerability(
        answerable=verdict.answerable,
        probability=round(verdict.probability, 4),
        threshold=verdict.threshold,
        asked=verdict.reading.asked,
        reason="" if verdict.answerable else verdict.reading.reason(language),
        second=None if verdict.second is None else round(verdict.second, 4),
    )


def checked(
    result: AskResult,
    store: Store,
    context: Context,
    o: AskOptions,
    *,
    judge: Judge | None,
    embedder: Embedder | None,
    verifier: VerifierParts | None = None,
    profile: Profile = DEFAULT_PROFILE,
) -> AskResult:
    """`result` with its answer's claims checked against `context` (the passages the model
    was shown; a cited chunk outside it is `not_in_context`), and --strict applied; `embedder`
    is retrieval's (None: the verifier's own is loaded only when a passage of the context is
    in another language than the answer). Unchanged when there is nothing to check."""
    if not (o.verify and result.answer is not None and result.answer.claims):
        if result.answer is not None and o.audience != "staff":  # no claim: nothing checked
            return replace(result, answer=public_answer(result.answer, result.language))
        return result
    timings = dict(result.timings)
    language = result.language
    t = time.perf_counter()
    parts = verifier or VerifierParts()
    # an index without vectors: load an embedder for the checker's cross-language test
    # only when a passage of the context is in another language than the answer
    if (
        embedder is None
        and getattr(judge, "embedder", None) is None
        and parts.embedder is not None
        and any(p.chunk.meta.language != language for p in context.passages)
    ):
        embedder = parts.embedder()
    check_options = verify.VerifierOptions(
        audience=o.audience,
        language=language,
        as_of=o.as_of,
        embedder=embedder,
        # a chosen sentence is its passage's own text: no entailment to judge
        judge=None if result.answer.mode == "select" else judge,
        same_point_cosine=profile.same_point_cosine,
        cross_language_cut=profile.cross_language_cut,
    )
    checks = verify.check_answer(
        result.answer, store, context, result.question, check_options, cache=parts.cache
    )
    answer = result.answer
    if o.strict:
        answer, checks = verify.apply_strict(answer, checks, language=language)
    answer, checks, notice = verify.withhold(answer, checks, audience=o.audience, language=language)
    timings["verify_s"] = time.perf_counter() - t
    return replace(result, answer=answer, checks=tuple(checks), timings=timings, notice=notice)


Events = Callable[[str, AskResult], None]
"""What `ask` calls as each stage completes: ("retrieval", the result with its hits), ("gate",
with the gate's decision), ("answerability", with the answerability judge's), ("answer", with the passages, the completion and
the unchecked answer; for a public reader without the completion and answer, which may hold
claims the checks will withhold), ("checks", with every
claim's checks); a refusal by the gate stops after "gate", one by the answerability judge after
"answerability", a closed-book question has only
"answer". The final result is `ask`'s return value."""


def _no_events(stage: str, result: AskResult) -> None:
    """No one listens."""


@dataclass(frozen=True)
class VerifierParts:
    """What the checker keeps between questions (its prepared passages) and the embedder it
    may load for cross-language claims when retrieval has none (called only when needed;
    returns None when no embedder can be built here)."""

    cache: verify.VerifierCache = field(default_factory=verify.VerifierCache)
    embedder: Callable[[], Embedder | None] | None = None


def _closeness(
    question: str, store: SearchableStore, retriever: Searcher, context: Context
) -> Closeness | None:
    """How close the question is to each context sentence, from the index's sentence vectors
    and the retriever's query vector; None without an embedder or sentence vectors."""
    if getattr(retriever, "embedder", None) is None:
        return None
    vectors = store.sentence_vectors(context.chunk_ids)
    if not vectors:
        return None
    return sentence_closeness(retriever.query_vector(question), vectors, context)


def _span_closeness(
    question: str, store: SearchableStore, retriever: Searcher, context: Context
) -> tuple[tuple[str, int, int, float], ...]:
    """The question's cosine to each sentence span of the context's passages (chunk_id,
    start, end, cosine), for answerers that read passages directly; () without vectors."""
    if getattr(retriever, "embedder", None) is None:
        return ()
    vectors = store.sentence_vectors(context.chunk_ids)
    if not vectors:
        return ()
    cosines = span_cosines(retriever.query_vector(question), vectors)
    return tuple(
        (cid, a, b, round(float(v), 4))
        for cid, (spans, values) in cosines.items()
        for (a, b), v in zip(spans, values, strict=True)
    )


READ_SPANS = 12  # the context's sentences closest to the question that the reader reads


def span_answers(
    question: str,
    retriever: Searcher,
    context: Context,
    spans: tuple[tuple[str, int, int, float], ...],
    limit: int = READ_SPANS,
) -> tuple[tuple[str, int, int, float], ...]:
    """The reader's P(answers) for the `limit` sentence spans closest to the question (by
    cosine, `spans`), each read with its passage's title and headings: (chunk_id, start, end,
    probability); () without the reader."""
    deep = getattr(retriever, "deep", None)
    if deep is None or not spans:
        return ()
    chunks = {p.chunk.chunk_id: p.chunk for p in context.passages}
    best = sorted((s for s in spans if s[0] in chunks), key=lambda s: -s[3])[:limit]
    evidence = []
    for cid, a, b, _ in best:
        title = window_title(chunks[cid])
        text = chunks[cid].text[a:b].strip()
        evidence.append(([title, text] if title else [text], [0, 1] if title else [0]))
    if not evidence:
        return ()
    probs = deep.reader.relevance(question, evidence)
    return tuple(
        (cid, a, b, round(float(p[0]), 4)) for (cid, a, b, _), p in zip(best, probs, strict=True)
    )


def _answer(
    base: AskResult,
    provider: Provider,
    o: AskOptions,
    context: Context | None,
    timings: dict[str, float],
    closeness: Closeness | None = None,
    spans: tuple[tuple[str, int, int, float], ...] = (),
    on_text: Callable[[str], None] | None = None,
    readings: tuple[tuple[str, int, int, float], ...] = (),
) -> AskResult:
    ctx = context if context is not None else Context(())
    shown: tuple[Evidence, ...] = ()
    select = o.mode == "select" and not o.closed_book
    if select:
        request, shown = build_select_request(
            base.question, ctx, as_of=o.as_of, language=base.language, closeness=closeness
        )
    else:
        request = build_request(
            base.question,
            ctx,
            as_of=o.as_of,
            language=base.language,
            mode=o.mode,
            closed_book=o.closed_book,
            closeness=spans,
            answers=readings,
        )
    t = time.perf_counter()
    streams = on_text is not None and isinstance(provider, StreamingProvider)
    try:
        if on_text is not None and isinstance(provider, StreamingProvider):
            draft = Draft(o.mode, on_text, [e.text for e in shown])
            completion = provider.stream(request, draft.feed)
        else:
            completion = provider.complete(request)
    except ProviderError as exc:
        timings["model_s"] = time.perf_counter() - t
        problem = AnswerProblem("provider_error", str(exc))
        return replace(base, request=request, problem=problem, timings=timings)
    timings["model_s"] = time.perf_counter() - t
    parsed = (
        parse_selection(completion, shown, language=base.language)
        if select
        else parse_completion(completion, ctx, mode=o.mode, language=base.language)
    )
    answer = parsed if isinstance(parsed, Answer) else None
    found = parsed if isinstance(parsed, AnswerProblem) else None
    if on_text is not None and not streams and answer is not None and answer.answer:
        on_text(answer.answer)  # a provider that cannot stream: the whole draft at once
    return replace(
        base,
        request=request,
        completion=completion,
        answer=answer,
        problem=found,
        provider=completion.provider or provider.name,
        provider_note=completion.note,
        timings=timings,
    )
