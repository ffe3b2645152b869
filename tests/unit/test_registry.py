"""Capabilities and the registries: every provider declares what it can do, behaviour follows
the capabilities and not the name (a replay of the local model's recordings picks select mode
and the align+llm judge), one list of names drives the settings, the help and the messages,
and third-party providers and executors come from entry points (a broken one is one line
naming it)."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.answering.pipeline import answer_mode, choose_judge
from tether.catalog import EXECUTORS, PROVIDERS, load_plugin, one_of
from tether.config import Settings, check_provider, settings_from_mapping
from tether.errors import TetherError
from tether.ingest.discover import SUFFIXES
from tether.ingest.executor import FACTORIES, SerialExecutor, build_executor
from tether.ingest.parse.formats import FORMATS
from tether.protocols import capabilities_of
from tether.providers import registry
from tether.providers.anthropic import AnthropicProvider
from tether.providers.extractive import ExtractiveProvider
from tether.providers.factory import make_provider
from tether.providers.local import LocalProvider
from tether.providers.openai import OpenAICompatibleProvider
from tether.providers.registry import BUILT_IN, ProviderSpec, capabilities_for, names, spec
from tether.providers.replay import ReplayProvider
from tether.types import Capabilities, Completion, Message, ModelRequest
from tether.verify.judges import LLMJudge
from tether.verify.learned import AlignmentJudge

RECORDINGS = Path(__file__).resolve().parents[2] / "src/tether/demo/recordings/local-qwen.jsonl"
CLASSES = {
    "openai": OpenAICompatibleProvider,
    "anthropic": AnthropicProvider,
    "local": LocalProvider,
    "extractive": ExtractiveProvider,
}


# -- capabilities -------------------------------------------------------------------------


def test_every_built_in_provider_declares_its_capabilities() -> None:
    assert list(BUILT_IN) == list(PROVIDERS) == ["openai", "anthropic", "local", "extractive",
                                                 "replay"]  # fmt: skip
    for name, cls in CLASSES.items():
        assert isinstance(cls.__dict__["capabilities"], Capabilities), name  # on the class itself
        assert BUILT_IN[name].capabilities is cls.capabilities
    assert isinstance(ReplayProvider.UNKNOWN, Capabilities) and ReplayProvider.UNKNOWN.recorded
    assert BUILT_IN["replay"].capabilities == ReplayProvider.UNKNOWN
    assert all(s.description and s.name == n for n, s in BUILT_IN.items())


class FakeLocal:
    """Stands in for the local model while recording: its name and capabilities, fixed text."""

    name = "local"
    model = "qwen-fake"
    capabilities = LocalProvider.capabilities

    def complete(self, request: ModelRequest) -> Completion:
        text = "Yes" if request.purpose == "judge" else '{"sentences": [1]}'
        return Completion(text=text, provider="local", model=self.model)


def _request(
    purpose: str, question: str = "How long does delivery take?", schema: str = "answer"
) -> ModelRequest:
    return ModelRequest(messages=(Message("user", f"{purpose}: {question}"),), purpose=purpose,
                        question=question if purpose == "answer" else "",
                        schema_name=schema)  # fmt: skip


def test_a_replay_of_local_model_recordings_picks_select_mode_and_the_llm_judge(
    tmp_path: Path,
) -> None:
    """The issue's goal: a replay behaves like the provider it replays, not like its name."""
    path = tmp_path / "local.jsonl"
    recorder = ReplayProvider(path, mode="record", inner=FakeLocal())
    assert capabilities_of(recorder) == LocalProvider.capabilities  # forwards the recorder's
    assert answer_mode("auto", recorder) == "select"
    recorder.complete(_request("answer", schema="evidence"))  # a select-mode answer
    recorder.complete(_request("judge"))  # a second opinion, recorded like any request
    assert {json.loads(line)["provider"] for line in path.read_text().splitlines()} == {"local"}

    replay = make_provider(Settings(provider="replay", recordings=path))
    assert isinstance(replay, ReplayProvider) and replay.name == "replay"
    caps = capabilities_of(replay)
    assert caps == Capabilities(answer_mode="select", judge="align+llm", recorded=True)
    assert answer_mode("auto", replay) == "select"
    judge = choose_judge(None, replay)
    assert isinstance(judge, AlignmentJudge) and isinstance(judge.second, LLMJudge)
    assert judge.second.provider is replay  # the second opinion is replayed too
    assert replay.complete(_request("judge")).text == "Yes"


