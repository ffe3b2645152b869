"""Measuring: `tether eval` (retrieval metrics per method, or with --verifier the citation
checker on labelled claims) and `tether calibrate` (the support gate's floor per method).

What it cannot do: it computes no metric itself (`tether.evaluation` does); it
picks the index, the retriever and the judge, shows progress, and prints the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tether.catalog import JUDGES
from tether.cli.app import (
    DemoOpt,
    IndexOpt,
    JsonOpt,
    QuestionsOpt,
    StoreOpt,
    audience_option,
    audience_value,
    err,
    error_line,
    open_workspace,
    out,
    print_json,
    progress,
    provider_option,
    shown,
    table,
    user_errors,
)
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.protocols import Searcher, Store


def use_demo(index: Path | None, own_questions: bool) -> bool:
    """Whether `eval`/`calibrate` read the demo index: never with --index or when an index is
    found here or above (TETHER_INDEX included); else only for the bundled questions (a
    question set of the user's own needs the user's index: an error says how to build one)."""
    from tether.app import index_found

    if index is not None or index_found():
        return False
    if own_questions:
        raise TetherError(
            "no index found here or in a parent folder for your questions: run"
            " `tether ingest FOLDER` first, or pass --index FILE or --collection FOLDER"
        )
    return True


def eval_verifier(
    index: Path | None,
    judge_name: str,
    as_json: bool,
    claims: list[Path] | None = None,
    collection: Path | None = None,
    store: str | None = None,
) -> None:
    """`eval --verifier`: the citation checker on labelled claims: the bundled set on the
    demo index, or `claims` (files of the user's own) on `collection` (ingested first) or
    on the index (or --store) given or found here."""
    from tether.evaluation.verifier_eval import load_claims, run_verifier_eval

    if judge_name not in JUDGES:
        raise typer.BadParameter(
            f"unknown judge {judge_name!r}; choose one of {', '.join(JUDGES)}", param_hint="--judge"
        )
    with user_errors():
        items = load_claims(claims or None)
        if not claims and collection is None:
            ws = open_workspace(index, index is None and store is None, store)
        else:
            ws = eval_workspace(collection, index, own_questions=True, store=store)
        embedder = ws.query_embedder()
        judge = ws.judge_named(judge_name)
        with progress("checking claims") as bar:
            task = bar.add_task("claims", total=len(items))
            result = run_verifier_eval(
                ws.store,
                items,
                judge=judge,
                embedder=embedder,
                progress=lambda done, total: bar.update(task, completed=done),
            )
    from tether.schemas import VerifierReport

    report = VerifierReport.from_result(result)
    if as_json:
        print_json(report)
        return
    print_verifier(report)


def print_verifier(report: Any) -> None:
    out.print(
        f"[bold]verifier on {report.claims} labelled claims[/bold] (judge: {report.judge})\n"
        f"  false passes (unsupported marked ok): {report.false_passes}/{report.unsupported}"
        f" = {report.false_pass_rate:.1%}\n"
        f"  false alarms (supported flagged):     {report.false_alarms}/{report.supported}"
        f" = {report.false_alarm_rate:.1%}\n"
        f"  median time per claim: {report.median_ms_per_claim:.1f} ms",
        highlight=False,
    )
    listed = table(
        "per check: how often it fired",
        ("check", "on supported claims (false alarms)", "on unsupported claims"),
    )
    for kind, counts in sorted(report.per_check.items()):
        listed.add_row(kind, str(counts["fired_on_supported"]), str(counts["fired_on_unsupported"]))
    out.print(listed)
    listed = table("per kind of item: overall verdict wrong", ("item kind", "n", "wrong"))
    for kind, counts in sorted(report.per_kind.items()):
        listed.add_row(shown(kind, one_line=True), str(counts["n"]), str(counts["wrong"]))
    out.print(listed)
    for r in report.wrong:
        out.print(
            f"  wrong: {shown(r.id, one_line=True)} ({shown(r.kind, one_line=True)}, {r.label})"
            f" flags: {', '.join(r.flags) or 'none'}",
            highlight=False,
        )


def calibrate(
    index: IndexOpt = None,
    store: StoreOpt = None,
    demo: DemoOpt = False,
    questions_file: Annotated[
        Path | None, typer.Option("--questions", help="Question set; default: the bundled one.")
    ] = None,
    max_wrongly_refused: Annotated[
        float,
        typer.Option(help="Share of answerable questions the gate may refuse.", min=0, max=1),
    ] = 0.02,
    as_json: JsonOpt = False,
) -> None:
    """Calibrate the support gate's floor per retrieval method and store it in the index."""
    from tether.evaluation.calibration import calibrate_gate
    from tether.evaluation.questions import load_questions

    with user_errors():
        demo = demo or (store is None and use_demo(index, questions_file is not None))
        ws = open_workspace(index, demo, store)
        qs = load_questions(questions_file)
        retriever = ws.retriever()
        methods = ("bm25", "dense", "hybrid", "rerank") if retriever.embedder else ("bm25",)
        with progress("calibrating") as bar:
            task = bar.add_task("gate", total=len(qs) * len(methods))
            cal = calibrate_gate(
                ws.store,
                retriever,
                qs,
                methods,
                max_wrongly_refused=max_wrongly_refused,
                progress=lambda done, total: bar.update(task, completed=done),
            )
        ws.set_gate_floors(
            cal.floors, calibration_record(cal, questions_file, len(qs), max_wrongly_refused)
        )
    for warning in cal.warnings:
        err.print(f"[yellow]warning:[/yellow] {shown(warning)}", highlight=False)
    if as_json:
        from tether.schemas import Calibration

        print_json(Calibration.from_calibration(cal))
        return
    listed = table(
        "support gate: trade-off per floor (min_support 1)",
        ("method", "floor", "answerable wrongly refused", "must-refuse let through", "chosen"),
    )
    chosen = {(r.method, r.floor) for r in cal.chosen}
    for r in sorted({*cal.table, *cal.chosen}, key=lambda r: (r.method, r.floor)):
        listed.add_row(
            r.method,
            f"{r.floor:.4g}",
            f"{r.wrongly_refused}/{r.answerable}",
            f"{r.let_through}/{r.must_refuse}",
            "✓" if (r.method, r.floor) in chosen else "",
        )
    out.print(listed)
    out.print(
        f"stored in {shown(ws.index)}: " + ", ".join(f"{m} {f:.4g}" for m, f in cal.floors.items())
    )


def calibration_record(cal: Any, questions: Path | None, n: int, share: float) -> dict:
    """What `tether info` shows of a calibration: the question set, when, the share of
    answerable questions the gate may refuse, and the trade-off chosen per method."""
    import time

    return {
        "questions": str(questions or "bundled"),
        "n_questions": n,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "max_wrongly_refused": share,
        "chosen": [
            {
                "method": r.method,
                "floor": r.floor,
                "wrongly_refused": f"{r.wrongly_refused}/{r.answerable}",
                "let_through": f"{r.let_through}/{r.must_refuse}",
            }
            for r in cal.chosen
        ],
    }


VerifierOpt = Annotated[
    bool,
    typer.Option(
        "--verifier",
        help="Measure the citation checker instead, on the bundled labelled claim set"
        " (or --claims): false passes and false alarms per check and overall, time per claim.",
    ),
]
ClaimsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--claims",
        metavar="FILE",
        help="With --verifier: a labelled claim set of your own (JSON Lines, repeatable), its"
        " passages named by doc_id, version and section; run on --collection (ingested first)"
        " or on the index.",
    ),
]
_JUDGE_PHRASES = [f"{name} ({what})" if what else name for name, what in JUDGES.items()]
JudgeOpt = Annotated[
    str,
    typer.Option(
        help=f"With --verifier: {', '.join(_JUDGE_PHRASES[:-1])}, or {_JUDGE_PHRASES[-1]}."
    ),
]


