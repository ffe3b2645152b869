"""`tether eval --answers`: every question of a set asked end to end with a chosen provider,
each answer scored against its keys (`tether.evaluation.answer_eval`); a table overall, per
kind and per language, the failures with the answer, the keys and the passages; `--json`
(`tether.schemas.AnswerReport`) and `--report FILE.html`.

`--provider recorded` replays the bundled recordings of the local model (labelled with the
model and the day they were recorded) with the options they were recorded with (a replay that
knows them: `ReplayProvider.recorded_options`).

What it cannot do: it computes nothing itself; questions are not audited (an evaluation is
not a reader's question).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli.app import err, out, print_json, progress, shown, table
from tether.protocols import capabilities_of

if TYPE_CHECKING:
    from tether.app import Workspace
    from tether.evaluation.answer_eval import AnswerEvalResult


def answers_provider(ws: Workspace, provider: str | None, model: str | None) -> tuple[Any, str]:
    """The provider to evaluate, and its label (a replay names what was recorded, when)."""
    chosen = ws.make_provider(provider, model)
    if capabilities_of(chosen).recorded:
        return chosen, f"replay of recordings: {chosen.recorded()}"  # type: ignore[attr-defined]
    return chosen, f"{chosen.name} ({getattr(chosen, 'model', '') or 'no model'})"


def run_answers(
    ws: Workspace,
    qs: list[Any],
    *,
    questions_file: str,
    provider: str | None,
    model: str | None,
    method: str,
    k: int,
    audience: str | None,
    quiet: bool,
) -> AnswerEvalResult:
    """Ask every question through the Workspace (not audited) and score the answers."""
    from tether.answering.pipeline import AskOptions
    from tether.evaluation.answer_eval import run_answer_eval, with_recordings

    chosen, label = answers_provider(ws, provider, model)
    ws.use_provider(chosen)
    # a replay that knows the options its recordings were made with asks with them
    options: dict[str, Any] = dict(getattr(chosen, "recorded_options", None) or {})
    options = options or {"method": method, "k": k}
    if capabilities_of(chosen).recorded:  # only the questions that were recorded
        asked = with_recordings(qs, chosen.recorded_questions())
        label += f" ({len(asked)} of {len(qs)} questions recorded)"
        qs = asked

    def ask(q: Any) -> Any:
        opts = AskOptions(as_of=q.as_of, audience=audience or q.audience,  # type: ignore[arg-type]
                          language=q.language, **options)  # fmt: skip
        return ws.ask(q.question, opts, audit=False)

    with progress("{task.description}", quiet=quiet) as bar:
        task = bar.add_task("Answering", total=len(qs))
        return run_answer_eval(
            qs, ask, provider=label, questions_file=questions_file, index=str(ws.index),
            options=options, progress=lambda done, total: bar.update(task, completed=done),
        )  # fmt: skip


def finish_answers(ws: Workspace, result: AnswerEvalResult, report: Path | None) -> None:
    """Write the HTML report when asked, and keep the summary with the index (a warning
    when the index cannot be written)."""
    if report is not None:
        from tether.evaluation.answer_report import write_answer_report

        write_answer_report(result, report)
    if result.rows:
        why = ws.record_eval(result.stored_summary())
        if why:
            err.print(f"[yellow]warning:[/yellow] summary not kept with the index: {shown(why)}",
                      highlight=False)  # fmt: skip


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def print_answers(result: AnswerEvalResult) -> None:
    """The summary table (overall, per kind, per language), then the failures."""
    s = result.summary
    out.print(f"[bold]answers[/bold] by {shown(result.provider)}", highlight=False)
    listed = table(
        f"answers ({len(result.rows)} scored, {len(result.errors)} not scored)",
        ("group", "n", "accuracy", "shown", "abst. precision", "abst. recall",
         "flagged claims", "unsupported", "median s"),
    )  # fmt: skip
    groups = [("overall", s["overall"])]
    groups += [(f"kind: {k}", v) for k, v in s["by_kind"].items()]
    groups += [(f"lang: {k}", v) for k, v in s["by_language"].items()]
    for name, g in groups:
        listed.add_row(
            shown(name, one_line=True), str(g["n"]), _pct(g["accuracy"]),
            _pct(g["accuracy_shown"]), _pct(g["abstention_precision"]),
            _pct(g["abstention_recall"]), _pct(g["flagged_claim_rate"]),
            _pct(g["unsupported_claim_rate"]), f"{g['median_s']:.2f}",
        )  # fmt: skip
    out.print(listed)
    o = s["overall"]
    out.print(
        f"refused by: {o['refused_by'] or 'none'}; tokens {o['input_tokens']} in,"
        f" {o['output_tokens']} out; cost ${o['cost_usd']:.4f}",
        highlight=False,
    )
    for r in result.failures():
        why = f"refused by {r.refused_by}" if r.refused_by else r.status
        out.print(f"  wrong: {shown(r.id, one_line=True)} [{shown(r.kind, one_line=True)}]"
                  f" {shown(r.question, one_line=True)} ({why})", highlight=False)  # fmt: skip
        out.print(f"      answer: {shown(r.answer or '(none)', one_line=True)}", highlight=False)
        expected = "must be refused" if r.abstain else ", ".join(r.keys) or "(no keys)"
        out.print(f"      keys: {shown(expected, one_line=True)}", highlight=False)
        for p in r.passages:
            out.print(f"      passage: {shown(p, one_line=True)}", highlight=False)
    for qid, why in result.errors[:10]:
        out.print(f"  not scored: {shown(qid, one_line=True)}: {shown(why, one_line=True)}",
                  highlight=False)  # fmt: skip


def answers_json(result: AnswerEvalResult) -> None:
    from tether.schemas import AnswerReport

    print_json(AnswerReport.model_validate(result.to_dict()))


def check_answer_method(methods: str) -> str:
    """--methods for --answers: the default list means auto; else exactly one method (else a
    usage error naming --methods, exit 2)."""
    import typer

    from tether.cli.app import method_option

    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    if chosen == ["bm25", "dense", "hybrid", "rerank"]:
        return "auto"
    if len(chosen) != 1:
        raise typer.BadParameter(
            "--answers takes one retrieval method (--methods rerank, for example)",
            param_hint="--methods",
        )
    try:
        return method_option(chosen[0])
    except typer.BadParameter as exc:
        exc.param_hint = "--methods"
        raise
