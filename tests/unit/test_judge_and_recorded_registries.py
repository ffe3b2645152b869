"""Registries, not if-chains (issue 45): judges are chosen by their `JudgeSpec` (the CLI's
choices, its --judge help and the unknown-name message come from the registry, in the order
they always had), `recorded` is a registered provider (no name is special-cased in the CLI),
and the loaded local models live in the registry the caller passes (none at module level)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer

from tether.answering import judging
from tether.answering.pipeline import make_judge
from tether.catalog import BUNDLED_PROVIDERS, PROVIDERS, one_of
from tether.cli.app import provider_option
from tether.config import Settings, check_provider, settings_from_mapping
from tether.errors import TetherError
from tether.evaluation.answer_eval import RECORDED_OPTIONS
from tether.protocols import capabilities_of
from tether.providers import factory
from tether.providers.bundled import bundled_recordings
from tether.providers.local import LocalModels, LocalProvider
from tether.providers.registry import BUILT_IN, BUNDLED, names, spec
from tether.providers.replay import ReplayProvider

# -- judges -------------------------------------------------------------------------------


def test_the_judges_are_the_registry_in_their_order() -> None:
    assert judging.JUDGES == ("align", "align+llm", "reader", "words", "embedding", "llm", "none")
    assert all(s.name == n for n, s in judging.JUDGE_SPECS.items())
    with pytest.raises(TetherError) as raised:
        make_judge("oracle", None)
    assert str(raised.value) == (
        "unknown judge 'oracle': align, align+llm, reader, words, embedding, llm, none"
    )


def test_a_judge_is_built_by_its_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model loads here: the alignment judge's class is swapped for a recorder."""
    built: list[dict[str, Any]] = []

    def alignment(**options: Any) -> str:
        built.append(options)
        return "A"

    monkeypatch.setattr(judging, "_alignment", alignment)
    monkeypatch.setattr(judging, "shipped_reader", lambda: "R")
    assert make_judge("align", None) == "A" and built[-1] == {"reader": "R", "across_only": True}
    assert make_judge("words", None) == "A" and built[-1] == {}
    assert make_judge("align", None, reader=False) == "A" and built[-1]["reader"] is None
    assert make_judge("none", None) is None and make_judge("embedding", None) is None
    failures = {
        ("reader", False): "the reader judge needs tether's reader, which TETHER_READER=off"
        " turns off",
        ("llm", True): "the llm judge needs a language model",
        ("align+llm", True): "the align+llm judge needs a language model",
    }
    for (name, reader), message in failures.items():
        with pytest.raises(TetherError) as raised:
            make_judge(name, None, reader=reader)
        assert str(raised.value) == message


def test_the_cli_reads_the_judges_from_the_registry() -> None:
    import typer.main

    from tether.cli.main import app

    group = typer.main.get_command(app)
    (judge,) = [p for p in group.commands["eval"].params if p.name == "judge"]  # type: ignore[attr-defined]
    assert judge.help == (
        "With --verifier: align (the learned alignment judge, the default; the reader"
        " reads claims in another language than their passages), align+llm (the local model as"
        " a second opinion on uncertain claims), reader (the reader on every claim), words (the"
        " alignment judge, never the reader), embedding, llm (the local model on every claim),"
        " or none (the rules alone)."
    )


# -- the recorded provider ----------------------------------------------------------------


def test_recorded_is_a_registered_provider_the_listings_leave_out() -> None:
    assert list(BUNDLED) == list(BUNDLED_PROVIDERS) == ["recorded"]
    assert "recorded" not in BUILT_IN and "recorded" not in names()
    assert spec("Recorded") is BUNDLED["recorded"]
    assert check_provider("recorded") == "recorded" and provider_option("recorded") == "recorded"
    with pytest.raises(TetherError) as raised:
        check_provider("x")
    assert str(raised.value) == f"unknown provider 'x'; use {one_of(list(PROVIDERS))}"
    with pytest.raises(typer.BadParameter):
        provider_option("x")
    with pytest.raises(TetherError, match="TETHER_PROVIDER='recorded' is not a known provider"):
        settings_from_mapping({"TETHER_PROVIDER": "recorded"})  # as before: a command line's


def test_the_recorded_provider_replays_the_bundled_file_with_its_options() -> None:
    provider = factory.make_provider(Settings(), name="recorded")
    assert isinstance(provider, ReplayProvider) and provider.mode == "replay"
    assert provider.path == bundled_recordings() and provider.path.is_file()
    assert provider.recorded_options == RECORDED_OPTIONS
    assert provider.recorded_options is not RECORDED_OPTIONS  # a copy: the module's stays
    assert capabilities_of(provider).recorded


def test_eval_answers_asks_with_the_options_a_replay_knows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tether eval --answers`: the options come from the provider, not from its name."""
    from tether.cli import answers
    from tether.evaluation import answer_eval

    seen: dict[str, Any] = {}
    monkeypatch.setattr(answer_eval, "run_answer_eval", lambda qs, ask, **kw: seen.update(kw))
    question = SimpleNamespace(question="How long to return?", as_of=None, audience="public")

    def run(provider: Any) -> dict[str, Any]:
        ws = SimpleNamespace(make_provider=lambda name, model: provider,
                             use_provider=lambda p: None, index=Path("i.sqlite"))  # fmt: skip
        answers.run_answers(ws, [question], questions_file="q", provider="anything", model=None,  # type: ignore[arg-type]
                            method="bm25", k=3, audience=None, quiet=True)  # fmt: skip
        return seen["options"]

    recorded = factory.make_provider(Settings(), name="recorded")
    assert run(recorded) == RECORDED_OPTIONS
    plain = ReplayProvider(bundled_recordings())  # the same file, options not known
    assert run(plain) == {"method": "bm25", "k": 3}


# -- one local-model registry -------------------------------------------------------------


def test_make_provider_keeps_no_local_models_of_its_own(tmp_path: Path) -> None:
    assert not [v for v in vars(factory).values() if isinstance(v, LocalModels)]
    mine = LocalModels()
    settings = Settings(provider="local", model=str(tmp_path / "m.gguf"))
    local = factory.make_provider(settings, local_models=mine)
    assert isinstance(local, LocalProvider) and local._models is mine
    first = factory.make_provider(settings)
    second = factory.make_provider(settings)
    assert isinstance(first, LocalProvider) and isinstance(second, LocalProvider)
    assert first._models is not second._models  # no process-wide registry here
    recorder = factory.make_provider(
        Settings(provider="replay", recordings=tmp_path / "r.jsonl", replay_mode="record",
                 replay_inner="local", model=str(tmp_path / "m.gguf")),
        local_models=mine,
    )  # fmt: skip
    assert isinstance(recorder, ReplayProvider) and recorder.inner._models is mine  # type: ignore[union-attr]
