"""A lane's thread keeps its Workspace between requests, except after an UpstreamError (a lost
PostgreSQL connection): then it closes it, so the thread's next request opens a new
connection instead of failing on the dead one for as long as the process lives."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("fastapi")

from tether.errors import TetherError, UpstreamError
from tether.server.workers import Lane


class FakeWorkspace:
    """What a lane needs of a Workspace: `close` (counted)."""

    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def _lane() -> tuple[Lane, list[FakeWorkspace]]:
    made: list[FakeWorkspace] = []

    def factory() -> Any:
        made.append(FakeWorkspace())
        return made[-1]

    return Lane("test", factory, size=1), made


def _fail(error: Exception) -> Any:
    def fn(ws: Any) -> None:
        raise error

    return fn


def test_an_upstream_error_closes_the_threads_workspace() -> None:
    lane, made = _lane()
    try:
        cut = UpstreamError("PostgreSQL failed: the connection is closed")
        with pytest.raises(UpstreamError):
            lane.submit(_fail(cut)).result()
        assert [ws.closed for ws in made] == [1]
        assert lane.submit(lambda ws: ws).result() is made[0]  # the same one, reopened lazily
    finally:
        lane.close()


def test_other_errors_keep_the_workspace_open() -> None:
    lane, made = _lane()
    try:
        for error in (TetherError("a bad request"), ValueError("a bug")):
            with pytest.raises(type(error)):
                lane.submit(_fail(error)).result()
        assert [ws.closed for ws in made] == [0]
    finally:
        lane.close()
