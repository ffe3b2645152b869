"""The command that installs an extra (`tether.extras`): tether is on no package index, so
every "needs the ... extra" message names the command that works from where the user stands
(issue 47: `pip install 'tether[serve]'` could not work)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tether import extras
from tether.extras import (
    Checkout,
    checkout_above,
    install_command,
    install_hint,
    installed_from,
    pip_command,
)

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = '[project]\nname = "{}"\nversion = "0"\n'


def _checkout(at: Path, name: str = "tether") -> Path:
    (at / "src" / "tether").mkdir(parents=True)
    (at / "pyproject.toml").write_text(PYPROJECT.format(name))
    return at


def test_a_checkout_is_the_folder_above_the_package_whose_pyproject_names_tether(
    tmp_path: Path,
) -> None:
    clone = _checkout(tmp_path / "clone")
    assert checkout_above(clone / "src" / "tether") == clone.resolve()
    other = _checkout(tmp_path / "other", name="something-else")
    assert checkout_above(other / "src" / "tether") is None
    bare = tmp_path / "site-packages" / "tether"
    bare.mkdir(parents=True)
    assert checkout_above(bare) is None


def test_an_install_from_a_folder_names_that_folder_while_it_holds_the_checkout(
    tmp_path: Path,
) -> None:
    clone = _checkout(tmp_path / "my clone")
    url = clone.as_uri()  # file:///.../my%20clone
    assert installed_from(json.dumps({"url": url, "dir_info": {}})) == Checkout(clone, False)
    editable = json.dumps({"url": url, "dir_info": {"editable": True}})
    assert installed_from(editable) == Checkout(clone, True)
    for record in ("", "not json", json.dumps({"url": "https://example.org/t.tar.gz"}),
                   json.dumps({"url": (tmp_path / "gone").as_uri(), "dir_info": {}})):  # fmt: skip
        assert installed_from(record) is None, record


def test_the_command_from_the_checkout_elsewhere_and_without_one(tmp_path: Path) -> None:
    clone = _checkout(tmp_path / "clone")
    here = Checkout(clone)
    assert install_command("serve", here, cwd=clone) == "pip install -e '.[serve]'"
    away = install_command("serve", here, cwd=tmp_path)
    assert away == f"pip install -e '{clone}[serve]'"
    built = install_command("mcp", Checkout(clone, editable=False), cwd=tmp_path)
    assert built == f"pip install '{clone}[mcp]'"
    unknown = install_command("local", None, cwd=tmp_path)
    assert "installed from a clone" in unknown and "pip install -e '.[local]'" in unknown
    for said in (away, built, unknown):
        assert "tether[" not in said  # never the package-index form that cannot work


def test_pip_is_this_interpreters_or_spelled_through_it(tmp_path: Path) -> None:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    python = str(venv / "python")
    assert pip_command(python, on_path=str(venv / "pip")) == "pip"
    assert pip_command(python, on_path="/usr/bin/pip") == f"{python} -m pip"
    assert pip_command(python, on_path="") == f"{python} -m pip"


def test_this_checkout_is_found_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite runs from a clone: the hint is the checkout's command."""
    found = extras.find_checkout()
    assert found is not None and found.root == ROOT
    monkeypatch.chdir(ROOT)
    flag = "-e " if found.editable else ""  # `make test` installs it editable
    assert install_hint("serve").endswith(f"install {flag}'.[serve]'")


def test_no_message_gives_the_package_index_form() -> None:
    """Every hint goes through `install_hint`: no source file spells `pip install
    'tether[...]'` (the module that explains why it cannot work aside)."""
    pattern = re.compile(r"""pip install ['"]?tether\[""")
    found = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "src" / "tether").rglob("*.py")
        if path.name != "extras.py" and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert not found, found
