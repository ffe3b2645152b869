"""Searching and answering on a Workspace: the bodies of `Workspace.retriever`, `.search`, `.filtered_out`, `.warm`, `.ask`, `.ask_agent`
and `.check`.

What it cannot do: it holds no state of its own; the retriever it keeps is the Workspace's,
and everything it answers is checked and recorded by the engine's modules
(`tether.answering.pipeline`, `.agent`, `.claim_check`) and the Workspace's audit
(`tether.app.records`). The retrieval and answering modules load when first used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tether import deadlines
from tether.answering.answer import MAX_CLAIM_CHARS, MAX_CLAIMS
from tether.answering.claim_check import check_claims
from tether.answering.gate import check_question
from tether.answering.gate import filtered_out as gate_filtered_out
from tether.app.locate import check_audience
from tether.app.parts import retriever_for
from tether.catalog import one_of
from tether.deadlines import Deadline
from tether.errors import LimitError, TetherError
from tether.options import CheckOptions, SearchOptions
from tether.protocols import capabilities_of
from tether.types import AskResult, Filters, Hit

if TYPE_CHECKING:
    from tether.answering.agent import AgentCaps
    from tether.answering.pipeline import AskOptions, Events
    from tether.app.workspace import Workspace
    from tether.retrieval.retriever import Retriever
    from tether.types import Claim, ClaimCheck

# `Workspace.check`'s options under their former name (the HTTP body of `POST /v1/check` is
# `tether.server.requests.CheckRequest`, a model of its own)
CheckRequest = CheckOptions


def retriever(ws: Workspace, rewrite: Callable[[str], str] | None, dense: bool) -> Retriever:
    """The retriever over the index, with the Profile's fusion weights; one is kept (and
    its caches with it) while the index's generation stays, unless a query rewriter or
    `dense=False` (BM25 only, no embedder loaded) is asked for. Its query vectors are
    the Models' query cache's (`Models.query_embedder`), or, with an embedder given to
    this Workspace, a cache of the retriever's own."""
    generation = ws.store.generation()
    if rewrite is None and dense and ws._retriever is not None:
        if ws._retriever_generation == generation:
            return ws._retriever
        ws._retriever = None  # another write since: the embedder or vectors may differ
    built = retriever_for(
        ws.store,
        embedder=ws.query_embedder() if dense else None,
        profile=ws.profile,
        dense=dense,
        rewrite=rewrite,
        reader=ws.settings.reader,
    )
    if rewrite is None and dense:
        ws._retriever, ws._retriever_generation = built, generation
    return built


def search(ws: Workspace, query: str, options: SearchOptions | None) -> list[Hit]:
    """`Workspace.search`: BM25 alone (with no retriever kept yet) loads no embedder."""
    from tether.retrieval.retriever import check_method

    check_question(query, "search query", empty_ok=True)
    o = options or SearchOptions()
    filters = Filters(as_of=o.as_of, audience=check_audience(o.audience))
    lexical = check_method(o.method) == "bm25" and ws._retriever is None
    with deadlines.bound(o.deadline):
        deadlines.check("the search's start")
        found = ws.retriever(dense=not lexical)
        return found.search(query, o.k, filters, method=o.method)


def filtered_out(ws: Workspace, query: str, filters: Filters) -> str:
    """Why the filters left nothing that matches `query`, or "" (`Workspace.filtered_out`, whose
    docstring says the rest)."""
    return gate_filtered_out(ws.store, query, filters)


def warm(ws: Workspace) -> None:
    """Load what answering a question loads on first use, now: the embedder and the
    reranker (one search), the judges, the token counter and the provider's model (when
    it has one to load, such as the local model), so the first question does not wait
    for them. Nothing is recorded in the audit."""
    ws.search("warm-up")
    ws.answerability_judge()
    ws.judge()
    ws.tokens().count("warm-up")
    load = getattr(ws.provider, "load", None)
    if callable(load):
        load()


