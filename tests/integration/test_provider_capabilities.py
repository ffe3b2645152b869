"""The live providers, built as `make_provider` builds them (their SDK clients made, nothing
loaded or sent): each keeps the answer mode and judge it had when behaviour went by name (the
SDKs take a second or two to import, so this is not a unit test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.answering.pipeline import answer_mode, choose_judge
from tether.config import Settings
from tether.protocols import capabilities_of
from tether.providers.factory import make_provider
from tether.verify.learned import AlignmentJudge


def _live(name: str, tmp_path: Path):
    settings = Settings(model="m", base_url="http://127.0.0.1:9/v1", api_key="k",
                        anthropic_api_key="k", model_cache=tmp_path)  # fmt: skip
    return make_provider(settings, name=name)


@pytest.mark.parametrize(
    "name,mode,judge",
    [("local", "select", "align+llm"), ("extractive", "json", "align"),
     ("openai", "json", "align"), ("anthropic", "json", "align")],
)  # fmt: skip
def test_live_providers_keep_their_mode_and_judge(
    name: str, mode: str, judge: str, tmp_path: Path
) -> None:
    provider = _live(name, tmp_path)  # built, nothing loaded or sent
    assert answer_mode("auto", provider) == mode
    chosen = choose_judge(None, provider)
    assert isinstance(chosen, AlignmentJudge)
    assert (chosen.second is not None) == (judge == "align+llm")
    assert capabilities_of(provider).model == (name != "extractive")
    assert capabilities_of(provider).tool_use == (name != "extractive")