def eval_command(
    questions_file: QuestionsOpt = None,
    collection: Annotated[
        Path | None,
        typer.Option(
            "--collection",
            help="Ingest this folder first (into --index, else a temporary index) and evaluate"
            " on it. Default: the index here (or in a parent folder); with no index and no"
            " --questions, the bundled demo collection and its questions.",
        ),
    ] = None,
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated: bm25, dense, hybrid, rerank, deep (the reader rereads"
            " rerank's top 10: about a quarter of a second a question on 2 cores)."
        ),
    ] = "bm25,dense,hybrid,rerank",
    k: Annotated[
        int, typer.Option("--k", "-k", help="Cut-off for hit/recall/precision/nDCG.", min=1, max=50)
    ] = 5,
    as_json: JsonOpt = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a self-contained HTML report here.")
    ] = None,
    rewrite: Annotated[
        bool,
        typer.Option(help="Rewrite each question with a language model before searching."),
    ] = False,
    audience: Annotated[
        str | None,
        typer.Option(
            help="Override every question's audience (public or staff).", callback=audience_option
        ),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            help="Provider for --rewrite or --answers (as for `ask`; --answers also takes"
            " recorded).",
            callback=provider_option,
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model for --rewrite.")] = None,
    index: IndexOpt = None,
    store: StoreOpt = None,
    verifier: VerifierOpt = False,
    claims: ClaimsOpt = None,
    judge: JudgeOpt = "align",
    answers: Annotated[
        bool,
        typer.Option(
            "--answers",
            help="Score answers instead: ask each question with --provider (recorded: the"
            " bundled recordings of the local model) and check it against its keys.",
        ),
    ] = False,
) -> None:
    """Measure retrieval on a question set: hit@k, recall@k, precision@k, MRR, nDCG@k per
    method, overall, per kind and per language; failing questions say where the passage ranked.
    With --answers, score the answers: accuracy, abstention, flagged claims, time and cost."""
    if verifier:
        eval_verifier(index, judge, as_json, claims, collection, store)
        return
    if answers:
        eval_answers(
            questions_file,
            collection,
            index,
            methods,
            k,
            audience,
            provider,
            model,
            as_json,
            report,
        )
        return
    if claims:
        raise typer.BadParameter("only with --verifier", param_hint="--claims")
    chosen = checked_methods(methods)
    if audience is not None:
        audience_value(audience)
    from tether.evaluation.questions import load_questions
    from tether.evaluation.report import write_report

    with user_errors():
        qs = load_questions(questions_file)
        ws = eval_workspace(collection, index, questions_file is not None, store)
        retriever = eval_retriever(ws, chosen, rewrite, provider, model)
        result = run_eval(
            ws.store, retriever, qs, str(questions_file or "bundled"), chosen, k, audience, as_json
        )
        if report is not None:
            write_report(result, report)
    if as_json:
        from tether.schemas import RetrievalReport

        print_json(RetrievalReport.from_result(result))
    else:
        print_eval(result)
        if report is not None:
            out.print(f"report: {report}", highlight=False)
    if qs and not result.n_scored:  # zeros would read as a measurement: say why instead
        reasons = "; ".join(f"{i}: {why}" for i, why in result.skipped[:3])
        error_line(f"no question could be scored on this index ({reasons})")
        raise typer.Exit(1)


