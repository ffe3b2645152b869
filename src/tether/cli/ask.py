"""Asking: `tether ask`, `chat`, `demo` and `questions` (a question set listed, a starter one,
or one made from the feedback on recorded answers), and how an answer is printed (the
passages shown, the answer, each claim's citations and checks, tokens and cost).

What it cannot do: it answers nothing itself (`tether.answering.pipeline.ask` does) and
checks nothing itself (the verifier did; it only prints the flags and evidence).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.catalog import AUDIENCES, METHODS, PROVIDERS, one_of
from tether.cli.app import (
    EXIT_HELP,
    DemoOpt,
    DraftPrinter,
    IndexOpt,
    JsonOpt,
    ModelOpt,
    ProviderOpt,
    QuestionsOpt,
    StoreOpt,
    as_of_date,
    as_of_option,
    ask_exit_code,
    audience_option,
    audience_value,
    err,
    error_line,
    method_option,
    open_workspace,
    out,
    print_json,
    provider_option,
    shown,
    table,
    user_errors,
    verbosity,
    working,
)
from tether.errors import NotFoundError, TetherError
from tether.places import DEMO_INDEX

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.types import AgentTrace, AskResult, ClaimCheck, Completion, Context

QID = re.compile(r"^[A-Z]+\d+$")
BudgetOpt = Annotated[
    int | None,
    typer.Option(
        "--budget",
        help="Tokens of passages the model may read (e5 tokens, headers included;"
        " default 1800); passages over it are dropped, and the answer says so.",
        min=50,
        max=100_000,
    ),
]

AgentOpt = Annotated[
    bool,
    typer.Option(
        help="Let the model search and read in steps before it answers (needs a language"
        " model as provider, not the extractive answerer); claims may cite only passages"
        " it read."
    ),
]
MaxStepsOpt = Annotated[
    int, typer.Option(help="With --agent: actions before it must answer.", min=1, max=50)
]
MaxTokensOpt = Annotated[
    int, typer.Option(help="With --agent: model tokens (in + out) before it must answer.", min=100)
]
MaxSecondsOpt = Annotated[
    float, typer.Option(help="With --agent: seconds before it must answer.", min=1)
]


def ask_options(
    question: str,
    as_of: str | None,
    audience: str | None,
    method: str,
    k: int,
    *,
    demo: bool = False,
    **rest: Any,
) -> tuple[str, Any, bool]:
    """(question text, AskOptions, whether it is a bundled question). A bundled question ID
    (Q102) is read only on the demo index (`demo`); elsewhere it is a question like any
    other. It brings its date and language, never its audience: public unless `audience`."""
    from tether.answering.pipeline import AskOptions
    from tether.app import today
    from tether.evaluation.questions import load_questions

    bundled = None
    if demo and QID.match(question.strip()):
        found = {q.id: q for q in load_questions()}
        bundled = found.get(question.strip())
        if bundled is None:
            raise NotFoundError(
                f"no question {question!r} in the bundled set (see `tether questions`)"
            )
    when = bundled.as_of if bundled else today()
    opts = AskOptions(
        as_of=as_of_date(as_of) if as_of is not None else when,
        audience=audience_value(audience) if audience else "public",  # type: ignore[arg-type]
        language=bundled.language if bundled else None,
        method=method,
        k=k,
        **rest,
    )
    return (bundled.question if bundled else question), opts, bundled is not None


def on_demo_index(index: Path | None, demo: bool, question: str = "") -> bool:
    """Whether a command reads the demo index: --demo, an --index that is the demo index, or
    (for a bundled question ID given without --index) no index of the user's own found."""
    if demo:
        return True
    if index is not None:
        return index.resolve() == DEMO_INDEX.resolve()
    if not QID.match(question.strip()):
        return False
    from tether.app import index_found

    return not index_found()  # no index of the user's: the bundled question runs on the demo


