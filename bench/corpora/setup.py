"""Install, copy and ingest the real development corpora (PostgreSQL 15, Python 3.11, SQLite, Git,
flex, gettext, MkDocs, Doxygen and Apache httpd manuals).

`python bench/corpora/setup.py [--root DIR] [NAME ...]`:
1. installs Debian's `postgresql-doc-15` (DocBook HTML), `python3.11-doc` (Sphinx HTML),
   `sqlite3-doc` (hand-written HTML from SQLite's own doc generator), `git-doc` (AsciiDoc
   HTML), `flex-doc` (makeinfo HTML), `gettext-doc` (texi2html HTML), `mkdocs-doc` (MkDocs
   HTML), `doxygen-doc` (Doxygen HTML) and `apache2-doc` (the httpd 2.4 manual, one folder per language) with apt-get when their HTML folder is missing
   (needs root; `--no-install` skips it);
2. copies the fixed list of pages in `bench/corpora/NAME/pages.txt` into `ROOT/NAME/` (default
   root `/work/corpora`, or `TETHER_CORPORA`), keeping their relative paths (so the document IDs
   are `sql-copy`, `library/itertools`, `lang_upsert`, `git-rebase`...), removing any other file there and leaving unchanged
   files untouched;
3. ingests the folder with embeddings (`tether ingest ROOT/NAME --default-access public`), into
   `ROOT/NAME/.tether/index.sqlite`: the index stays outside the repository, so a second run
   re-embeds nothing that did not change. The seconds it took are written to
   `ROOT/NAME/ingest.json` ("first": the last ingest that wrote chunks, "last": this one). `--rebuild` starts the index afresh.

The manuals are not committed (Debian ships them); the page lists and the questions
(`bench/corpora/NAME/questions.jsonl`) are. It cannot fetch the manuals without apt access, and
the page list names files of these exact Debian packages (15.x, 3.11.x, SQLite 3.40.x,
Git 2.39.x, flex 2.6.4, gettext 0.21, MkDocs 1.4.2, Doxygen 1.9.4): another release may lack a page, which is reported as an error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# ingest times measured here are of embedding, never of vectors kept by an earlier run
os.environ.setdefault("TETHER_VECTOR_CACHE", "off")

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPORA = {
    "postgresql": ("postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),
    "python": ("python3.11-doc", Path("/usr/share/doc/python3.11/html")),
    "sqlite": ("sqlite3-doc", Path("/usr/share/doc/sqlite3")),
    "git": ("git-doc", Path("/usr/share/doc/git-doc")),
    "flex": ("flex-doc", Path("/usr/share/doc/flex-doc/html")),
    "gettext": ("gettext-doc", Path("/usr/share/doc/gettext")),
    "mkdocs": ("mkdocs-doc", Path("/usr/share/doc/mkdocs/html")),
    "doxygen": ("doxygen-doc", Path("/usr/share/doc/doxygen/html")),
    "apache": ("apache2-doc", Path("/usr/share/doc/apache2-doc/manual")),
}


def default_root() -> Path:
    """Where the corpora are copied: TETHER_CORPORA, else /work/corpora."""
    return Path(os.environ.get("TETHER_CORPORA", "/work/corpora"))


def pages(name: str) -> list[str]:
    """The fixed page list of one corpus (comments and blank lines skipped)."""
    lines = (HERE / name / "pages.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def install(names: list[str]) -> None:
    """apt-get install the Debian packages whose HTML folder is missing."""
    missing = [CORPORA[n][0] for n in names if not CORPORA[n][1].is_dir()]
    if missing:
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True
        )


def copy(name: str, target: Path) -> int:
    """Copy the listed pages into target (only those that changed); returns how many changed."""
    source = CORPORA[name][1]
    wanted = pages(name)
    changed = 0
    for rel in wanted:
        src, dst = source / rel, target / rel
        if not src.is_file():
            raise SystemExit(f"error: {src} is missing (is {CORPORA[name][0]} installed?)")
        if dst.is_file() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        changed += 1
    keep = {target / rel for rel in wanted}
    for path in target.rglob("*.html"):
        if path not in keep and ".tether" not in path.parts:
            path.unlink()
            changed += 1
    return changed


def ingest(target: Path, rebuild: bool) -> dict:
    """Ingest target with embeddings through the tether command; returns what ingest.json holds."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [
        sys.executable,
        "-m",
        "tether",
        "--quiet",
        "ingest",
        str(target),
        "--default-access",
        "public",
        "--json",
    ]
    if rebuild:
        command.append("--rebuild")
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"error: ingest of {target} failed: {done.stderr.strip()[-500:]}")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {"output": done.stdout[-2000:]}
    record = {
        "seconds": round(seconds, 1),
        "rebuild": rebuild,
        "load_average": round(os.getloadavg()[0], 1),
        "chunks_written": report.get("chunks_written"),
        "report": report,
    }
    path = target / "ingest.json"
    kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if record["chunks_written"] or "first" not in kept:  # an unchanged re-ingest keeps the first
        kept["first"] = record
    kept["last"] = {k: v for k, v in record.items() if k != "report"}
    path.write_text(json.dumps(kept, indent=1), encoding="utf-8")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"corpora (default: all of {', '.join(CORPORA)})")
    parser.add_argument("--root", type=Path, default=default_root())
    parser.add_argument("--no-install", action="store_true")
    parser.add_argument("--no-ingest", action="store_true")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    args.names = args.names or list(CORPORA)
    unknown = sorted(set(args.names) - set(CORPORA))
    if unknown:
        parser.error(f"unknown corpus {', '.join(unknown)} (known: {', '.join(CORPORA)})")
    if not args.no_install:
        install(args.names)
    for name in args.names:
        target = args.root / name
        changed = copy(name, target)
        print(f"{name}: {len(pages(name))} pages in {target} ({changed} copied or removed)")
        if not args.no_ingest:
            record = ingest(target, args.rebuild)
            print(f"{name}: ingested in {record['seconds']} s")


if __name__ == "__main__":
    main()
