"""The `tether` command: parsing arguments and printing results, nothing more.

Every command has --help. A user mistake (missing folder, bad date, unknown doc_id, no index)
prints one line starting with "error:" and exits with status 1 (2 for a bad option value).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tether import __version__
from tether.errors import TetherError
from tether.evaluation.evaluate import demo_collection, load_questions
from tether.stores import open_store
from tether.stores.sqlite import DEFAULT_INDEX, SqliteStore
from tether.types import ChunkerConfig, Filters, Hit, SyncReport

app = typer.Typer(
    help="tether: answers from a document collection with claims an agent can check.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped output is not cut to 80 columns: tables keep their IDs and paths whole.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

DEMO_INDEX = Path(".tether") / "demo.sqlite"

IndexOpt = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="The index file. Default: .tether/index.sqlite here (or in a parent folder);"
        " with --demo, .tether/demo.sqlite.",
        envvar="TETHER_INDEX",
    ),
]
DemoOpt = Annotated[bool, typer.Option("--demo", help="Use the bundled demo collection's index.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _as_of(value: str) -> date | None:
    text = value.strip().lower()
    if text == "none":
        return None
    if text == "today":
        return date.today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a date: use YYYY-MM-DD, today or none"
        ) from None


def _audience(value: str) -> str:
    if value not in ("public", "staff"):
        raise typer.BadParameter(f"{value!r} is not public or staff")
    return value


AsOfOpt = Annotated[
    str,
    typer.Option(
        "--as-of",
        help="Only versions in force on this date: YYYY-MM-DD, today, or none (all versions).",
    ),
]
AudienceOpt = Annotated[
    str,
    typer.Option(
        "--audience",
        help="public sees only public documents; staff sees all. Default public (fail-closed).",
    ),
]


@contextmanager
def _user_errors() -> Iterator[None]:
    try:
        yield
    except TetherError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None


def _find_index(index: Path | None, demo: bool = False) -> Path:
    if index is not None:
        return index
    if demo:
        return DEMO_INDEX
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / DEFAULT_INDEX
        if candidate.exists():
            return candidate
    raise TetherError(
        "no index found here or in a parent folder: run `tether ingest FOLDER` first,"
        " pass --index FILE, or use --demo"
    )


def _open(index: Path | None, demo: bool = False) -> SqliteStore:
    path = _find_index(index, demo)
    if demo and not path.exists():
        _ingest_demo(path, quiet=False)
    return open_store(path)


# ---- ingest -------------------------------------------------------------------------------


def _run_sync(
    store: SqliteStore,
    folder: Path,
    chunker: ChunkerConfig,
    rebuild: bool,
    strict: bool,
    embed: bool,
) -> SyncReport:
    embedder = None
    if embed:
        from tether.embeddings.embedders import default_embedder

        embedder = default_embedder()
    labels = {"read": "Reading files", "embed": "Embedding chunks", "write": "Writing index"}
    with Progress(
        TextColumn("{task.description:<17}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[rate]}"),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        tasks: dict[str, Any] = {}

        def step(phase: str, done: int, total: int) -> None:
            if phase == "embed:tokens":  # tokens embedded so far: show the rate
                task = bar.tasks[tasks["embed"]] if "embed" in tasks else None
                if task is not None and task.elapsed:
                    bar.update(task.id, rate=f"{done / task.elapsed:,.0f} tokens/s")
                return
            if phase not in tasks:
                tasks[phase] = bar.add_task(labels.get(phase, phase), total=total, rate="")
            bar.update(tasks[phase], completed=done, total=total)

        from tether.ingest.sync import sync

        return sync(
            store,
            folder,
            chunker=chunker,
            embedder=embedder,
            rebuild=rebuild,
            strict=strict,
            progress=step,
        )


def _print_report(report: SyncReport, index: Path) -> None:
    table = Table(title=f"ingest → {index}", show_header=True)
    table.add_column("added", justify="right")
    table.add_column("updated", justify="right")
    table.add_column("removed", justify="right")
    table.add_column("unchanged", justify="right")
    table.add_column("problems", justify="right")
    table.add_column("chunks written", justify="right")
    table.add_column("seconds", justify="right")
    table.add_row(
        *(str(len(x)) for x in (report.added, report.updated, report.removed, report.unchanged)),
        str(len(report.problems)),
        str(report.chunks_written),
        f"{report.seconds:.2f}",
    )
    out.print(table)
    for name, files in (
        ("added", report.added),
        ("updated", report.updated),
        ("removed", report.removed),
    ):
        for f in files:
            out.print(f"  {name:<8} {f}", highlight=False)
    for problem in report.problems:
        err.print(f"[yellow]problem[/yellow]  {problem.source}: {problem.reason}", highlight=False)
    if not report.committed:
        err.print("[red]--strict: nothing was written (the index is as it was)[/red]")


@app.command()
def ingest(
    folder: Annotated[
        Path, typer.Argument(help="The collection folder (read recursively).")
    ] = Path("."),
    index: IndexOpt = None,
    chunker: Annotated[
        str, typer.Option(help="structure (one chunk per section), fixed, or overlap.")
    ] = "structure",
    max_words: Annotated[int, typer.Option(help="Words per chunk before a split.", min=20)] = 200,
    overlap_words: Annotated[
        int, typer.Option(help="Overlap for the overlap chunker.", min=0)
    ] = 50,
    rebuild: Annotated[
        bool, typer.Option(help="Start the index afresh (needed to change chunker or embedder).")
    ] = False,
    strict: Annotated[bool, typer.Option(help="Write nothing if any file has a problem.")] = False,
    embed: Annotated[bool, typer.Option(help="Compute embeddings for dense search.")] = True,
) -> None:
    """Read a folder of documents into the index (incremental; atomic)."""
    if chunker not in ("structure", "fixed", "overlap"):
        raise typer.BadParameter(
            f"{chunker!r} is not structure, fixed or overlap", param_hint="--chunker"
        )
    with _user_errors():
        if not folder.is_dir():
            raise TetherError(f"no such folder: {folder}")
        path = index or folder / DEFAULT_INDEX
        store = SqliteStore(path)
        config = ChunkerConfig(chunker, max_words, overlap_words)  # type: ignore[arg-type]
        report = _run_sync(store, folder, config, rebuild, strict, embed)
        _print_report(report, path)
        if report.problems and strict:
            raise typer.Exit(1)


def _ingest_demo(path: Path, quiet: bool = True) -> SyncReport:
    store = SqliteStore(path)
    report = _run_sync(store, demo_collection(), ChunkerConfig(), False, False, True)
    store.close()
    if not quiet:
        err.print(f"ingested the demo collection into {path}", highlight=False)
    return report


# ---- looking at the index -----------------------------------------------------------------


@app.command()
def documents(index: IndexOpt = None, demo: DemoOpt = False, as_json: JsonOpt = False) -> None:
    """List the documents as the index sees them (metadata and chunk counts)."""
    with _user_errors():
        docs = _open(index, demo).documents()
    if as_json:
        _print_json([{**_meta_json(d.meta), "chunks": d.chunks} for d in docs])
        return
    table = Table(title=f"{len(docs)} documents")
    for col in ("doc_id", "version", "type", "access", "lang", "in force", "chunks", "source"):
        table.add_column(col)
    for d in docs:
        m = d.meta
        table.add_row(
            m.doc_id, m.version, m.doc_type, m.access, m.language,
            _in_force(m.effective_from, m.effective_to), str(d.chunks), m.source,
        )  # fmt: skip
    out.print(table)


@app.command()
def chunks(
    doc_id: Annotated[str, typer.Argument(help="The document's doc_id.")],
    version: Annotated[str | None, typer.Option(help="Only this version.")] = None,
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the chunks of one document."""
    with _user_errors():
        store = _open(index, demo)
        found = store.chunks(doc_id, version)
        if not found:
            known = store.versions(doc_id)
            if not known:
                raise TetherError(f"no document with doc_id {doc_id!r} (see `tether documents`)")
            raise TetherError(
                f"{doc_id!r} has no version {version!r}; it has {', '.join(m.version for m in known)}"
            )
    if as_json:
        _print_json([_chunk_json(c) for c in found])
        return
    for c in found:
        where = f"page {c.page}" if c.page else ""
        out.print(
            f"[bold]{c.chunk_id}[/bold]  {c.doc_id} v{c.version}  §{' > '.join(c.heading_path) or '-'}"
            f"  {where} [{c.start}:{c.end}]",
            highlight=False,
        )
        out.print(c.text, highlight=False, markup=False)
        out.print()


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (words, a code, a question).")],
    k: Annotated[int, typer.Option("--k", help="How many passages.", min=1, max=100)] = 5,
    as_of: AsOfOpt = "today",
    audience: AudienceOpt = "public",
    method: Annotated[
        str,
        typer.Option(
            help="bm25, dense, hybrid or rerank. Default: rerank when the index has vectors,"
            " else bm25."
        ),
    ] = "auto",
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Search the index and print ranked passages."""
    filters = Filters(as_of=_as_of(as_of), audience=_audience(audience))  # type: ignore[arg-type]
    with _user_errors():
        store = _open(index, demo)
        hits = _search(store, query, k, filters, method)
    if as_json:
        _print_json([_hit_json(h) for h in hits])
        return
    _print_hits(hits, filters)


def _search(store: SqliteStore, query: str, k: int, filters: Filters, method: str) -> list[Hit]:
    from tether.retrieval.retriever import Retriever, check_method

    if check_method(method) == "bm25":  # checked before an embedder loads; bm25 needs none
        return Retriever(store).search(query, k, filters, method="bm25")
    return Retriever.for_store(store).search(query, k, filters, method=method)


def _print_hits(hits: list[Hit], filters: Filters) -> None:
    when = filters.as_of.isoformat() if filters.as_of else "any date"
    if not hits:
        out.print(f"no passages found (as of {when}, audience {filters.audience})")
        return
    out.print(f"[dim]{len(hits)} passages (as of {when}, audience {filters.audience})[/dim]")
    for h in hits:
        c = h.chunk
        snippet = " ".join(c.text.split())
        snippet = snippet[:220] + ("…" if len(snippet) > 220 else "")
        out.print(
            f"[bold]{h.rank:>2}.[/bold] [cyan]{c.chunk_id}[/cyan]  {c.doc_id} v{c.version}"
            f"  § {c.section}  [dim]{h.method} {h.score:.3f}"
            f"{' · standing rule: which source wins when sources of different standing meet' if 'rule' in h.signals else ''}"
            "[/dim]",
            highlight=False,
        )
        out.print(f"    {snippet}", highlight=False, markup=False)


@app.command()
def info(index: IndexOpt = None, demo: DemoOpt = False, as_json: JsonOpt = False) -> None:
    """What the index holds, how it was built, and which embedder this machine would use."""
    with _user_errors():
        store = _open(index, demo)
        data = store.info()
        if data.get("vectors"):
            from tether.embeddings.embedders import default_embedder, describe, embed_text_report

            data["embedder_in_use"] = describe(default_embedder())
            data.update(embed_text_report(store))
    if as_json:
        _print_json(data)
        return
    table = Table(title="index", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key, value in data.items():
        table.add_row(key, json.dumps(value) if isinstance(value, dict) else str(value))
    out.print(table)


# ---- the demo -----------------------------------------------------------------------------


@app.command()
def demo(
    index: Annotated[Path, typer.Option(help="Where to put the demo index.")] = DEMO_INDEX,
    question: Annotated[
        str, typer.Option(help="The question to answer at the end (text or a bundled ID).")
    ] = "Q053",
    provider: Annotated[
        str | None,
        typer.Option(help="As for `ask` (default: local model if installed, else extractive)."),
    ] = None,
) -> None:
    """Ingest the bundled demo collection, search it, and answer a question with checked citations."""
    from tether.answering.pipeline import ask as run_ask

    with _user_errors():
        report = _ingest_demo(index)
        _print_report(report, index)
        store = open_store(index)
        text, opts, _ = _ask_options(question, None, None, "auto", 5)
        filters = Filters(as_of=opts.as_of, audience=opts.audience)
        out.print(f"\n[bold]search:[/bold] {text}", highlight=False)
        _print_hits(_search(store, text, 5, filters, "auto"), filters)
        chosen = _provider(provider, None)
        out.print(f"\n[bold]ask[/bold] (answering with {chosen.describe()}):", highlight=False)
        with err.status("thinking…"):
            result = run_ask(text, store, chosen, opts)
        _print_result(result, "")
        out.print(
            f'\nNext: tether ask "your question" --demo · tether questions · tether eval'
            f"   (the index is {index})",
            highlight=False,
        )


@app.command()
def questions(
    kind: Annotated[str | None, typer.Option(help="Only questions of this kind.")] = None,
    questions_file: Annotated[
        Path | None,
        typer.Option("--questions", help="A question set (JSON Lines); default: the bundled one."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the questions of a question set."""
    with _user_errors():
        qs = load_questions(questions_file)
    if kind is not None:
        kinds = sorted({q.kind for q in qs})
        if kind not in kinds:
            err.print(f"[red]error:[/red] no questions of kind {kind!r}; kinds: {', '.join(kinds)}")
            raise typer.Exit(1)
        qs = [q for q in qs if q.kind == kind]
    if as_json:
        _print_json([{**asdict(q), "as_of": q.as_of.isoformat() if q.as_of else None} for q in qs])
        return
    table = Table(title=f"{len(qs)} questions")
    for col in ("id", "kind", "lang", "audience", "as of", "abstain", "question"):
        table.add_column(col, overflow="fold")
    for q in qs:
        table.add_row(
            q.id, q.kind, q.language, q.audience, q.as_of.isoformat() if q.as_of else "-",
            "yes" if q.abstain else "", q.question,
        )  # fmt: skip
    out.print(table)