def demo(
    index: Annotated[Path, typer.Option(help="Where to put the demo index.")] = DEMO_INDEX,
    question: Annotated[
        str, typer.Option(help="The question to answer at the end (text or a bundled ID).")
    ] = "Q053",
    provider: Annotated[
        str | None,
        typer.Option(
            help="As for `ask` (default: local model if installed, else extractive).",
            callback=provider_option,
        ),
    ] = None,
) -> None:
    """Ingest the bundled demo collection, search it, and answer a question with checked citations."""
    from tether.app import Workspace
    from tether.cli.ingest import ingest_progress, print_report
    from tether.cli.search import print_hits, run_search
    from tether.types import Filters

    with user_errors():
        with ingest_progress() as step:
            ws = Workspace.open(
                index,
                demo=True,
                refresh_demo=True,
                provider=provider,
                progress=step,
                on_demo=print_report,
            )
        text, opts, _ = ask_options(question, None, None, "auto", 5, demo=True)
        filters = Filters(as_of=opts.as_of, audience=opts.audience)
        out.print(f"\n[bold]search:[/bold] {shown(text)}", highlight=False)
        print_hits(run_search(ws, text, 5, filters, "auto"), filters)
        described = shown(ws.provider.describe())  # type: ignore[attr-defined]
        out.print(f"\n[bold]ask[/bold] (answering with {described}):", highlight=False)
        with working("answering…"):
            result = ws.ask(text, opts, who="cli")
        print_result(result, "", ws.profile.note)
        out.print(
            f'\nNext: tether ask "your question" --demo · tether questions · tether eval'
            f"   (the index is {shown(index)})",
            highlight=False,
        )


def questions(
    kind: Annotated[str | None, typer.Option(help="Only questions of this kind.")] = None,
    questions_file: QuestionsOpt = None,
    as_json: JsonOpt = False,
    template: Annotated[
        bool,
        typer.Option(
            "--template",
            help="Print a starter question set (JSON Lines) to edit for `tether eval"
            " --questions`; docs/questions.md explains each key.",
        ),
    ] = False,
    from_feedback: Annotated[
        bool,
        typer.Option(
            "--from-feedback",
            help="Print a question set (JSON Lines) made from the feedback on the index's"
            " recorded answers (`tether audit --feedback`), for `tether eval --questions`.",
        ),
    ] = False,
    audience: Annotated[
        str,
        typer.Option(
            "--audience",
            help="With --from-feedback: the reader; public (default) reads the feedback on"
            " public answers only, staff all of it.",
        ),
    ] = "public",
    since: Annotated[
        str | None, typer.Option(help="With --from-feedback: feedback from this date on.")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="With --from-feedback: feedback up to this date.")
    ] = None,
    asked_by: Annotated[
        str | None,
        typer.Option(
            "--asked-by",
            help=f"With --from-feedback: only questions asked for {one_of(AUDIENCES)}.",
        ),
    ] = None,
    index: IndexOpt = None,
    demo: DemoOpt = False,
    store: StoreOpt = None,
) -> None:
    """List the questions of a question set (or print a starter one with --template, or one
    made from the feedback on recorded answers with --from-feedback)."""
    from tether.evaluation.questions import QUESTION_TEMPLATE, load_questions

    if template:
        sys.stdout.write(QUESTION_TEMPLATE)
        return
    if from_feedback:
        if questions_file is not None or kind is not None:
            raise typer.BadParameter(
                "--questions and --kind read a question set; it makes one",
                param_hint="--from-feedback",
            )
        print_feedback_questions(index, demo, store, audience, since, until, asked_by, as_json)
        return
    with user_errors():
        qs = load_questions(questions_file)
    if kind is not None:
        kinds = sorted({q.kind for q in qs})
        if kind not in kinds:
            error_line(f"no questions of kind {kind!r}; kinds: {', '.join(kinds)}")
            raise typer.Exit(1)
        qs = [q for q in qs if q.kind == kind]
    if as_json:
        from tether.schemas import WireQuestion

        print_json([WireQuestion.from_question(q) for q in qs])
        return
    listed = table(
        f"{len(qs)} questions",
        ("id", "kind", "lang", "audience", "as of", "abstain", "question"),
        overflow="fold",
    )
    for q in qs:
        listed.add_row(
            *(shown(v, one_line=True) for v in (q.id, q.kind, q.language, q.audience)),
            q.as_of.isoformat() if q.as_of else "-",
            "yes" if q.abstain else "",
            shown(q.question),
        )
    out.print(listed)


