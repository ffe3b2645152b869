"""README.md's figure rows are the ones rendered from bench/results/figures.json
(`python bench/run.py --readme`), and every row names a benchmark the runner knows, result
pages that exist, and its date, commit and load; the runner lists every benchmark script."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import figures  # noqa: E402
from bench.run import BENCHES, listing  # noqa: E402


def test_readme_figures_are_rendered_from_the_results_json() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert figures.block(readme) == figures.render(), (
        "README.md's figures are stale: run python bench/run.py --readme"
    )


def test_a_changed_figure_makes_the_readme_stale(tmp_path: Path) -> None:
    data = json.loads(figures.FIGURES.read_text(encoding="utf-8"))
    data["rows"][0]["figure"] += " (changed)"
    changed = tmp_path / "figures.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text((REPO / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
    assert figures.stale(readme, changed)
    assert figures.update(readme, changed)
    assert not figures.stale(readme, changed)
    assert "(changed)" in readme.read_text(encoding="utf-8")


def test_every_row_names_its_bench_pages_and_provenance() -> None:
    for row in figures.rows():
        assert row["bench"] in BENCHES, row["id"]
        assert row["results"] and all((REPO / p).is_file() for p in row["results"]), row["id"]
        assert all(row[k] for k in ("date", "commit", "load")), row["id"]
        assert "|" not in row["what"] + row["figure"], row["id"]


@pytest.mark.parametrize(
    "folder", ["retrieval", "answers", "judge", "health", "ingest", "serve", "scale"]
)
def test_every_script_of_a_bench_folder_is_listed(folder: str) -> None:
    listed = {b.script for b in BENCHES.values()}
    libraries = {"scale/e5_like.py"}  # imported by benches, not run
    for script in sorted((REPO / "bench" / folder).glob("*.py")):
        name = f"{folder}/{script.name}"
        assert name in listed or name in libraries, f"{name} is not in bench/run.py's BENCHES"
    assert all(b.script in listing() for b in BENCHES.values())


def test_every_experiment_has_its_conclusion() -> None:
    readme = (REPO / "bench" / "experiments" / "README.md").read_text(encoding="utf-8")
    for script in sorted((REPO / "bench" / "experiments").glob("*.py")):
        assert f"`{script.name}`" in readme, f"bench/experiments/README.md lacks {script.name}"