def test_a_replay_gives_no_second_opinion_it_did_not_record() -> None:
    """The bundled recordings of the local model hold json-mode answers only (recorded with
    the verifier off): the replay answers in the mode it can replay, with the align judge,
    since a second opinion would be a request it cannot replay."""
    replay = ReplayProvider(RECORDINGS)
    assert replay.recorded_providers() == {"local"}
    assert replay.recorded_modes() == {"json"}
    assert capabilities_of(replay) == Capabilities(answer_mode="json", recorded=True)
    judge = choose_judge(None, replay)
    assert isinstance(judge, AlignmentJudge) and judge.second is None


def test_a_replay_of_unknown_or_mixed_recordings_reads_as_a_remote_model(tmp_path: Path) -> None:
    def recording(path: Path, *providers: str) -> ReplayProvider:
        path.write_text("".join(
            json.dumps({"key": f"k{i}", "provider": p, "purpose": "answer",
                        "completion": {"text": "{}", "provider": p}}) + "\n"
            for i, p in enumerate(providers)
        ))  # fmt: skip
        return ReplayProvider(path)

    assert recording(tmp_path / "a.jsonl", "gemini").capabilities == ReplayProvider.UNKNOWN
    assert recording(tmp_path / "b.jsonl", "local", "extractive").capabilities == (
        ReplayProvider.UNKNOWN
    )
    same = recording(tmp_path / "c.jsonl", "openai", "anthropic")  # the same capabilities
    assert same.capabilities == Capabilities(recorded=True)
    assert recording(tmp_path / "d.jsonl", "extractive").capabilities == Capabilities(
        model=False, tool_use=False, recorded=True
    )
    assert ReplayProvider(tmp_path / "none.jsonl").capabilities == ReplayProvider.UNKNOWN


def test_a_provider_that_declares_nothing_reads_as_a_remote_model() -> None:
    class Bare:
        name = "local"  # the name decides nothing

        def complete(self, request: ModelRequest) -> Completion:
            return Completion(text="")

    assert capabilities_of(Bare()) == Capabilities()
    assert answer_mode("auto", Bare()) == "json"


# -- one list of names --------------------------------------------------------------------


def test_the_catalog_drives_the_error_messages_and_the_help() -> None:
    everything = ", ".join(PROVIDERS)
    with pytest.raises(TetherError) as raised:
        check_provider("gemini")
    assert str(raised.value) == f"unknown provider 'gemini'; use {one_of(list(PROVIDERS))}"
    with pytest.raises(TetherError, match=f"use one of: {everything} \\(or leave it unset"):
        settings_from_mapping({"TETHER_PROVIDER": "gemini"})
    with pytest.raises(TetherError, match="use one of: openai, anthropic, local, extractive \\("):
        settings_from_mapping({"TETHER_REPLAY_INNER": "replay"})  # the recorder records others
    with pytest.raises(TetherError, match=f"use one of: {', '.join(EXECUTORS)}$"):
        settings_from_mapping({"TETHER_EXECUTOR": "threads"})
    assert list(FACTORIES) == list(EXECUTORS)

    provider_help = _help("ask", "provider")
    assert provider_help.startswith(f"{one_of(list(PROVIDERS))}, or an installed plugin's name")
    executor_help = _help("ingest", "executor")
    assert all(f"{name}, {what}" in executor_help for name, what in EXECUTORS.items())
    refused = CliRunner().invoke(_app(), ["ingest", ".", "--executor", "threads"])
    assert "'threads' is not process, serial or ray" in refused.output


def _app():
    from tether.cli.main import app

    return app


def _help(command: str, option: str) -> str:
    """The help text of `option` of `command`, as typer declares it."""
    import typer.main

    group = typer.main.get_command(_app())
    (param,) = [p for p in group.commands[command].params if p.name == option]  # type: ignore[attr-defined]
    return str(param.help)


def test_the_agent_message_lists_the_providers_that_use_tools() -> None:
    assert names(tool_use=True) == ["openai", "anthropic", "local", "replay"]
    assert names(model=False) == ["extractive"]


def test_formats_are_one_table() -> None:
    assert list(SUFFIXES) == [".md", ".markdown", ".html", ".htm", ".pdf", ".txt", ".docx", ".rst"]
    assert {SUFFIXES[s] for f in FORMATS.values() for s in f.suffixes} == set(FORMATS)