def print_feedback_questions(
    index: Path | None,
    demo: bool,
    store: str | None,
    audience: str,
    since: str | None,
    until: str | None,
    asked_by: str | None,
    as_json: bool,
) -> None:
    """`questions --from-feedback`: the question set made from the feedback the options select
    (`Workspace.feedback_questions`), as JSON Lines (--json: the wire questions); what could
    not be used as given is said on stderr."""
    import json

    from tether.cli.audit import audit_query
    from tether.evaluation.questions import question_line

    query = audit_query(audience, since, until, asked_by)
    with user_errors():
        qs, notes = open_workspace(index, demo, store).feedback_questions(query)
    for note in notes:
        err.print(f"note: {shown(note, one_line=True)}", highlight=False, soft_wrap=True)
    if not qs:
        err.print(
            "note: no feedback recorded for this reader (see `tether audit --feedback`)",
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        from tether.schemas import WireQuestion

        print_json([WireQuestion.from_question(q) for q in qs])
        return
    for q in qs:
        typer.echo(json.dumps(question_line(q), ensure_ascii=False))


def ask(
    question: Annotated[
        str,
        typer.Argument(
            help="A question, or on the demo index a bundled question ID such as Q007 (its"
            " date applies; the audience stays public unless --audience says otherwise)."
        ),
    ],
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Date the answer must hold on: YYYY-MM-DD, today (default) or none.",
            callback=as_of_option,
        ),
    ] = None,
    audience: Annotated[
        str | None,
        typer.Option(
            help=f"{one_of(AUDIENCES)} (default public: fail-closed).", callback=audience_option
        ),
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help=f"Retrieval: {one_of(METHODS)} (rerank's top 10 reread by"
            " tether's reader with the question). Default: deep when the index has vectors"
            " and the reader loads, else rerank, else bm25.",
            callback=method_option,
        ),
    ] = "auto",
    k: Annotated[int, typer.Option("--k", "-k", help="Passages to retrieve.", min=1, max=50)] = 5,
    budget: BudgetOpt = None,
    provider: Annotated[
        str | None,
        typer.Option(
            help=f"{one_of(list(PROVIDERS))}, or an installed plugin's name (default:"
            " TETHER_PROVIDER, else local if installed, else extractive).",
            callback=provider_option,
        ),
    ] = None,
    model: ModelOpt = None,
    closed_book: Annotated[
        bool, typer.Option(help="Ask the model alone, without passages (for comparison).")
    ] = False,
    inline: Annotated[
        bool,
        typer.Option(
            help="Numbered [n] citations instead of JSON (for models without structured output)."
        ),
    ] = False,
    select: Annotated[
        bool | None,
        typer.Option(
            "--select/--write",
            help="Let the model choose numbered evidence sentences (the answer quotes them)"
            " or write a cited answer. Default: select with the local model, write otherwise.",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option(help="Remove claims that fail an exact check; refuse when none is left.")
    ] = False,
    answerability: Annotated[
        bool,
        typer.Option(
            help="Refuse before the model when the answerability judge finds no passage that"
            " gives what the question asks for (--no-answerability: let the model decide)."
        ),
    ] = True,
    agent: AgentOpt = False,
    max_steps: MaxStepsOpt = 6,
    max_tokens: MaxTokensOpt = 16_000,
    max_seconds: MaxSecondsOpt = 300.0,
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    with user_errors():
        if inline and select:
            raise TetherError("--inline and --select are two answer modes: choose one")
        on_demo = on_demo_index(index, demo, question)
        mode = "inline" if inline else {None: "auto", True: "select", False: "json"}[select]
        text, opts, _ = ask_options(
            question,
            as_of,
            audience,
            method,
            k,
            demo=on_demo,
            **({} if budget is None else {"budget": budget}),
            closed_book=closed_book,
            mode=mode,
            strict=strict,
            answerability=answerability,
        )
        ws = open_workspace(
            index,
            demo or (index is None and store is None and on_demo),
            store,
            provider=provider,
            model=model,
        )
        with working("loading the model…"):
            ws.provider  # noqa: B018 (builds it: loading the local model takes seconds)
        with working("answering…") as bar:
            caps = (max_steps, max_tokens, max_seconds) if agent else None
            draft = DraftPrinter(bar) if not as_json else None
            result = answer_with(ws, text, opts, caps, draft)
        if draft is not None:
            draft.end()
    if as_json:
        from tether.schemas import WireAskResult

        # the command's user configured the provider: its error is theirs to read
        print_json(WireAskResult.from_ask_result(result, provider_errors=False))
    else:
        print_result(result, getattr(ws.provider, "note", ""), ws.profile.note)
    if verbosity().verbose:
        print_timings(result.timings)
    code = ask_exit_code(result)
    if code:
        raise typer.Exit(code)


def answer_with(
    ws: Workspace,
    text: str,
    opts: Any,
    caps: tuple[int, int, float] | None,
    on_text: Callable[[str], None] | None = None,
) -> AskResult:
    """`ws.ask` (its draft to `on_text`), or the agent loop within `caps` (steps, tokens,
    seconds) when given."""
    if caps is None:
        return ws.ask(text, opts, who="cli", on_text=on_text)
    from tether.answering.agent import AgentCaps

    return ws.ask_agent(text, opts, AgentCaps(*caps), who="cli")


ask.__doc__ = (
    "Answer a question from the index with cited, checked claims (or refuse honestly).\n\n"
    + EXIT_HELP
    + " With --json, `status` says the same: answered, flagged, refused (and `refused_by`:"
    " gate, answerability, model, strict or verifier) or no_answer."
)


def chat(
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="YYYY-MM-DD, today (default) or none.", callback=as_of_option),
    ] = None,
    audience: Annotated[
        str | None, typer.Option(help="public (default) or staff.", callback=audience_option)
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help=f"{one_of(METHODS)} (default: as for `ask`).",
            callback=method_option,
        ),
    ] = "auto",
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
) -> None:
    """Ask questions one after another (type `quit` to leave, `history` to list them)."""
    history: list[str] = []
    with user_errors():
        on_demo = on_demo_index(index, demo)
        ws = open_workspace(index, demo, store, provider=provider, model=model)
        ws.provider  # noqa: B018 (builds it before the first question)
        out.print("Ask a question (quit to leave, history to list your questions).")
        while True:
            try:
                line = input("? ").strip()
            except EOFError:
                break
            if line in ("quit", "exit", ":q"):
                break
            if line == "history":
                for i, q in enumerate(history, 1):
                    out.print(f"{i:>3}. {shown(q, one_line=True)}", highlight=False)
                continue
            if not line:
                continue
            history.append(line)
            try:
                text, opts, _ = ask_options(line, as_of, audience, method, 5, demo=on_demo)
                with working("answering…") as bar:
                    draft = DraftPrinter(bar)
                    result = ws.ask(text, opts, who="cli", on_text=draft)
                draft.end()
                print_result(result, getattr(ws.provider, "note", ""), ws.profile.note)
            except TetherError as exc:
                error_line(str(exc))


