"""The data-set registry (`training/datasets.toml`, read by `training/registry.py`): every set
has a role per model, the held-out sets are never `train`, and asking for a set in a role it
does not have is refused (how a trainer is kept off held-out data)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "training"))

import registry  # noqa: E402


def test_every_set_exists_and_has_known_roles() -> None:
    sets = registry.load()
    assert sets, "the registry lists the sets"
    for s in sets.values():
        assert s.path.exists(), f"{s.name}: {s.path} is missing"
        assert set(s.roles.values()) <= set(registry.ROLES)


def test_held_out_sets_are_never_trained_on() -> None:
    sets = registry.load()
    for name in ("reader_heldout", "health10"):
        assert sets[name].role("reader") == "heldout"
        assert (sets[name].path / "SHA256SUMS").is_file(), "a held-out set is frozen by checksum"
    trained = {s.name for s in registry.sets_for("reader", "train")}
    assert not trained & {"reader_heldout", "health10", "coldwater", "bundled"}


def test_a_set_asked_for_in_another_role_is_refused() -> None:
    with pytest.raises(PermissionError, match="reader_heldout"):
        registry.require("reader", "reader_heldout", "train")
    assert registry.require("reader", "W1", "train").name == "W1"


def test_digest_changes_with_a_file(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n", encoding="utf-8")
    first = registry.digest(tmp_path)
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n', encoding="utf-8")
    assert registry.digest(tmp_path) != first