def eval_answers(
    questions_file: Path | None,
    collection: Path | None,
    index: Path | None,
    methods: str,
    k: int,
    audience: str | None,
    provider: str | None,
    model: str | None,
    as_json: bool,
    report: Path | None,
) -> None:
    """`eval --answers` (see `tether.cli.answers`)."""
    from tether.cli.answers import (
        answers_json,
        check_answer_method,
        finish_answers,
        print_answers,
        run_answers,
    )
    from tether.evaluation.questions import load_questions

    if audience is not None:
        audience_value(audience)
    with user_errors():
        method = check_answer_method(methods)
        qs = load_questions(questions_file)
        ws = eval_workspace(collection, index, questions_file is not None)
        result = run_answers(
            ws,
            qs,
            questions_file=str(questions_file or "bundled"),
            provider=provider,
            model=model,
            method=method,
            k=k,
            audience=audience,
            quiet=as_json,
        )
        finish_answers(ws, result, report)
    if as_json:
        answers_json(result)
    else:
        print_answers(result)
        if report is not None:
            out.print(f"report: {report}", highlight=False)
    if qs and not result.rows:
        reasons = "; ".join(f"{i}: {why}" for i, why in result.errors[:3])
        error_line(f"no answer could be scored ({reasons})")
        raise typer.Exit(1)


def checked_methods(methods: str) -> list[str]:
    """--methods as a list (an unknown or empty one is a usage error, exit 2)."""
    from tether.retrieval.retriever import METHODS

    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    bad = [m for m in chosen if m not in METHODS]
    if bad or not chosen:
        given = f"unknown method {', '.join(map(repr, bad))}" if bad else "no method given"
        raise typer.BadParameter(
            f"{given}; choose from {', '.join(METHODS)}", param_hint="--methods"
        )
    return chosen