# ---- printing an answer -------------------------------------------------------------------


def print_result(result: AskResult, provider_note: str = "", profile_note: str = "") -> None:
    """The question, the passages shown, the answer with each claim's checks, and the cost;
    `profile_note` says when the tuned values do not belong to the index's embedder."""
    when = result.as_of.isoformat() if result.as_of else "any date"
    out.print(
        f"[bold]Q:[/bold] {shown(result.question)}  [dim](as of {when}, audience {result.audience},"
        f" {result.language}, {result.method})[/dim]",
        highlight=False,
    )
    if profile_note:
        out.print(f"note: {shown(profile_note)}", style="dim", highlight=False)
    if result.agent is not None:
        print_agent(result.agent)
    if result.context is not None and result.context.passages:
        print_passages(result.context)
    if result.gate is not None and not result.gate.passed:
        before = not result.model_called  # "no model call" only when none was made
        out.print(
            f"[yellow]{'Refused before the model' if before else 'Refused'}:[/yellow]"
            f" {shown(result.gate.reason)}{' (no model call, no cost)' if before else ''}",
            highlight=False,
        )
        return
    verdict = result.answerability
    if verdict is not None and not verdict.answerable:
        before = not result.model_called  # a second opinion, or select mode, asked the model
        said = "" if verdict.second is None else f"; the model said {verdict.second:.2f}"
        out.print(
            f"[yellow]{'Refused before the model' if before else 'Refused'}:[/yellow]"
            f" {shown(verdict.reason)} (answerability {verdict.probability:.2f}, threshold"
            f" {verdict.threshold:.2f}{said}{'; no model call, no cost' if before else ''})",
            highlight=False,
        )
        if result.completion is not None:
            print_completion(result.completion, result.provider)
        return
    for note in dict.fromkeys(n for n in (provider_note, result.provider_note) if n):
        out.print(f"[dim]note: {shown(note)}[/dim]", highlight=False)
    if result.problem is not None:
        from tether.schemas import public_problem_detail

        detail = public_problem_detail(
            result.problem.kind, result.problem.detail, result.audience, provider_errors=False
        )
        out.print(
            f"[red]No usable answer ({result.problem.kind}):[/red] {shown(detail)}",
            highlight=False,
        )
    elif result.answer is not None:
        print_answer(result)
    if result.completion is not None:
        print_completion(result.completion, result.provider)