@app.command()
def version() -> None:
    """Print tether's version."""
    out.print(__version__)


# ---- asking -------------------------------------------------------------------------------

QID = re.compile(r"^[A-Z]+\d+$")


def _provider(name: str | None, model: str | None):
    from tether.config import load_settings
    from tether.providers.providers import make_provider

    return make_provider(load_settings(), name=name, model=model)


def _ask_options(
    question: str, as_of: str | None, audience: str | None, method: str, k: int, **rest: Any
) -> tuple[str, Any, bool]:
    """(question text, AskOptions, whether it is a bundled question)."""
    from tether.answering.pipeline import AskOptions

    bundled = None
    if QID.match(question.strip()):
        found = {q.id: q for q in load_questions()}
        bundled = found.get(question.strip())
        if bundled is None:
            raise TetherError(
                f"no question {question!r} in the bundled set (see `tether questions`)"
            )
    opts = AskOptions(
        as_of=_as_of(as_of) if as_of is not None else (bundled.as_of if bundled else date.today()),
        audience=_audience(audience) if audience else (bundled.audience if bundled else "public"),  # type: ignore[arg-type]
        language=bundled.language if bundled else None,
        method=method,
        k=k,
        **rest,
    )
    return (bundled.question if bundled else question), opts, bundled is not None


