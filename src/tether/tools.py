"""The tools a model or an agent calls, over one Workspace, for an audience fixed when the
tools are made: `search(query, k, as_of)`, `read(chunk_id)`, `ask(question, as_of)`,
`check(claims, passage_ids)`, `documents()` and `document(doc_id)`. Each returns the wire
shapes of `tether.schemas` (a Hit, a Chunk, an AskResult, a Check, a Document). The MCP face
(`tether.mcp_server`) serves them; any later face may.

The audience is the `Tools` object's, never an argument of a call: a public `Tools` never
returns staff content, and a staff chunk ID read or cited through it is answered exactly as an
unknown ID.

What it cannot do: it holds one Workspace, so it is for one thread at a time (a face runs
its calls one after another); it does not authenticate anyone (whoever configures the face
chooses the audience).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether import schemas
from tether.app import AsOf, SearchOptions, Workspace, as_of_value, check_audience
from tether.errors import NotFoundError, TetherError
from tether.types import Audience, Claim
from tether.verify.options import CheckOptions

MAX_K = 50


class Tools:
    """search, read, ask and check over `workspace`, for `audience` only; answers are audited
    as asked by `who` (the face's name, e.g. "mcp")."""

    def __init__(
        self,
        workspace: Workspace,
        audience: str = "public",
        *,
        agent: bool = False,
        who: str = "mcp",
    ) -> None:
        self.workspace = workspace
        self.audience: Audience = check_audience(audience)
        self.agent = agent  # ask through the agent loop
        self.who = who

    def search(self, query: str, k: int = 5, as_of: AsOf = "today") -> list[schemas.WireHit]:
        """The top `k` passages for `query` among the versions in force on `as_of` (today by
        default; "none" for every version)."""
        if not 1 <= k <= MAX_K:
            raise TetherError(f"k must be from 1 to {MAX_K}, not {k}")
        options = SearchOptions(k, as_of_value(as_of), self.audience)
        return [schemas.WireHit.from_hit(h) for h in self.workspace.search(query, options)]

    def read(self, chunk_id: str) -> schemas.WireChunk:
        """The passage with this ID (an error for an unknown one, and alike for one this
        audience may not see)."""
        chunk = self.workspace.read(chunk_id, self.audience)
        if chunk is None:
            raise NotFoundError(f"no passage has the ID {chunk_id.strip()!r}")
        return schemas.WireChunk.from_chunk(chunk)

    def ask(self, question: str, as_of: AsOf = "today") -> schemas.WireAskResult:
        """An answer with checked citations (through the agent loop when this `Tools` was
        made with `agent`)."""
        from tether.answering.pipeline import AskOptions

        options = AskOptions(as_of=as_of_value(as_of), audience=self.audience)
        ask = self.workspace.ask_agent if self.agent else self.workspace.ask
        return schemas.WireAskResult.from_ask_result(ask(question, options, who=self.who))

    def check(
        self,
        claims: Sequence[schemas.WireClaim | dict[str, Any]],
        passage_ids: Sequence[str] | None = None,
        question: str = "",
        as_of: AsOf = None,
    ) -> list[schemas.Check]:
        """Each claim ({"text", "chunk_ids"}) checked by `Workspace.check`, as `POST /v1/check`
        checks it, against the passages `passage_ids` (the ones the answer was written from;
        by default every cited one): a cited passage not among them is `not_in_context`, an
        unknown one (or one this audience may not see) `missing_id`."""
        given = [schemas.WireClaim.model_validate(c) for c in claims]
        if not given:
            raise TetherError("give at least one claim to check")
        wanted = passage_ids if passage_ids is not None else [i for c in given for i in c.chunk_ids]
        options = CheckOptions(audience=self.audience, as_of=as_of_value(as_of), question=question)
        found = self.workspace.check(
            [Claim(c.text, tuple(c.chunk_ids)) for c in given], list(wanted), options
        )
        return [schemas.Check.from_check(ch) for ch in found]

    def documents(self) -> list[schemas.WireDocument]:
        """The documents this audience may see."""
        return [schemas.WireDocument.from_info(d) for d in self.workspace.documents(self.audience)]

    def document(self, doc_id: str) -> str:
        """A document's text as this audience may see it, version by version (an error for
        an unknown document, and alike for one this audience may not see)."""
        parts: list[str] = []
        version = None
        for chunk in self.workspace.chunks(doc_id, audience=self.audience):
            if chunk.meta.version != version:
                version = chunk.meta.version
                parts.append(f"# {chunk.meta.title} (version {version})")
            parts.append(chunk.text)
        return "\n\n".join(parts)