def print_agent(trace: AgentTrace) -> None:
    """The agent loop's steps, and the caps it reached."""
    for i, step in enumerate(trace.steps, 1):
        seen = f" → {', '.join(step.chunk_ids)}" if step.chunk_ids else ""
        note = f" ({step.note})" if step.note else ""
        out.print(
            f"[dim]step {i}: {step.action} {shown(step.argument)}{shown(seen)}{shown(note)}[/dim]",
            highlight=False,
        )
    for cap in trace.caps_reached:
        out.print(
            f"[yellow]The {cap} cap ({trace.caps.get(cap, 0):g}) was reached:[/yellow] the model"
            " answered from what it had read.",
            highlight=False,
        )


def print_passages(ctx: Context) -> None:
    listed = table(
        f"passages ({ctx.tokens} of {ctx.budget} tokens, {shown(ctx.tokenizer)})",
        ("#", "chunk", "doc_id", "v", "section", "tokens"),
        overflow="fold",
    )
    for p in ctx.passages:
        c = p.chunk
        names = (shown(v, one_line=True) for v in (c.chunk_id, c.doc_id, c.version, c.section))
        listed.add_row(str(p.marker), *names, str(p.tokens))
    out.print(listed)
    for d in ctx.dropped:
        c = d.chunk
        out.print(
            f"  dropped {shown(c.chunk_id, one_line=True)} ({shown(c.doc_id, one_line=True)}):"
            f" {shown(d.reason)}",
            highlight=False,
        )