# -- plugins ------------------------------------------------------------------------------


class PluginProvider:
    name = "mine"
    model = "mine-1"
    capabilities = Capabilities(answer_mode="select", judge="align")

    def __init__(self, model: str | None) -> None:
        self.model = model or self.model

    def complete(self, request: ModelRequest) -> Completion:
        return Completion(text="{}", provider=self.name, model=self.model)


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch):
    """Installs fake entry points: `add(group, name, value)`; a module `tether_fake_plugin`
    holds a good provider spec, an executor factory and an object of the wrong kind."""
    module = types.ModuleType("tether_fake_plugin")
    module.SPEC = ProviderSpec(  # type: ignore[attr-defined]
        "ignored", "a fake model server", lambda build: PluginProvider(build.model),
        PluginProvider.capabilities,
    )  # fmt: skip
    module.EXECUTOR = lambda make_embedder, workers, address: SerialExecutor()  # type: ignore[attr-defined]
    module.WRONG = 42  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tether_fake_plugin", module)
    declared: list[importlib.metadata.EntryPoint] = []

    def entry_points(**selection: str) -> importlib.metadata.EntryPoints:
        return importlib.metadata.EntryPoints(
            ep for ep in declared if ep.group == selection.get("group")
        )

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)

    def add(group: str, name: str, value: str) -> None:
        declared.append(importlib.metadata.EntryPoint(name=name, value=value, group=group))

    return add


def test_a_third_party_provider_is_picked_up_from_its_entry_point(plugins) -> None:
    plugins("tether.providers", "Mine", "tether_fake_plugin:SPEC")
    settings = settings_from_mapping({"TETHER_PROVIDER": "mine", "TETHER_MODEL": "m2"})
    assert settings.provider == "mine" and check_provider("MINE") == "mine"
    provider = make_provider(settings)
    assert isinstance(provider, PluginProvider) and provider.model == "m2"
    assert answer_mode("auto", provider) == "select"
    found = spec("mine")
    assert found.name == "mine" and found.origin == "entry point Mine = tether_fake_plugin:SPEC"
    assert capabilities_for("mine") == PluginProvider.capabilities
    assert names(tool_use=True)[-1] == "mine"
    with pytest.raises(
        TetherError, match="use openai, anthropic, local, extractive, replay or mine"
    ):
        check_provider("gemini")


def test_a_broken_provider_plugin_is_one_line_naming_it(plugins) -> None:
    plugins("tether.providers", "broken", "tether_no_such_module_xyz:SPEC")
    plugins("tether.providers", "wrong", "tether_fake_plugin:WRONG")
    plugins("tether.providers", "openai", "tether_fake_plugin:SPEC")  # cannot replace a built-in
    assert settings_from_mapping({"TETHER_PROVIDER": "broken"}).provider == "broken"  # a name
    with pytest.raises(TetherError) as raised:
        make_provider(Settings(provider="broken"))
    message = str(raised.value)
    assert message == (
        "tether.providers plugin 'broken' (entry point broken = tether_no_such_module_xyz:SPEC)"
        " could not be loaded: ModuleNotFoundError: No module named 'tether_no_such_module_xyz'"
    )
    assert raised.value.__cause__ is None and "\n" not in message
    with pytest.raises(TetherError, match=r"plugin 'wrong' .* is a int, not a tether\.providers"):
        make_provider(Settings(provider="wrong"))
    assert spec("openai") is BUILT_IN["openai"]
    # listings leave a broken plugin out instead of failing
    assert "broken" not in names(tool_use=True) and capabilities_for("broken") is None
    assert registry.provider_names() == (*PROVIDERS, "broken", "wrong")


def test_executor_plugins(plugins, tmp_path: Path) -> None:
    plugins("tether.executors", "inline", "tether_fake_plugin:EXECUTOR")
    plugins("tether.executors", "gone", "tether_no_such_module_xyz:X")
    assert settings_from_mapping({"TETHER_EXECUTOR": "inline"}).executor == "inline"
    assert isinstance(build_executor("inline", None), SerialExecutor)
    with pytest.raises(
        TetherError, match=r"tether\.executors plugin 'gone' .* ModuleNotFoundError"
    ):
        build_executor("gone", None)
    with pytest.raises(TetherError, match="expected one of process, serial, ray, gone, inline"):
        build_executor("threads", None)
    assert load_plugin("tether.executors", "absent") is None