@app.command()
def ask(
    question: Annotated[
        str, typer.Argument(help="A question, or a bundled question ID such as Q007.")
    ],
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of", help="Date the answer must hold on: YYYY-MM-DD, today (default) or none."
        ),
    ] = None,
    audience: Annotated[
        str | None, typer.Option(help="public (default, fail-closed) or staff.")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help="Retrieval: bm25, dense, hybrid or rerank. Default: rerank when the index has"
            " vectors, else bm25."
        ),
    ] = "auto",
    k: Annotated[int, typer.Option("--k", help="Passages to retrieve.", min=1, max=50)] = 5,
    provider: Annotated[
        str | None,
        typer.Option(
            help="openai, anthropic, local, extractive or replay (default: TETHER_PROVIDER, else local if installed, else extractive)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name for the provider.")] = None,
    closed_book: Annotated[
        bool, typer.Option(help="Ask the model alone, without passages (for comparison).")
    ] = False,
    inline: Annotated[
        bool,
        typer.Option(
            help="Numbered [n] citations instead of JSON (for models without structured output)."
        ),
    ] = False,
    strict: Annotated[
        bool, typer.Option(help="Remove claims that fail an exact check; refuse when none is left.")
    ] = False,
    index: IndexOpt = None,
    demo: DemoOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the index with cited, checked claims (or refuse honestly)."""
    from tether.answering.pipeline import ask as run_ask
    from tether.answering.pipeline import result_json

    with _user_errors():
        text, opts, bundled = _ask_options(
            question, as_of, audience, method, k,
            closed_book=closed_book, mode="inline" if inline else "json", strict=strict,
        )  # fmt: skip
        store = _open(index, demo or (bundled and index is None))
        chosen = _provider(provider, model)
        result = run_ask(text, store, chosen, opts)
    if as_json:
        _print_json(result_json(result))
        return
    _print_result(result, getattr(chosen, "note", ""))


@app.command()
def chat(
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="YYYY-MM-DD, today (default) or none.")
    ] = None,
    audience: Annotated[str | None, typer.Option(help="public (default) or staff.")] = None,
    method: Annotated[
        str, typer.Option(help="bm25, dense, hybrid or rerank (default: as for `ask`).")
    ] = "auto",
    provider: Annotated[str | None, typer.Option(help="As for `ask`.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for the provider.")] = None,
    index: IndexOpt = None,
    demo: DemoOpt = False,
) -> None:
    """Ask questions one after another (type `quit` to leave, `history` to list them)."""
    from tether.answering.pipeline import ask as run_ask

    history: list[str] = []
    with _user_errors():
        store = _open(index, demo)
        chosen = _provider(provider, model)
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
                    out.print(f"{i:>3}. {q}", highlight=False)
                continue
            if not line:
                continue
            history.append(line)
            try:
                text, opts, _ = _ask_options(line, as_of, audience, method, 5)
                _print_result(run_ask(text, store, chosen, opts), getattr(chosen, "note", ""))
            except TetherError as exc:
                err.print(f"[red]error:[/red] {exc}", highlight=False)


def _print_result(result: Any, provider_note: str = "") -> None:
    when = result.as_of.isoformat() if result.as_of else "any date"
    out.print(
        f"[bold]Q:[/bold] {result.question}  [dim](as of {when}, audience {result.audience},"
        f" {result.language}, {result.method})[/dim]",
        highlight=False,
    )
    ctx = result.context
    if ctx is not None and ctx.passages:
        table = Table(title=f"passages ({ctx.tokens} of {ctx.budget} tokens, {ctx.tokenizer})")
        for col in ("#", "chunk", "doc_id", "v", "section", "tokens"):
            table.add_column(col, overflow="fold")
        for p in ctx.passages:
            c = p.chunk
            table.add_row(str(p.marker), c.chunk_id, c.doc_id, c.version, c.section, str(p.tokens))
        out.print(table)
        for d in ctx.dropped:
            out.print(
                f"  dropped {d.chunk.chunk_id} ({d.chunk.doc_id}): {d.reason}", highlight=False
            )
    if result.gate is not None and not result.gate.passed:
        out.print(
            f"[yellow]Refused before the model:[/yellow] {result.gate.reason} (no model call, no cost)",
            highlight=False,
        )
        return
    for note in dict.fromkeys(n for n in (provider_note, result.provider_note) if n):
        out.print(f"[dim]note: {note}[/dim]", highlight=False)
    if result.problem is not None:
        out.print(
            f"[red]No usable answer ({result.problem.kind}):[/red] {result.problem.detail}",
            highlight=False,
        )
    elif result.answer is not None:
        label = (
            "[green]Answer[/green]"
            if result.answer.answerable
            else "[yellow]Not answerable from the passages[/yellow]"
        )
        out.print(f"\n{label}: {result.answer.answer}", highlight=False)
        checks = {id(ch.claim): ch for ch in result.checks}
        by_text = {ch.claim.text: ch for ch in result.checks}
        from tether.verify.check import describe

        for i, claim in enumerate(result.answer.claims, 1):
            ch = checks.get(id(claim)) or by_text.get(claim.text)
            cited = " ".join(claim.chunk_ids) or "(no citation)"
            if ch is None:
                verdict = "[yellow]not checked[/yellow]"
            elif ch.ok:
                verdict = "[green]ok[/green]"
            else:
                verdict = "[red]" + ", ".join(ch.flags) + "[/red]"
            score = (
                f" · entailment {ch.entailment:.2f}"
                if ch is not None and ch.entailment is not None
                else ""
            )
            out.print(
                f"  {i}. {claim.text}\n     cites {cited} → {verdict}{score}", highlight=False
            )
            for flag in ch.flags if ch else ():
                out.print(f"     [dim]{flag}: {describe(flag)}[/dim]", highlight=False)
            for ev in ch.evidence if ch else ():
                out.print(
                    f"     evidence [{ev.chunk_id} {ev.start}:{ev.end}] “{ev.text}”",
                    highlight=False,
                )
        for ch in result.checks:
            if ch.removed:
                out.print(
                    f"  [red]removed (--strict):[/red] {ch.claim.text} ({', '.join(ch.flags)})",
                    highlight=False,
                )
    comp = result.completion
    if comp is not None:
        cost = f"${comp.cost_usd:.4f}" if comp.cost_usd else "$0"
        out.print(
            f"[dim]{comp.provider or result.provider} · {comp.model} · {comp.input_tokens} tokens in,"
            f" {comp.output_tokens} out · {comp.latency_s:.1f} s · {cost}[/dim]",
            highlight=False,
        )


def _eval_verifier(index: Path | None, judge_name: str, as_json: bool) -> None:
    from tether.evaluation.evaluate import load_claims, run_verifier_eval
    from tether.retrieval.retriever import Retriever
    from tether.verify.judges import EmbeddingJudge, LLMJudge

    with _user_errors():
        if judge_name not in ("none", "embedding", "llm"):
            raise TetherError(f"unknown judge {judge_name!r}: none, embedding or llm")
        store = _open(index, demo=index is None)
        embedder = Retriever.for_store(store).embedder
        judge = {
            "none": None,
            "embedding": EmbeddingJudge(embedder) if embedder is not None else None,
            "llm": LLMJudge(_provider("local", None)) if judge_name == "llm" else None,
        }[judge_name]
        items = load_claims()
        with Progress(
            TextColumn("checking claims"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=True, disable=not err.is_terminal,
        ) as bar:  # fmt: skip
            task = bar.add_task("claims", total=len(items))
            result = run_verifier_eval(
                store, items, judge=judge, embedder=embedder,
                progress=lambda done, total: bar.update(task, completed=done),
            )  # fmt: skip
    if as_json:
        _print_json(
            {
                "judge": result.judge, "claims": len(result.rows),
                "false_passes": result.false_passes, "unsupported": result.unsupported,
                "false_alarms": result.false_alarms, "supported": result.supported,
                "false_pass_rate": result.false_pass_rate, "false_alarm_rate": result.false_alarm_rate,
                "per_check": result.per_check, "per_kind": result.per_kind,
                "median_ms_per_claim": result.median_ms,
                "wrong": [{"id": r.item_id, "kind": r.kind, "label": r.label, "flags": list(r.flags)}
                          for r in result.rows if r.passed == (r.label == "unsupported")],
            }
        )  # fmt: skip
        return
    out.print(
        f"[bold]verifier on {len(result.rows)} labelled claims[/bold] (judge: {result.judge})\n"
        f"  false passes (unsupported marked ok): {result.false_passes}/{result.unsupported}"
        f" = {result.false_pass_rate:.1%}\n"
        f"  false alarms (supported flagged):     {result.false_alarms}/{result.supported}"
        f" = {result.false_alarm_rate:.1%}\n"
        f"  median time per claim: {result.median_ms:.1f} ms",
        highlight=False,
    )
    table = Table(title="per check: how often it fired")
    for col in ("check", "on supported claims (false alarms)", "on unsupported claims"):
        table.add_column(col)
    for kind, counts in sorted(result.per_check.items()):
        table.add_row(kind, str(counts["fired_on_supported"]), str(counts["fired_on_unsupported"]))
    out.print(table)
    table = Table(title="per kind of item: overall verdict wrong")
    for col in ("item kind", "n", "wrong"):
        table.add_column(col)
    for kind, counts in sorted(result.per_kind.items()):
        table.add_row(kind, str(counts["n"]), str(counts["wrong"]))
    out.print(table)
    for r in result.rows:
        if r.passed == (r.label == "unsupported"):
            out.print(
                f"  wrong: {r.item_id} ({r.kind}, {r.label}) flags: {', '.join(r.flags) or 'none'}",
                highlight=False,
            )


@app.command()
def calibrate(
    index: IndexOpt = None,
    demo: DemoOpt = False,
    questions_file: Annotated[
        Path | None, typer.Option("--questions", help="Question set; default: the bundled one.")
    ] = None,
    max_wrongly_refused: Annotated[
        float, typer.Option(help="Share of answerable questions the gate may refuse.")
    ] = 0.02,
    as_json: JsonOpt = False,
) -> None:
    """Calibrate the support gate's floor per retrieval method and store it in the index."""
    from tether.evaluation.evaluate import calibrate_gate
    from tether.retrieval.retriever import Retriever

    with _user_errors():
        store = _open(index, demo or index is None)
        qs = load_questions(questions_file)
        retriever = Retriever.for_store(store)
        methods = ("bm25", "dense", "hybrid", "rerank") if retriever.embedder else ("bm25",)
        with Progress(
            TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=True, disable=not err.is_terminal,
        ) as bar:  # fmt: skip
            task = bar.add_task("gate", total=len(qs) * len(methods))
            cal = calibrate_gate(
                store, retriever, qs, methods, max_wrongly_refused=max_wrongly_refused,
                progress=lambda done, total: bar.update(task, completed=done),
            )  # fmt: skip
        store.set_gate_floors(cal.floors)
    if as_json:
        _print_json({"floors": cal.floors, "table": [asdict(r) for r in cal.table]})
        return
    table = Table(title="support gate: trade-off per floor (min_support 1)")
    for col in (
        "method",
        "floor",
        "answerable wrongly refused",
        "must-refuse let through",
        "chosen",
    ):
        table.add_column(col)
    chosen = {(r.method, r.floor) for r in cal.chosen}
    for r in sorted({*cal.table, *cal.chosen}, key=lambda r: (r.method, r.floor)):
        table.add_row(
            r.method, f"{r.floor:.4g}", f"{r.wrongly_refused}/{r.answerable}",
            f"{r.let_through}/{r.must_refuse}", "✓" if (r.method, r.floor) in chosen else "",
        )  # fmt: skip
    out.print(table)
    out.print(
        f"stored in {store.path}: " + ", ".join(f"{m} {f:.4g}" for m, f in cal.floors.items())
    )


