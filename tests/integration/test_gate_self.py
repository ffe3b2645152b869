"""The support gate calibrated at ingest against the index itself: the rule (`fit_floor`),
the questions it is fitted on, which floor wins, that a public floor is fitted on public
passages only, and that ingest records what was fitted on what."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.answering.gate import floors_for, self_floor_key
from tether.app import Workspace
from tether.config import DEFAULT_PROFILE
from tether.evaluation.calibration import (
    OFFTOPIC_STEP,
    fit_floor,
    offtopic_questions,
    probe_questions,
    self_calibrate,
)
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.text import detect_language
from tether.types import Filters, Hit

DOCS = {
    "public.md": "---\ndoc_id: returns\naccess: public\n---\n# Return window\n\n"
    "You can return most items within 30 days of purchase with the receipt.\n\n"
    "# Refund method\n\nRefunds go back to the card used for the purchase within five days.\n",
    "staff.md": "---\ndoc_id: staff-discounts\n---\n# Employee pricing zebra\n\n"
    "Employees receive a 25 percent discount on tents, stoves and sleeping bags.\n",
}


def test_fit_floor_is_mean_plus_z_sd_capped_by_the_generated_side() -> None:
    off = [0.70, 0.72, 0.74]  # mean 0.72, population sd 0.01633
    floor, low, capped = fit_floor(off, [0.9] * 20, z=2.0, quantile=0.05)
    assert floor == pytest.approx(0.72 + 2 * 0.016330, abs=1e-5) and not capped
    floor, low, capped = fit_floor(off, [0.74] + [0.9] * 19, z=2.0, quantile=0.05)
    assert (floor, low, capped) == (0.74, 0.74, True)  # the generated side's 5th percentile
    floor, _, capped = fit_floor(off, [0.5] * 9, z=2.0, quantile=0.05)  # too few to cap
    assert not capped and floor > 0.75


def test_bundled_offtopic_questions_are_english_and_french() -> None:
    qs = offtopic_questions()
    langs = [detect_language(q) for q in qs]
    assert len(qs) >= 40 and langs.count("en") >= 15 and langs.count("fr") >= 15
    assert not any(q.startswith("#") for q in qs)


def _lexical_store(tmp_path: Path) -> SqliteStore:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    store = SqliteStore(tmp_path / "i.sqlite")
    sync(store, folder)
    return store


class Recording:
    """A retriever that records what it was asked under which filters."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Filters]] = []

    def search(self, query: str, k: int, filters: Filters, method: str) -> list[Hit]:
        self.asked.append((query, filters))
        return []


def test_public_floor_is_fitted_on_public_passages_only(tmp_path: Path) -> None:
    store = _lexical_store(tmp_path)
    assert any(q == "What about Return window?" for q in probe_questions(store.chunks()))
    retriever = Recording()
    found = self_calibrate(store, retriever, DEFAULT_PROFILE)  # type: ignore[arg-type]
    public = [q for q, f in retriever.asked if f.audience == "public"]
    staff = [q for q, f in retriever.asked if f.audience == "staff"]
    assert not any("zebra" in q.lower() or "employee" in q.lower() for q in public)
    assert any("zebra" in q.lower() for q in staff)
    assert {(f.audience, f.method) for f in found.fits} == {
        ("public", "rerank"),
        ("staff", "rerank"),
    }
    rows = found.meta()
    assert set(rows) >= {"gate_self", self_floor_key("rerank", "public")}


class Meta:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def meta_value(self, key: str) -> str | None:
        return self.values.get(key)


def test_the_users_calibration_wins_then_the_audiences_self_fit_then_the_profile() -> None:
    defaults = {"bm25": 5.0, "rerank": 0.784}
    fitted = {"gate_self:rerank:public": "0.76", "gate_self:rerank:staff": "0.77"}
    assert floors_for(Meta(fitted), defaults, "public") == {"bm25": 5.0, "rerank": 0.76}
    assert floors_for(Meta(fitted), defaults, "staff")["rerank"] == 0.77
    users = {**fitted, "gate_floor:rerank": "0.8"}
    assert floors_for(Meta(users), defaults, "public")["rerank"] == 0.8
    assert floors_for(Meta({}), defaults, "public") == defaults


def test_ingest_with_vectors_records_the_self_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    ws = Workspace.open(tmp_path / "i.sqlite", create=True)
    ws.ingest(folder)
    found = ws.self_calibration()
    assert found is not None and found["z"] == DEFAULT_PROFILE.gate_offtopic_z
    fits = {f["audience"]: f for f in found["fits"]}
    assert fits["public"]["offtopic_n"] == len(offtopic_questions()[::OFFTOPIC_STEP])
    assert 0.5 < fits["public"]["floor"] < 1.0
    floors = floors_for(ws.store, DEFAULT_PROFILE.gate_floors, "public")
    assert floors["rerank"] == fits["public"]["floor"]
    ws.close()
    refits: list[int] = []
    monkeypatch.setattr(Workspace, "calibrate_self", lambda self: refits.append(1))
    again = Workspace.open(tmp_path / "i.sqlite")
    again.ingest(folder)  # nothing changed: not fitted again
    assert refits == []
    (folder / "more.md").write_text(
        "---\naccess: public\n---\n# Gift cards\n\nThey never expire.\n"
    )
    again.ingest(folder)
    assert refits == [1]
    again.close()
    lexical = Workspace.open(tmp_path / "lex.sqlite", create=True)
    lexical.ingest(folder, embed=False)
    assert lexical.self_calibration() is None  # BM25 only: the Profile's floor
    lexical.close()
