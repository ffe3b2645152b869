"""Whether a result page names its run (commit, date, load), and the stamp for pages written
before the harness recorded it.

- `names_run(text)`: whether one of a page's first lines names a commit (a hash), a date and
  the load average; `harness.run_line` writes such a line on every page it renders.
- `pages(folder)`: the result pages of `bench/results/` (Markdown opening with a `# ` title;
  the hand-kept fragments that other pages take in, `*_notes.md`, open with `## `).
- `python bench/provenance.py [--check]`: stamps every page that names no run with a line
  taken from git history (the last commit that changed the page, skipping the commits that
  only moved the lab, "The lab (issue 45"), with the load the page states, else "load not
  recorded"; and writes a JSON sidecar beside each page that has none, its figures the page's
  tables and numbered sentences copied verbatim. `--check` only lists the pages that name no
  run (exit 1 when there are some).

What it cannot do: for a stamped page, git says when the page was last committed, not when it
was measured (a page committed days after its run names that later commit); the load is the
first phrase of the page that states one, read as written, not checked.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
MOVE = "The lab (issue 45"  # commits that only moved bench/ and rewrote paths in its pages
HEAD_LINES = 6  # a page names its run within its first lines

COMMIT = re.compile(r"\bat commit [0-9a-f]{7,40}(-dirty)?\b")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
LOAD = re.compile(r"\bload\b", re.IGNORECASE)
_PHRASE = r"(?:(?!\.\s|;| \(|\)|: [a-z]|, i\.e\.|, so )[^\n])"
STATED_LOAD = re.compile(rf"load averages?\b(?: \([^)]*\))?{_PHRASE}*?\d{_PHRASE}*", re.IGNORECASE)
PER_RUN = re.compile(r"load averages?\b[^.\n]*?recorded per (\w+)", re.IGNORECASE)
TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def names_run(text: str) -> bool:
    """Whether one of the first lines of `text` names a commit, a date and the load."""
    head = text.split("\n")[:HEAD_LINES]
    return any(COMMIT.search(x) and DATE.search(x) and LOAD.search(x) for x in head)


def pages(folder: Path = RESULTS) -> list[Path]:
    """The result pages of `folder`: its Markdown files that open with a `# ` title."""
    return [
        p for p in sorted(folder.glob("*.md")) if p.read_text(encoding="utf-8").startswith("# ")
    ]


def measured_at(page: Path) -> tuple[str, str]:
    """The short hash and date of the last commit that changed `page`, the lab's move left
    out; ("unrecorded", "unrecorded") when git names none."""
    if not page.resolve().is_relative_to(ROOT):
        return "unrecorded", "unrecorded"
    log = subprocess.run(
        ["git", "log", "--format=%h %cs %s", "--", str(page.resolve().relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    for line in log.splitlines():
        sha, day, subject = line.split(" ", 2)
        if not subject.startswith(MOVE):
            return sha, day
    return "unrecorded", "unrecorded"


def stated_load(text: str) -> str:
    """The first phrase of `text`'s prose that states a load average, as written (wrapped
    lines joined); "load not recorded" when it states none."""
    prose = "\n".join(
        " ".join(x.strip() for x in block.split("\n") if not x.startswith("|"))
        for block in text.split("\n\n")
    )
    found = STATED_LOAD.search(prose)
    if found:
        return found.group(0).strip(" ,:")
    per = PER_RUN.search(prose)
    return f"load average recorded per {per.group(1)} in the page" if per else "load not recorded"


def stamp_line(sha: str, day: str, load: str) -> str:
    """The line a page written before the harness gets under its title."""
    load = load[:1].lower() + load[1:]
    return (
        f"Measured at commit {sha} on {day} (from git history: the last commit that changed"
        f" this page); {load}."
    )


def stamp(page: Path) -> bool:
    """Put the stamp under `page`'s title unless it names its run; whether it changed."""
    text = page.read_text(encoding="utf-8")
    if names_run(text):
        return False
    sha, day = measured_at(page)
    title, _, rest = text.partition("\n")
    page.write_text(f"{title}\n\n{stamp_line(sha, day, stated_load(text))}\n{rest}", "utf-8")
    return True


def page_figures(text: str) -> dict[str, Any]:
    """What a page states, verbatim: its tables (under the heading they follow: columns and
    rows of cells) and its prose lines that hold a number."""
    tables: list[dict[str, Any]] = []
    stated: list[str] = []
    heading = ""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("# ").strip()
        elif line.startswith("|") and i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]):
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(cells(lines[j]))
                j += 1
            tables.append({"under": heading, "columns": cells(line), "rows": rows})
            i = j
            continue
        elif line.strip() and re.search(r"\d", line):
            stated.append(line)
        i += 1
    return {"tables": tables, "stated": stated}


def cells(row: str) -> list[str]:
    """The cells of one Markdown table row, stripped (`\\|` kept inside a cell)."""
    parts = re.split(r"(?<!\\)\|", row.strip())
    return [c.strip() for c in parts[1:-1]]


def sidecar(page: Path) -> dict[str, Any]:
    """The JSON record of a page written before the harness: its run as git and the page
    name it, and its figures copied from the page."""
    text = page.read_text(encoding="utf-8")
    sha, day = measured_at(page)
    return {
        "bench": page.stem,
        "date": day,
        "commit": sha,
        "machine": "not recorded (see the page)",
        "load": stated_load(text),
        "source": (
            f"written on issue 45 from {page.name} as committed: date and commit from git"
            " history, figures copied verbatim from the page; nothing rerun"
        ),
        "figures": page_figures(text),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list pages naming no run")
    parser.add_argument("--folder", type=Path, default=RESULTS)
    opts = parser.parse_args(argv)
    bare = [p for p in pages(opts.folder) if not names_run(p.read_text(encoding="utf-8"))]
    if opts.check:
        for p in bare:
            print(f"{p.name}: names no commit, date and load", file=sys.stderr)
        return 1 if bare else 0
    for p in pages(opts.folder):
        if not p.with_suffix(".json").exists():
            data = json.dumps(sidecar(p), indent=1, ensure_ascii=False)
            p.with_suffix(".json").write_text(data + "\n", encoding="utf-8")
            print(f"{p.with_suffix('.json').name}: written from the page")
        if stamp(p):
            print(f"{p.name}: stamped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