# ---- printing helpers ---------------------------------------------------------------------


def _in_force(a: date | None, b: date | None) -> str:
    return f"{a.isoformat() if a else '…'} → {b.isoformat() if b else '…'}"


def _meta_json(m: Any) -> dict:
    d = asdict(m)
    for key in ("effective_from", "effective_to"):
        d[key] = d[key].isoformat() if d[key] else None
    return d


def _chunk_json(c: Any) -> dict:
    return {
        "chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "version": c.version,
        "title": c.meta.title,
        "heading_path": list(c.heading_path),
        "section": c.section,
        "anchor": c.anchor,
        "page": c.page,
        "start": c.start,
        "end": c.end,
        "access": c.meta.access,
        "language": c.meta.language,
        "text": c.text,
    }


def _hit_json(h: Hit) -> dict:
    return {
        "rank": h.rank,
        "score": h.score,
        "method": h.method,
        "signals": dict(h.signals),
        **_chunk_json(h.chunk),
    }


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


# ---- eval ---------------------------------------------------------------------------------


@app.command("eval")
def eval_command(
    questions_file: Annotated[
        Path | None,
        typer.Option("--questions", help="A question set (JSON Lines); default: the bundled one."),
    ] = None,
    collection: Annotated[
        Path | None,
        typer.Option(
            "--collection",
            help="Ingest this folder first (into --index, else a temporary index) and evaluate"
            " on it. Default: the demo index (ingested if missing).",
        ),
    ] = None,
    methods: Annotated[
        str, typer.Option(help="Comma-separated: bm25, dense, hybrid, rerank.")
    ] = "bm25,dense,hybrid,rerank",
    k: Annotated[
        int, typer.Option("--k", help="Cut-off for hit/recall/precision/nDCG.", min=1, max=50)
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
        typer.Option(help="Override every question's audience (public or staff)."),
    ] = None,
    provider: Annotated[
        str | None, typer.Option(help="Provider for --rewrite (as for `ask`).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model for --rewrite.")] = None,
    index: IndexOpt = None,
    verifier: Annotated[
        bool,
        typer.Option(
            "--verifier",
            help="Measure the citation checker instead, on the bundled labelled claim set:"
            " false passes and false alarms per check and overall, time per claim.",
        ),
    ] = False,
    judge: Annotated[
        str, typer.Option(help="With --verifier: none, embedding, or llm (the local model).")
    ] = "embedding",
) -> None:
    """Measure retrieval on a question set: hit@k, recall@k, precision@k, MRR, nDCG@k per
    method, overall, per kind and per language; failing questions say where the passage ranked."""
    if verifier:
        _eval_verifier(index, judge, as_json)
        return
    import tempfile

    from tether.evaluation.evaluate import run_retrieval_eval, write_report
    from tether.retrieval.retriever import METHODS, LLMRewriter, Retriever, store_has_vectors

    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    bad = [m for m in chosen if m not in METHODS]
    if bad or not chosen:
        raise typer.BadParameter(
            f"{', '.join(bad) or 'none'}: choose from {', '.join(METHODS)}", param_hint="--methods"
        )
    if audience is not None:
        _audience(audience)
    with _user_errors():
        qs = load_questions(questions_file)
        if collection is not None:
            if not collection.is_dir():
                raise TetherError(f"no such folder: {collection}")
            path = index or Path(tempfile.mkdtemp(prefix="tether-eval-")) / "index.sqlite"
            store = SqliteStore(path)
            _eval_ingest(store, collection)
        else:
            store = _open(index, demo=index is None)
        dense = [m for m in chosen if m != "bm25"]
        if dense and not store_has_vectors(store):
            raise TetherError(
                f"{', '.join(dense)} need vectors and {store.path} has none: ingest with"
                " embeddings, or pass --methods bm25"
            )
        rewriter = LLMRewriter(_provider(provider, model)) if rewrite else None
        if rewriter is not None and getattr(rewriter.provider, "name", "") == "extractive":
            raise TetherError(
                "--rewrite needs a language model; only the extractive answerer is available"
            )
        retriever = (
            Retriever.for_store(store, rewrite=rewriter)
            if dense
            else Retriever(store, rewrite=rewriter)
        )
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=as_json or not err.is_terminal,
        ) as bar:
            task = bar.add_task("Searching", total=None)
            result = run_retrieval_eval(
                store,
                retriever,
                qs,
                chosen,
                k,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                audience=audience,
                questions_file=str(questions_file or "bundled"),
            )
        if report is not None:
            write_report(result, report)
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
        return
    _print_eval(result)
    if report is not None:
        out.print(f"report: {report}", highlight=False)


