"""README.md's figure rows, rendered from `bench/results/figures.json`.

Each row of `figures.json` names what is measured, the figure as the README shows it, the
benchmark that measures it (`bench/run.py --list`), the result pages it comes from, and the
date, commit and load those pages name ("unrecorded" where they name none). `render()` gives
the README's table between its two markers; `python bench/run.py --readme` writes it there,
`--readme --check` (and tests/unit/test_readme_figures.py) says whether the README is stale.

What it cannot do: a row's figure is text written when the benchmark was run (or copied from
the result page it names); it does not recompute it from the page, so a page measured again
updates the README only once its row in `figures.json` is updated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "bench" / "results" / "figures.json"
README = ROOT / "README.md"
BEGIN = "<!-- figures: rendered from bench/results/figures.json by `python bench/run.py --readme`; edit that file, not these rows -->"
END = "<!-- figures end -->"


def rows(path: Path = FIGURES) -> list[dict[str, Any]]:
    """The rows of `figures.json`, in README order."""
    return list(json.loads(path.read_text(encoding="utf-8"))["rows"])


def render(path: Path = FIGURES) -> str:
    """The README's figure table, markers included."""
    lines = [BEGIN, "", "| what | figure |", "|---|---|"]
    lines += [f"| {row['what']} | {row['figure']} |" for row in rows(path)]
    return "\n".join([*lines, "", END])


def block(readme: str) -> str | None:
    """The rendered block of a README's text (markers included); None without the markers."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        return None
    return readme[start : end + len(END)]


def stale(readme: Path = README, path: Path = FIGURES) -> bool:
    """Whether the README's figure rows differ from those rendered from `figures.json`."""
    return block(readme.read_text(encoding="utf-8")) != render(path)


def update(readme: Path = README, path: Path = FIGURES) -> bool:
    """Write the rendered rows into the README between its markers; whether it changed."""
    text = readme.read_text(encoding="utf-8")
    old = block(text)
    if old is None:
        raise SystemExit(f"{readme}: the figure markers are missing ({BEGIN[:30]}...)")
    new = render(path)
    if old == new:
        return False
    readme.write_text(text.replace(old, new), encoding="utf-8")
    return True


def main(check: bool = False) -> int:
    """`--readme`: render (or with `check`, report staleness: exit 1 when stale)."""
    if check:
        if stale():
            print(
                "README.md's figures are stale: run python bench/run.py --readme", file=sys.stderr
            )
            return 1
        print("README.md's figures match bench/results/figures.json")
        return 0
    changed = update()
    print("README.md's figures " + ("rendered" if changed else "already match"))
    return 0