def eval_workspace(
    collection: Path | None, index: Path | None, own_questions: bool, store: str | None = None
) -> Workspace:
    """--collection ingested into --store or --index (else a temporary index), else the
    index to read."""
    import tempfile

    from tether.cli.ingest import ingest_for_eval

    if collection is None:
        demo = store is None and use_demo(index, own_questions)
        return open_workspace(index, demo, store)
    if not collection.is_dir():
        raise TetherError(f"no such folder: {collection}")
    path = index or Path(tempfile.mkdtemp(prefix="tether-eval-")) / "index.sqlite"
    return ingest_for_eval(path, collection, store)


def eval_retriever(
    ws: Workspace, chosen: list[str], rewrite: bool, provider: str | None, model: str | None
) -> Any:
    """The Retriever for the chosen methods (an embedder only when one needs vectors)."""
    from tether.protocols import capabilities_of
    from tether.retrieval.retriever import LLMRewriter

    dense = [m for m in chosen if m != "bm25"]
    if dense and not ws.store.has_vectors():
        raise TetherError(
            f"{', '.join(dense)} need vectors and {ws.index} has none: ingest with"
            " embeddings, or pass --methods bm25"
        )
    rewriter = LLMRewriter(ws.make_provider(provider, model)) if rewrite else None
    if rewriter is not None and not capabilities_of(rewriter.provider).model:
        raise TetherError(
            f"--rewrite needs a language model; the {rewriter.provider.name} provider is none"
            " (choose one with --provider)"
        )
    return ws.retriever(rewrite=rewriter, dense=bool(dense))


def run_eval(
    store: Store,
    retriever: Searcher,
    qs: list[Any],
    questions_file: str,
    chosen: list[str],
    k: int,
    audience: str | None,
    quiet: bool,
) -> Any:
    """run_retrieval_eval with a progress bar (none with --json or off a terminal)."""
    from tether.evaluation.retrieval_eval import run_retrieval_eval

    with progress("{task.description}", quiet=quiet) as bar:
        task = bar.add_task("Searching", total=None)
        return run_retrieval_eval(
            store,
            retriever,
            qs,
            chosen,
            k,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            audience=audience,
            questions_file=questions_file,
        )


def print_eval(result: Any) -> None:
    """The overall table, one table per method by kind and language, then the failures."""
    from rich.table import Table

    from tether.evaluation.metrics import METRIC_NAMES, METRICS

    names = [METRIC_NAMES[m].replace("@k", f"@{result.k}") for m in METRICS]
    overall = Table(title=f"retrieval, k = {result.k} ({result.n_scored} questions scored)")
    overall.add_column("method")
    for name in [*names, "median ms", "p95 ms"]:
        overall.add_column(name, justify="right")
    for method in result.methods:
        agg = result.aggregates[method]["overall"]
        t = result.timings[method]
        overall.add_row(
            method,
            *(f"{agg[m]:.3f}" for m in METRICS),
            f"{t['median_ms']:.1f}",
            f"{t['p95_ms']:.1f}",
        )
    out.print(overall)
    for method in result.methods:
        agg = result.aggregates[method]
        by_group = Table(title=f"{method}: per kind and language")
        by_group.add_column("group")
        for name in ("n", *names):
            by_group.add_column(name, justify="right")
        for label, groups in (("kind", agg["by_kind"]), ("lang", agg["by_language"])):
            for group, vals in groups.items():
                by_group.add_row(
                    f"{label}: {shown(group, one_line=True)}",
                    str(int(vals["n"])),
                    *(f"{vals[m]:.3f}" for m in METRICS),
                )
        out.print(by_group)
    print_failures(result)
    for note in result.notes:
        out.print(note, highlight=False)


def print_failures(result: Any) -> None:
    for method in result.methods:
        failing = result.failures(method)
        if failing:
            out.print(
                f"[bold]{method}[/bold]: {len(failing)} question(s) with nothing relevant in the top {result.k}"
            )
        for r in failing:
            where = shown(f"[{r.kind}, {r.language}]", one_line=True)
            out.print(
                f"  {shown(r.id, one_line=True)} {where} {shown(r.question)}", highlight=False
            )
            out.print(f"      {shown(r.why(result.k))}", highlight=False)
