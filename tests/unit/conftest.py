"""Unit tests load no model: every way tether loads one (an embedder, the local LLM) raises
here, so a test that would wait for a model fails at once and belongs in tests/integration.
They use the fakes of `tests/fakes.py` for the roles they need."""

from __future__ import annotations

import pytest
from model_guard import forbid_models


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_models(monkeypatch.setattr)
