"""`ReplayProvider`: record/replay of completions in a JSONL file, for tests and demos.

A request is found by its exact key (purpose, prompt, messages, passages, schema, limits) or,
in replay mode only, by its loose key (purpose, question, schema: the same question with other
passages; the note says the passages differed). Record and auto modes append what `inner`
returns, one line per completion, under a file lock.

Its `capabilities` are those of the provider it replays, so a replay behaves like that provider
(a replay of the local model's recordings answers in select mode with the align+llm judge):
the recording provider's (`inner`) in record and auto modes; in replay mode, those the registry
(`tether.providers.specs.capabilities_for`) gives the provider the recordings name, with `recorded` set (it
answers only what it holds), the answer mode its answers were recorded in (the bundled local
recordings were made in json mode, so they replay in json mode), and the judge `align` when the
file holds no second opinion (no `judge` request): a second opinion it cannot replay is not
free, it is missing.

What it cannot do: a replay is only as current as its recording (a changed prompt changes the
exact key, and so does another answer mode: recordings made in json mode do not replay a select
request); a second opinion (the align+llm judge, the answerability judge) replays only when it
was recorded too; on Windows appends are not locked across processes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from tether.errors import ProviderError, TetherError
from tether.protocols import Provider, StreamingProvider, capabilities_of
from tether.providers.base import join_notes, one_line, with_selection
from tether.providers.specs import REPLAYED, capabilities_for
from tether.types import AnswerMode, Capabilities, Completion, ModelRequest

ReplayMode = Literal["replay", "record", "auto"]


def _sha(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_key(request: ModelRequest) -> str:
    """Exact key: purpose, prompt, messages, passages, schema, limits (canonical JSON)."""
    return _sha(
        {
            "purpose": request.purpose,
            "prompt_id": request.prompt_id,
            "messages": [[m.role, m.content] for m in request.messages],
            "passages": [list(p) for p in request.passages],
            "question": request.question,
            "json_schema": request.json_schema,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "logprobs": request.logprobs,
        }
    )


def request_loose_key(request: ModelRequest) -> str | None:
    """Loose key: purpose, question and schema (same question, any passages); None without
    a question, and for an agent step (every step of a run shares question and schema, so
    only the exact conversation may replay one)."""
    if not request.question.strip() or request.purpose == "agent":
        return None
    return _sha(
        {
            "purpose": request.purpose,
            "question": " ".join(request.question.split()),
            "json_schema": request.json_schema,
        }
    )


RECORDED_MODES: dict[str, AnswerMode] = {"answer": "json", "evidence": "select"}  # by schema
_COMPLETION_FIELDS = {f.name for f in dataclasses.fields(Completion)}


class ReplayProvider:
    """Replays recorded completions from a JSONL file, or records new ones through `inner`."""

    # A replay of recordings that name no registered provider (or several that differ): a
    # remote model's capabilities, answering only what was recorded. `capabilities` (per
    # instance) reads the recordings for the provider they name.
    UNKNOWN = REPLAYED

    def __init__(
        self,
        path: Path,
        mode: ReplayMode = "replay",
        inner: Provider | None = None,
        *,
        recorded_options: Mapping[str, Any] | None = None,
    ) -> None:
        """`recorded_options`: the ask options the recordings were made with, when known
        (the bundled ones', `tether.providers.bundled`): an evaluation asks with them."""
        if mode not in ("replay", "record", "auto"):
            raise TetherError(f"replay mode {mode!r} is not one of replay, record, auto")
        if mode != "replay" and inner is None:
            raise TetherError(f"replay mode {mode!r} needs a provider to record from")
        self.name = "replay"
        self.model = getattr(inner, "model", "recordings")
        self.path = Path(path)
        self.mode = mode
        self.inner = inner
        self.selection = ""
        self.recorded_options: dict[str, Any] = dict(recorded_options or {})
        self._lock = threading.Lock()
        self._exact: dict[str, dict] | None = None
        self._loose: dict[str, dict] = {}
        self._capabilities: Capabilities | None = None

    @property
    def capabilities(self) -> Capabilities:
        """Those of the provider it replays (see the module docstring): the recording
        provider's in record and auto modes; in replay mode, those of the one provider the
        recordings name (their `provider`, else their completion's), `recorded` set and the
        judge `align` unless the file holds second opinions; `UNKNOWN` for recordings that
        name none, an unregistered one or several that differ."""
        if self.mode != "replay" and self.inner is not None:
            return capabilities_of(self.inner)
        if self._capabilities is None:
            found = {capabilities_for(name) for name in self.recorded_providers()}
            if not found and self.inner is not None:
                found = {capabilities_of(self.inner)}
            one = found.pop() if len(found) == 1 else None
            if one is None:
                self._capabilities = self.UNKNOWN
            else:
                judged = any(r.get("purpose") == "judge" for r in self._load().values())
                judge = one.judge if judged else "align"
                modes = self.recorded_modes()
                mode: AnswerMode = modes.pop() if len(modes) == 1 else one.answer_mode
                self._capabilities = dataclasses.replace(
                    one, judge=judge, answer_mode=mode, recorded=True
                )
        return self._capabilities

    def recorded_modes(self) -> set[AnswerMode]:
        """The answer modes (json, select) the file's answers were recorded in: a replay
        answers in the mode it can replay. Each answer's `schema` says it; an answer recorded
        before the schema was kept is read by its shape (json mode's reply has an `answer`,
        select mode's `sentences`)."""
        modes: set[AnswerMode] = set()
        for record in self._load().values():
            if record.get("purpose", "answer") != "answer":
                continue
            schema = record.get("schema")
            if schema is None:
                try:
                    reply = json.loads(str(record["completion"].get("text") or ""))
                except ValueError:
                    continue
                shape = reply if isinstance(reply, dict) else {}
                schema = (
                    "answer" if "answer" in shape else "evidence" if "sentences" in shape else None
                )
            mode = RECORDED_MODES.get(str(schema))
            if mode is not None:
                modes.add(mode)
        return modes

    def recorded_providers(self) -> set[str]:
        """The names of the providers whose completions the file holds."""
        return {
            str(r.get("provider") or r["completion"].get("provider") or "")
            for r in self._load().values()
        } - {""}

    def describe(self) -> str:
        inner = (
            f", recording with {self.inner.name}" if self.inner and self.mode != "replay" else ""
        )
        return with_selection(self.selection, f"replay of {self.path} (mode {self.mode}{inner})")

    def recorded(self) -> str:
        """What the file holds, for a label: "MODEL recorded DATE" per model and day (the
        span of days when there are several), or "no recordings"."""
        days: dict[str, set[str]] = {}
        for record in self._load().values():
            model = str(record.get("model") or record["completion"].get("model") or "?")
            days.setdefault(model, set()).add(str(record.get("recorded_at") or "?"))
        return (
            "; ".join(
                f"{m} recorded {min(d)}" + (f" to {max(d)}" if len(d) > 1 else "")
                for m, d in sorted(days.items())
            )
            or "no recordings"
        )

    def recorded_questions(self) -> set[str]:
        """The questions (whitespace folded) that have a recorded answer."""
        return {
            " ".join(str(r.get("question") or "").split())
            for r in self._load().values()
            if r.get("purpose", "answer") == "answer"
        }

    def _load(self) -> dict[str, dict]:
        if self._exact is None:
            exact: dict[str, dict] = {}
            if self.path.is_file():
                with self.path.open(encoding="utf-8") as f:
                    for number, line in enumerate(f, start=1):
                        if not line.strip():
                            continue
                        try:
                            record = json.loads(line)
                            if not isinstance(record["key"], str) or not isinstance(
                                record["completion"]["text"], str
                            ):
                                raise TypeError
                        except (ValueError, KeyError, TypeError):
                            raise TetherError(
                                f"recordings file {self.path} line {number} is not a recording"
                            ) from None
                        self._index(record, exact)
            self._exact = exact
        return self._exact

    def _index(self, record: dict, exact: dict[str, dict]) -> None:
        exact[record["key"]] = record
        if record.get("loose_key"):
            self._loose[record["loose_key"]] = record

    def complete(self, request: ModelRequest) -> Completion:
        return self._complete(request, None)

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> Completion:
        """`complete`, its text handed to `on_text`: a recording's in one piece (it keeps no
        timing), a recorded provider's as that provider streams it when it can."""
        return self._complete(request, on_text)

    def _complete(self, request: ModelRequest, on_text: Callable[[str], None] | None) -> Completion:
        completion = self._found(request)
        if completion is not None:
            if on_text is not None and completion.text:
                on_text(completion.text)
            return completion
        assert self.inner is not None
        key, loose = request_key(request), request_loose_key(request)
        if on_text is not None and isinstance(self.inner, StreamingProvider):
            completion = self.inner.stream(request, on_text)
        else:
            completion = self.inner.complete(request)
            if on_text is not None and completion.text:
                on_text(completion.text)
        self._append(request, key, loose, completion)
        return completion

    def _found(self, request: ModelRequest) -> Completion | None:
        """The recorded completion for `request` (None: ask the inner provider);
        `ProviderError` in replay mode when there is none."""
        with self._lock:
            exact = self._load()
            key = request_key(request)
            loose = request_loose_key(request)
            if self.mode != "record":
                record = exact.get(key)
                if record is not None:
                    return self._replayed(record, "")
                # a different-passages replay only in replay mode: auto records it instead
                record = self._loose.get(loose) if loose and self.mode == "replay" else None
                if record is not None:
                    then = ", ".join(record.get("chunk_ids") or []) or "none"
                    now = ", ".join(request.chunk_ids or [p[0] for p in request.passages])
                    return self._replayed(
                        record,
                        f"replayed a recording made with different passages "
                        f"(recorded: {then}; now: {now or 'none'})",
                    )
                if self.mode == "replay":
                    question = one_line(request.question, 80) or "(no question)"
                    raise ProviderError(
                        f"no recording for this request (question: '{question}') in "
                        f"{self.path}; record it with TETHER_PROVIDER=replay and "
                        f"TETHER_REPLAY_MODE=record, or use another provider"
                    )
        return None

    def _replayed(self, record: dict, note: str) -> Completion:
        fields = {k: v for k, v in record["completion"].items() if k in _COMPLETION_FIELDS}
        fields["top_logprobs"] = dict(fields.get("top_logprobs") or {})
        recorded = (
            f"replayed recording of {record.get('model') or fields.get('model') or '?'} "
            f"from {record.get('recorded_at', '?')}"
        )
        fields["note"] = join_notes(note or recorded, fields.get("note", ""))
        return Completion(**fields)

    def _append(
        self, request: ModelRequest, key: str, loose: str | None, completion: Completion
    ) -> None:
        day = datetime.now(UTC).date().isoformat()
        record = {
            "key": key,
            "loose_key": loose,
            "recorded_at": day,
            "model": completion.model,
            "provider": completion.provider,
            "purpose": request.purpose,
            "schema": request.schema_name,
            "question": request.question,
            "chunk_ids": list(request.chunk_ids or [p[0] for p in request.passages]),
            "completion": dataclasses.asdict(completion),
            "label": f"recorded with {completion.model} on {day}",
        }
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                _lock_file(f)
                try:
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())
                finally:
                    _unlock_file(f)
            self._index(record, self._load())


def _lock_file(f: Any) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: a single write of one line is the best we do
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _unlock_file(f: Any) -> None:
    try:
        import fcntl
    except ImportError:
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
