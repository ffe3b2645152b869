"""The held-out labelled claim set (bench/data/verifier_heldout/) loads, resolves on the
collections it was written on and is scored through `tether eval --verifier --claims
--collection`. Its figures are not asserted: the set measures the verifier, it must not tune it
(see bench/results/verifier_heldout.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli.main import app
from tether.errors import TetherError
from tether.evaluation.verifier_eval import load_claims, run_verifier_eval

HELDOUT = Path(__file__).resolve().parents[2] / "bench" / "data" / "verifier_heldout"
OWN = HELDOUT / "claims-own.jsonl"
LARK = HELDOUT / "claims-larkfield.jsonl"
ATTACKS = ("modal", "quantifier", "each_all", "unit", "date_period", "other_version",
           "staff_for_public", "unseen_passage", "paraphrase")  # fmt: skip

runner = CliRunner()


def test_heldout_set_is_large_labelled_and_attacks_the_verifier():
    items = load_claims([OWN, LARK])
    assert len(items) >= 120
    assert len({i["id"] for i in items}) == len(items)
    assert {i["label"] for i in items} == {"supported", "unsupported"}
    kinds = {i["kind"] for i in items}
    assert all(kind in kinds for kind in ATTACKS), set(ATTACKS) - kinds
    assert {i["language"] for i in items} == {"en", "fr"}
    assert {i["audience"] for i in items} == {"public", "staff"}
    for item in items:  # passages by location only: no chunk ID tied to one chunker
        assert not item.get("cite_ids") and not item.get("context_ids"), item["id"]


def test_heldout_set_is_scored_through_the_cli(tmp_path: Path):
    result = runner.invoke(app, [
        "eval", "--verifier", "--judge", "none", "--json", "--claims", str(OWN),
        "--collection", str(HELDOUT / "collection"), "--index", str(tmp_path / "i.sqlite"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["claims"] == len(load_claims([OWN]))
    assert report["supported"] + report["unsupported"] == report["claims"]
    assert sum(k["n"] for k in report["per_kind"].values()) == report["claims"]
    assert all(kind.startswith("heldout:") for kind in report["per_kind"])


def test_claims_on_the_wrong_collection_are_an_error_not_a_score(demo_store):
    items = load_claims([OWN])[:1]
    with pytest.raises(TetherError, match=rf"claim {items[0]['id']}: no passage at"):
        run_verifier_eval(demo_store, items)


def test_claims_only_with_verifier(tmp_path: Path):
    result = runner.invoke(app, ["eval", "--claims", str(OWN)])
    assert result.exit_code == 2 and "only with --verifier" in result.output


def test_larkfield_claims_resolve_and_are_scored(larkfield: Path, tmp_path: Path):
    from tether.evaluation.questions import larkfield_collection
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "lark.sqlite")
    sync(store, larkfield_collection(larkfield, tmp_path / "lark"))  # lexical: enough to resolve
    items = load_claims([LARK])
    result = run_verifier_eval(store, items)
    store.close()
    assert len(result.rows) == len(items)
    assert result.supported + result.unsupported == len(items)