def print_answer(result: AskResult) -> None:
    """The answer, the notice of what was withheld from a public reader (never the withheld
    claims), then each claim shown: its citations, verdict, flags explained and evidence;
    claims removed by --strict are listed for staff, counted for the public (their text and
    flag arguments, which may name staff passages, are not printed)."""
    assert result.answer is not None
    label = (
        "[green]Answer[/green]"
        if result.answer.answerable
        else "[yellow]Not answerable from the passages[/yellow]"
    )
    out.print(f"\n{label}: {shown(result.answer.answer)}", highlight=False)
    if result.notice:  # claims withheld from a public reader: said, never printed
        out.print(f"[yellow]Withheld:[/yellow] {shown(result.notice)}", highlight=False)
    checks = {id(ch.claim): ch for ch in result.checks}
    by_text = {ch.claim.text: ch for ch in result.checks}
    for i, claim in enumerate(result.answer.claims, 1):
        ch = checks.get(id(claim)) or by_text.get(claim.text)
        cited = " ".join(shown(c, one_line=True) for c in claim.chunk_ids) or "(no citation)"
        print_claim(i, claim.text, cited, ch)
    from tether.verify.flags import flag_kind

    removed = [ch for ch in result.checks if ch.removed]
    if removed and result.audience != "staff":  # as the public wire: a count, no text or IDs
        n = len(removed)
        kinds = sorted({flag_kind(f) for ch in removed for f in ch.flags})
        out.print(
            f"  [red]removed (--strict):[/red] {n} claim{'s' if n != 1 else ''}"
            f" ({shown(', '.join(kinds), one_line=True)})",
            highlight=False,
        )
        return
    for ch in removed:
        out.print(
            f"  [red]removed (--strict):[/red] {shown(ch.claim.text)}"
            f" ({shown(', '.join(ch.flags), one_line=True)})",
            highlight=False,
        )


def print_claim(i: int, text: str, cited: str, ch: ClaimCheck | None) -> None:
    from tether.verify.check import describe

    if ch is None:
        verdict = "[yellow]not checked[/yellow]"
    elif ch.ok:
        verdict = "[green]ok[/green]"
    else:
        verdict = "[red]" + shown(", ".join(ch.flags), one_line=True) + "[/red]"  # args: claim text
    score = (
        f" · entailment {ch.entailment:.2f}" if ch is not None and ch.entailment is not None else ""
    )
    out.print(f"  {i}. {shown(text)}\n     cites {cited} → {verdict}{score}", highlight=False)
    for flag in ch.flags if ch else ():
        out.print(f"     [dim]{shown(f'{flag}: {describe(flag)}')}[/dim]", highlight=False)
    for d in ch.details if ch else ():  # what the evidence does not match, and where
        out.print(
            f"     [dim]{shown(d.kind, one_line=True)}: “{shown(d.claim, one_line=True)}”"
            f" against “{shown(d.evidence, one_line=True)}”[/dim]",
            highlight=False,
        )
    for ev in ch.evidence if ch else ():
        where = f"\\[{shown(ev.chunk_id, one_line=True)} {ev.start}:{ev.end}]"
        out.print(f"     evidence {where} “{shown(ev.text)}”", highlight=False)


def print_timings(timings: dict[str, float]) -> None:
    """-v: the seconds each step took, on stderr."""
    if timings:
        steps = " · ".join(f"{name.removesuffix('_s')} {s:.2f} s" for name, s in timings.items())
        err.print(f"[dim]timings: {shown(steps, one_line=True)}[/dim]", highlight=False)


def print_completion(comp: Completion, provider: str) -> None:
    if not comp.cost_known:
        cost = "cost unknown"
    else:
        cost = f"${comp.cost_usd:.4f}" if comp.cost_usd else "$0"
    out.print(
        f"[dim]{shown(comp.provider or provider, one_line=True)} · {shown(comp.model, one_line=True)}"
        f" · {comp.input_tokens} tokens in,"
        f" {comp.output_tokens} out · {comp.latency_s:.1f} s · {cost}[/dim]",
        highlight=False,
    )
