"""The learned models' file format (`tether.linear`): a file records its format and a hash of
its feature names, and a reader refuses a file of another format, a hash that does not match,
or a model fitted on other features than the code computes (a renamed feature used to be read
silently as its training mean)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.linear import FORMAT, LinearModel, feature_hash, read_model


def _model() -> LinearModel:
    return LinearModel(("a", "b"), (0.0, 1.0), (1.0, 2.0), (0.5, -0.5), 0.1, 0.5, {"n": 3})


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_round_trip_records_format_and_hash(tmp_path: Path) -> None:
    data = _model().to_json()
    assert data["format"] == FORMAT and data["feature_hash"] == feature_hash(("a", "b"))
    back = read_model(_write(tmp_path, data), "m", "rebuild", ("b", "a"))
    assert back.features == ("a", "b") and back.weights == (0.5, -0.5)


def test_a_renamed_feature_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, _model().to_json())
    with pytest.raises(TetherError, match=r"not in the file: c.*not computed here: b"):
        read_model(path, "m", "rebuild", ("a", "c"))


def test_a_hash_or_format_that_does_not_match_is_refused(tmp_path: Path) -> None:
    data = _model().to_json()
    data["features"] = ["a", "x"]
    with pytest.raises(TetherError, match="feature_hash"):
        read_model(_write(tmp_path, data), "m", "rebuild")
    data = _model().to_json()
    data["format"] = FORMAT + 1
    with pytest.raises(TetherError, match="format"):
        read_model(_write(tmp_path, data), "m", "rebuild")


def test_the_shipped_models_match_their_code() -> None:
    from tether.retrieval.rerank import load_order_model
    from tether.verify.learned import load_model

    assert load_model().features and load_order_model().features
