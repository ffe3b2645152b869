"""`Collection`, the Python API: `Collection("docs").ask("...")` — a Workspace
(`tether.app`) over a folder and its index `<folder>/.tether/index.sqlite`, with the CLI's
defaults (the public audience, the versions in force today).

What it cannot do: it adds no behaviour of its own beyond those defaults and building the
index on first use; anything it does, a Workspace does. It does not watch the folder:
`ingest()` syncs when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.answering.gate import check_question
from tether.app import (
    AsOf,
    SearchOptions,
    Workspace,
    as_of_value,
    check_audience,
    today,
)
from tether.config import Settings
from tether.errors import TetherError
from tether.places import DEFAULT_INDEX
from tether.types import Audience, ChunkerConfig, Claim, ClaimCheck, Hit, SyncReport
from tether.verify.options import CheckOptions

if TYPE_CHECKING:
    from tether.answering.pipeline import AskOptions
    from tether.protocols import Provider, Store
    from tether.types import AskResult


class Collection:
    """A document collection and its index: `Collection("docs").ask("...")`.

    The index is `<folder>/.tether/index.sqlite` unless `index` is given; it is built on
    first use when missing. The provider is the configured one (TETHER_PROVIDER and friends),
    else the local model when installed, else the extractive answerer. Searches and questions
    have the CLI's defaults: the public audience (staff-only documents are not seen) and the
    versions in force today (`as_of="today"`; None for every version)."""

    def __init__(
        self,
        folder: Path | str,
        *,
        index: Path | str | None = None,
        provider: Provider | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise TetherError(f"{self.folder} is not a folder")
        path = Path(index) if index is not None else self.folder / DEFAULT_INDEX
        self.workspace = Workspace.open(path, settings=settings, provider=provider, create=True)

    @property
    def index(self) -> Path:
        """The index file of this collection."""
        return self.workspace.index

    @property
    def store(self) -> Store:
        """The index, built from the folder on first use when it is missing."""
        if not self.index.exists():
            self.ingest()
        return self.workspace.store

    @property
    def provider(self) -> Provider:
        """The provider that answers questions (the configured one, built on first use)."""
        return self.workspace.provider

    def ingest(
        self,
        *,
        embed: bool = True,
        progress: Any = None,
        rebuild: bool = False,
        strict: bool = False,
        chunker: ChunkerConfig | None = None,
        follow_links: bool = False,
        default_access: str | None = None,
    ) -> SyncReport:
        """Sync the index with the folder (only new or changed files are parsed and embedded)
        and return the SyncReport; `embed=False` builds a lexical-only index, `rebuild`
        starts over, `strict` writes nothing when any file has a problem, `default_access`
        (public or staff) is what a document without an access label is indexed as (kept
        with the index; None: the kept value, else staff)."""
        return self.workspace.ingest(
            self.folder,
            embed=embed,
            progress=progress,
            rebuild=rebuild,
            strict=strict,
            chunker=chunker,
            follow_links=follow_links,
            default_access=default_access,
        )

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        method: str = "auto",
        as_of: AsOf = "today",
        audience: Audience = "public",
    ) -> list[Hit]:
        """The top `k` passages for `query` that `audience` may see among the versions in
        force on `as_of` (today by default; None for every version); `method` is bm25, dense,
        hybrid, rerank, deep (rerank's top 10 reread by tether's reader) or auto (rerank when
        the index has vectors, else bm25)."""
        options = SearchOptions(k, as_of_value(as_of), check_audience(audience), method)
        check_question(query, "search query", empty_ok=True)  # before building the index
        self.store  # noqa: B018 (builds the index when missing)
        return self.workspace.search(query, options)

    def ask(
        self,
        question: str,
        options: AskOptions | None = None,
        *,
        as_of: AsOf = "today",
        audience: Audience = "public",
        language: str | None = None,
        method: str = "auto",
        k: int = 5,
        budget: int | None = None,
        min_support: int | None = None,
        floor: float | None = None,
        mode: str = "auto",
        closed_book: bool = False,
        strict: bool = False,
        verify: bool = True,
        answerability: bool = True,
        deadline: float | None = None,
    ) -> AskResult:
        """Answer `question` with claims checked against their cited passages.

        The keywords are the fields of `AskOptions` (pass either an `AskOptions` or keywords,
        not both): `as_of` (today by default, None for every version), `audience` (public by
        default), `language` (detected from the question), `method`, `k` passages, the
        context `budget` in tokens, `min_support` passages over the gate's `floor`, `mode`
        (json or inline citations, select: evidence sentences chosen by number, auto: select
        with the local model, else json), `closed_book`, `strict`, `verify`, `answerability`
        (refuse before the model when no passage answers), `deadline` (a `time.monotonic()`
        instant past which the next stage raises `DeadlineError`). A provider failure
        does not raise: it is `result.problem`. The question is recorded in the index's
        audit as asked by the OS user (TETHER_AUDIT=false: it is not)."""
        from tether.answering.pipeline import AskOptions

        given = dict(
            as_of=as_of_value(as_of),
            audience=check_audience(audience),
            language=language,
            method=method,
            k=k,
            closed_book=closed_book,
            floor=floor,
            mode=mode,
            strict=strict,
            verify=verify,
            answerability=answerability,
            deadline=deadline,
        )
        if budget is not None:
            given["budget"] = budget
        if min_support is not None:
            given["min_support"] = min_support
        if options is None:
            options = AskOptions(**given)  # type: ignore[arg-type]
        elif not isinstance(options, AskOptions):
            raise TypeError("options must be an AskOptions (or pass its fields as keywords)")
        elif AskOptions(**given) != AskOptions(as_of=today()):  # type: ignore[arg-type]
            raise TypeError("pass either an AskOptions or keyword options, not both")
        check_question(question)  # before building the index
        self.store  # noqa: B018 (builds the index when missing)
        return self.workspace.ask(question, options)

    def check(
        self,
        claims: Sequence[Claim],
        passage_ids: Sequence[str],
        *,
        as_of: AsOf = "today",
        audience: Audience = "public",
        language: str | None = None,
        question: str = "",
        judge: bool = True,
    ) -> list[ClaimCheck]:
        """`claims` (each with the chunk IDs it cites) checked against the passages
        `passage_ids`, as `ask` checks a model's answer (`Workspace.check`, as `POST /v1/check`
        and the MCP `check` tool do): a passage `audience` may not see, or one not in force on
        `as_of`, reads as an unknown ID (`missing_id`). `question` is the one the claims answer
        (its numbers count as found), `language` theirs (detected when None), `judge` whether
        the learned alignment judge scores each claim."""
        options = CheckOptions(
            audience=check_audience(audience),
            as_of=as_of_value(as_of),
            language=language,
            question=question,
            judge=judge,
        )
        self.store  # noqa: B018 (builds the index when missing)
        return self.workspace.check(claims, passage_ids, options)
