"""How to install one of tether's extras (`serve`, `mcp`, `local`, `rerank`, `ray`, ...) from
where the user stands: the one place every "... needs the serve extra" message takes its
command from (`install_hint`).

tether is on no package index, so `pip install 'tether[serve]'` cannot work. The command is
found from how this tether was installed:

- from a source checkout (the package is imported from a folder under a pyproject.toml that
  names the project `tether`: an editable install, or a run inside the clone):
  `pip install -e '.[serve]'` when the current folder is the checkout, else with its path,
  `pip install -e '/path/to/tether[serve]'`;
- from a checkout installed without -e (`pip install .`, which records the folder it came
  from in the install's `direct_url.json`, PEP 610): `pip install '/path/to/tether[serve]'`
  (`'.[serve]'` from that folder), while that folder still holds the checkout;
- else: tether is installed from a clone of its repository, and the clone's command is shown
  (`in the clone, pip install -e '.[serve]'`).

`pip` is written `/path/to/python -m pip` when the `pip` first on PATH is not this
interpreter's (a virtual environment run as `.venv/bin/tether` without being activated), so
the command installs where tether runs.

What it cannot do: it knows no address of the repository (none is recorded), installs nothing
and checks no extra's name; a pipx install is given the pip command (run it with pipx's
interpreter, as written), not `pipx inject`; a checkout is recognised by its pyproject.toml,
whether or not it is a git work tree.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

PROJECT = "tether"


@dataclass(frozen=True)
class Checkout:
    """The source checkout this tether comes from: its root (the folder of its
    pyproject.toml) and whether the install reads the checkout itself (editable)."""

    root: Path
    editable: bool = True


def names_tether(pyproject: Path) -> bool:
    """Whether `pyproject` is a readable pyproject.toml whose project is tether."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    project = data.get("project")
    return isinstance(project, dict) and project.get("name") == PROJECT


def checkout_above(package_dir: Path) -> Path | None:
    """The nearest folder above `package_dir` (the `tether` package's folder) whose
    pyproject.toml names tether, or None (an install in site-packages has none)."""
    for folder in package_dir.resolve().parents:
        if (folder / "pyproject.toml").is_file():
            return folder if names_tether(folder / "pyproject.toml") else None
    return None


def installed_from(direct_url: str | None) -> Checkout | None:
    """The checkout an install names in its `direct_url.json` (PEP 610), when that is a
    local folder that still holds tether's pyproject.toml; else None."""
    if not direct_url:
        return None
    try:
        record = json.loads(direct_url)
    except ValueError:
        return None
    url = urlparse(str(record.get("url", ""))) if isinstance(record, dict) else None
    if url is None or url.scheme != "file":
        return None
    root = Path(unquote(url.path))
    if not names_tether(root / "pyproject.toml"):
        return None
    info = record.get("dir_info")
    return Checkout(root, editable=isinstance(info, dict) and info.get("editable") is True)


def _direct_url() -> str | None:
    try:
        return metadata.distribution(PROJECT).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def find_checkout() -> Checkout | None:
    """The checkout this tether runs from or was installed from (see the module docstring);
    None when neither is known."""
    root = checkout_above(Path(__file__).parent)
    if root is not None:
        return Checkout(root)
    return installed_from(_direct_url())


def pip_command(executable: str = sys.executable, on_path: str | None = None) -> str:
    """`pip` when the pip first on PATH (`on_path`, looked up when None) belongs to the
    interpreter `executable`, else `/path/to/python -m pip`."""
    found = on_path if on_path is not None else shutil.which("pip")
    here = Path(executable).parent
    if found and Path(found).parent.resolve() == here.resolve():
        return "pip"
    return f"{shlex.quote(executable)} -m pip"


def install_command(extras: str, checkout: Checkout | None, *, cwd: Path, pip: str = "pip") -> str:
    """The command that installs `extras` (comma-separated, as pip writes them) for
    `checkout`, said from the folder `cwd`; without a checkout, the clone's command
    introduced as such."""
    if checkout is None:
        return (
            f"tether is installed from a clone of its repository (it is on no package index):"
            f" in the clone, {pip} install -e {shlex.quote(f'.[{extras}]')}"
        )
    where = "." if _same_folder(cwd, checkout.root) else str(checkout.root)
    flag = "-e " if checkout.editable else ""
    return f"{pip} install {flag}{shlex.quote(f'{where}[{extras}]')}"


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def install_hint(extras: str) -> str:
    """The command that installs `extras` where the user stands (see the module
    docstring), for a message such as "tether serve needs the serve extra: {hint}"."""
    try:
        cwd = Path.cwd()
    except OSError:  # the current folder was removed
        cwd = Path("/")
    return install_command(extras, find_checkout(), cwd=cwd, pip=pip_command())