def ask(
    ws: Workspace,
    question: str,
    options: AskOptions | None,
    events: Events | None,
    who: str | None,
    audit: bool,
    on_text: Callable[[str], None] | None,
) -> AskResult:
    """Answer `question` with checked citations (see `tether.answering.pipeline.ask`) and
    record it in the audit as asked by `who` (a key name; the OS user when None) unless
    `audit` is False or the setting TETHER_AUDIT is off (the result's `audit_id` is the
    entry's id, None when nothing was recorded); `events` hears each stage as it
    completes (`tether.answering.pipeline.Events`), `on_text` the unchecked draft of the
    answer as the model writes it (staff readers only)."""
    from tether.answering.pipeline import AskOptions
    from tether.answering.pipeline import ask as answer

    check_question(question)  # before the retriever loads its embedder
    o = options or AskOptions()
    check_audience(o.audience)
    # the retrieval stage stops at its own boundaries too (`ask` checks between stages)
    with deadlines.bound(Deadline(o.deadline) if o.deadline is not None else None):
        result = answer(
            question,
            ws.store,
            ws.provider,
            options,
            retriever=ws.retriever(),
            judge=ws.judge(),
            tokens=ws.tokens(),
            verifier=ws.verifier(),
            profile=ws.profile,
            events=events,
            answerability=ws.answerability_judge(),
            on_text=on_text,
        )
    return recorded(ws, result, who, audit)


def ask_agent(
    ws: Workspace,
    question: str,
    options: AskOptions | None,
    caps: AgentCaps | None,
    who: str | None,
    audit: bool,
) -> AskResult:
    """Answer `question` with the agentic search/read loop (`tether.answering.agent`):
    the model searches and reads within `caps`, and its claims are checked against the
    passages it read. The audience and date of `options` fix what it may see; the answer
    is audited like `ask`'s."""
    from tether.answering.agent import ToolCalls, run_agent
    from tether.answering.pipeline import AskOptions, answer_language, checked

    check_question(question)
    o = options or AskOptions()
    audience = check_audience(o.audience)
    if not capabilities_of(ws.provider).tool_use:
        from tether.providers.registry import names

        raise TetherError(
            f"--agent needs a model that chooses its actions ({one_of(names(tool_use=True))});"
            f" the {ws.provider.name} provider cannot"
        )
    kept = ws.retriever()
    method = kept.resolve_method(o.method)
    filters = Filters(as_of=o.as_of, audience=audience)
    find = lambda query: kept.search(query, o.k, filters, method=method)  # noqa: E731
    tools = ToolCalls(find, lambda chunk_id: ws.read(chunk_id, audience))
    language = o.language or answer_language(question)
    base = AskResult(question, o.as_of, audience, language, method, provider=ws.provider.name)
    as_of_text = o.as_of.isoformat() if o.as_of else "unknown"
    result = run_agent(base, ws.provider, tools, caps, as_of_text=as_of_text)
    assert result.context is not None  # run_agent always sets the passages it read
    result = checked(
        result,
        ws.store,
        result.context,
        o,
        judge=ws.judge(),
        embedder=kept.embedder,
        verifier=ws.verifier(),
        profile=ws.profile,
    )
    return recorded(ws, result, who, audit)


def recorded(ws: Workspace, result: AskResult, who: str | None, audit: bool) -> AskResult:
    """`result` recorded in the audit (unless `audit` is False or the setting is off), with
    the entry's id as its `audit_id` when it was written."""
    if not (audit and ws.settings.audit):
        return result
    entry_id = ws.record(result, who)
    return replace(result, audit_id=entry_id) if entry_id else result


def check(
    ws: Workspace,
    claims: Sequence[Claim],
    passage_ids: Sequence[str],
    options: CheckOptions | None,
) -> list[ClaimCheck]:
    """Check `claims` (each with the chunk IDs it cites) against the passages
    `passage_ids`, as `ask` checks a model's answer. A passage the audience may not see,
    or one not in force on `as_of`, is left out of the context exactly like an unknown
    ID, so a claim citing it reads `missing_id`. More than `MAX_CLAIMS` claims, or one over
    `MAX_CLAIM_CHARS` characters, is a `LimitError` (a model's answer has the same bounds)."""
    o = options or CheckOptions()
    check_audience(o.audience)
    if len(claims) > MAX_CLAIMS:  # a model's answer's bounds, for every face (HTTP: 422)
        raise LimitError(f"{len(claims)} claims to check: at most {MAX_CLAIMS}")
    long = next((c for c in claims if len(c.text) > MAX_CLAIM_CHARS), None)
    if long is not None:
        raise LimitError(f"a claim of {len(long.text):,} characters: at most {MAX_CLAIM_CHARS:,}")
    return check_claims(
        ws.store,
        claims,
        passage_ids,
        o,
        tokens=ws.tokens(),
        embedder=ws.retriever().embedder,
        profile=ws.profile,
        cache=ws.verifier().cache,
        reader=ws.settings.reader,
    )
