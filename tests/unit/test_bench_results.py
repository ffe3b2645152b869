"""Every result page of bench/results/ names the run it comes from (a commit, a date and the
load average, in its first lines), and has its JSON beside it; the pages the harness renders
name their run the way the check reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import provenance  # noqa: E402
from bench.harness import (  # noqa: E402
    read_figures,
    read_record,
    render_page,
    sidecar_path,
    write_result,
)

PAGES = provenance.pages()


def test_the_results_folder_has_pages() -> None:
    assert len(PAGES) > 30


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_result_page_names_its_commit_date_and_load(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert provenance.names_run(text), (
        f"{page.name} names no commit, date and load in its first lines:"
        " write it with bench.harness.write_result (or stamp it: python bench/provenance.py)"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_result_page_has_its_json(page: Path) -> None:
    sidecar = page.with_suffix(".json")
    assert sidecar.is_file(), f"{page.name} has no {sidecar.name}"
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    if isinstance(record, dict) and "bench" in record:  # the harness's record
        assert record["commit"] and record["date"] and record["load"], sidecar.name
        assert "figures" in record, sidecar.name


def test_a_page_without_its_run_fails_the_check() -> None:
    bare = "# Ingest\n\nRun on 2026-12-01, linux, lexical index only.\n\n| a | b |\n|---|---|\n"
    assert not provenance.names_run(bare)
    assert not provenance.names_run("# X\n\nload average 1.3 at commit abc1234.\n")  # no date
    assert not provenance.names_run("# X\n\n2026-12-01, load average 1.3.\n")  # no commit
    stamped = provenance.stamp_line("abc1234", "2026-12-01", "load not recorded")
    assert provenance.names_run(f"# Ingest\n\n{stamped}\n")


def test_a_page_written_by_the_harness_names_its_run(tmp_path: Path) -> None:
    out = write_result(
        "probe", {"n": 3}, lambda r: f"# Probe\n\n{r['figures']['n']} rows\n", folder=tmp_path
    )
    page = (tmp_path / "probe.md").read_text(encoding="utf-8")
    record = json.loads(out.read_text(encoding="utf-8"))
    assert page.startswith("# Probe\n\nRun ") and "3 rows" in page
    assert provenance.names_run(page) == (record["commit"] != "unrecorded")
    assert render_page(record, lambda r: "# Probe\n\n3 rows\n") == page


def test_the_stated_load_is_read_from_the_page() -> None:
    text = (
        "# X\n\nRun on 2026-12-01, 2 cores (load average 1.3 at the start: read as\npessimistic).\n"
    )
    assert provenance.stated_load(text) == "load average 1.3 at the start"
    assert provenance.stated_load("# X\n\n| load | 3 |\n|---|---|\n") == "load not recorded"


def test_a_json_kept_by_hand_is_neither_overwritten_nor_misread(tmp_path: Path) -> None:
    page = tmp_path / "serve_load.md"
    assert sidecar_path(page) == tmp_path / "serve_load.json"  # none yet
    (tmp_path / "serve_load.json").write_text('[{"at": "2026-12-02"}]', encoding="utf-8")
    assert sidecar_path(page) == tmp_path / "serve_load.run.json"
    write_result("serve_load", {"n": 1}, lambda r: "# S\n", folder=tmp_path / "runs")
    assert sidecar_path(tmp_path / "runs" / "serve_load.md").name == "serve_load.json"
    assert read_figures(tmp_path / "runs" / "serve_load.json") == {"n": 1}
    assert read_figures(tmp_path / "serve_load.json") == [{"at": "2026-12-02"}]
    old = read_record(tmp_path / "serve_load.json")  # outside git: nothing to date it by
    assert old["commit"] == "unrecorded" and old["figures"] == [{"at": "2026-12-02"}]