def _eval_ingest(store: SqliteStore, folder: Path) -> None:
    report = _run_sync(store, folder, ChunkerConfig(), False, False, True)
    for problem in report.problems:
        err.print(f"[yellow]problem[/yellow]  {problem.source}: {problem.reason}", highlight=False)


def _print_eval(result: Any) -> None:
    from tether.evaluation.evaluate import METRIC_NAMES, METRICS

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
        table = Table(title=f"{method}: per kind and language")
        table.add_column("group")
        table.add_column("n", justify="right")
        for name in names:
            table.add_column(name, justify="right")
        for label, groups in (("kind", agg["by_kind"]), ("lang", agg["by_language"])):
            for group, vals in groups.items():
                table.add_row(
                    f"{label}: {group}", str(int(vals["n"])), *(f"{vals[m]:.3f}" for m in METRICS)
                )
        out.print(table)
    for method in result.methods:
        failing = result.failures(method)
        if failing:
            out.print(
                f"[bold]{method}[/bold]: {len(failing)} question(s) with nothing relevant in the top {result.k}"
            )
        for r in failing:
            out.print(
                f"  {r.id} [{r.kind}, {r.language}] {r.question}", highlight=False, markup=False
            )
            out.print(f"      {r.why(result.k)}", highlight=False, markup=False)
    for note in result.notes:
        out.print(note, highlight=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
