"""`Workspace.open`, the one way in: where it finds the index, when it builds the demo, how a
provider choice applies, and that the faces construct no Workspace of their own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tether.app import Workspace, index_found, locate_index, today
from tether.config import Settings
from tether.errors import TetherError
from tether.places import DEFAULT_INDEX, DEMO_INDEX

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"


def test_no_face_constructs_a_workspace_of_its_own():
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        if path.relative_to(SRC).parts[0] not in ("app", "app.py")  # the Workspace's own
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bWorkspace\(", line) and "class Workspace" not in line
    ]
    assert found == []


def test_the_index_is_found_here_or_in_a_parent_folder(clean_env: Path):
    with pytest.raises(TetherError, match="no index found here or in a parent folder"):
        locate_index()
    assert not index_found()
    (clean_env / DEFAULT_INDEX).parent.mkdir()
    (clean_env / DEFAULT_INDEX).write_bytes(b"")
    below = clean_env / "a" / "b"
    below.mkdir(parents=True)
    import os

    os.chdir(below)
    assert locate_index().resolve() == (clean_env / DEFAULT_INDEX).resolve()
    assert index_found()
    assert locate_index("other.sqlite") == Path("other.sqlite")  # named wins
    assert locate_index(demo=True) == DEMO_INDEX


def test_a_named_index_and_a_setting_win_over_the_search(clean_env: Path):
    chosen = Settings(index=clean_env / "named.sqlite")
    assert locate_index(settings=chosen) == clean_env / "named.sqlite"
    assert locate_index(clean_env / "given.sqlite", settings=chosen) == clean_env / "given.sqlite"


def test_a_server_store_wins_unless_the_demo_is_asked_for(clean_env: Path):
    url = "postgresql://u@127.0.0.1:1/db?collection=c"
    ws = Workspace.open(settings=Settings(store=url))
    assert ws.location == url and not ws.is_demo  # nothing is opened yet: no connection made
    assert Workspace.open(store="", index="x.sqlite", settings=Settings(store=url)).location == (
        Path("x.sqlite")
    )  # "" names no server store, whatever the settings say


def test_a_missing_index_is_an_error_when_read_and_created_when_written(clean_env: Path):
    with pytest.raises(TetherError, match="no index found"):
        Workspace.open()
    ws = Workspace.open(clean_env / "new.sqlite")
    with pytest.raises(TetherError):
        ws.store  # noqa: B018
    made = Workspace.open(clean_env / "new.sqlite", create=True)
    assert made.store.documents() == []
    made.close()


def test_a_provider_choice_applies_on_first_use(clean_env: Path):
    ws = Workspace.open(clean_env / "x.sqlite", create=True, provider="extractive")
    assert ws._provider is None  # nothing built yet
    assert ws.provider.name == "extractive"
    with pytest.raises(TetherError, match="unknown provider"):
        Workspace.open(clean_env / "x.sqlite", create=True, provider="nonesuch").provider  # noqa: B018


def test_today_is_the_one_default_date():
    from datetime import date

    from tether.app import as_of_value

    assert as_of_value("today") == today() == date.today()


@pytest.mark.slow
def test_the_demo_is_built_when_missing_and_read_after(clean_env: Path):
    reports: list[Path] = []
    ws = Workspace.open(demo=True, on_demo=lambda report, path: reports.append(path))
    assert ws.is_demo and reports == [DEMO_INDEX]
    assert ws.documents("public")
    ws.close()
    again = Workspace.open(demo=True, on_demo=lambda report, path: reports.append(path))
    assert again.is_demo and len(reports) == 1  # found, not built again
    again.close()
