"""The providers tether can build, by name: one `ProviderSpec` each (what it is, how it is
built, its capabilities), the built-in ones in the order of `tether.catalog.PROVIDERS`, then
the third-party ones installed under the entry-point group `tether.providers`.

`make_provider` (`tether.providers.factory`) builds through `spec(name).factory`; the replay
provider reads `capabilities_for(name)` for the provider its recordings name; the agent's
message lists `names(tool_use=True)`. The names themselves are `tether.catalog`'s (the settings
check TETHER_PROVIDER against the same list, below this layer); this module checks, when it
loads, that it builds exactly those.

A plugin's entry point names a `ProviderSpec` (its `name` is the entry point's):

    [project.entry-points."tether.providers"]
    mine = "my_package.tether_plugin:SPEC"

    SPEC = ProviderSpec("mine", "my model server", lambda build: MyProvider(build.model),
                        Capabilities(answer_mode="json", judge="align"))

What it cannot do: a plugin is loaded (its module imported) only when its name is used or a
listing needs its capabilities; one that cannot be loaded is a `TetherError` naming the plugin
and its entry point when its name is used, and is left out of listings. A built-in name cannot
be taken by a plugin. Whether a provider can run here (a key, the local model installed) is
found out when it is built, and whether it answers by its first request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import cast

from tether.catalog import PROVIDER_PLUGINS, PROVIDERS, load_plugin, one_of, provider_names
from tether.config import Settings
from tether.errors import TetherError
from tether.protocols import Provider
from tether.providers.anthropic import AnthropicProvider
from tether.providers.extractive import ExtractiveProvider
from tether.providers.local import LocalModels, LocalProvider
from tether.providers.openai import OpenAICompatibleProvider
from tether.providers.replay import ReplayMode, ReplayProvider
from tether.types import Capabilities


@dataclass(frozen=True)
class Build:
    """What a factory is given: the settings, the model asked for (`--model`, else
    TETHER_MODEL), the process's loaded local models, how the choice is named in a message
    (`said`: "provider 'openai'" or "TETHER_PROVIDER=openai"; `model_from`: where a model is
    set), and `make`, which builds another provider by name the same way (the replay
    provider's recorder)."""

    settings: Settings
    model: str | None
    local_models: LocalModels
    said: str
    model_from: str
    make: Callable[[str], Provider]

    def needs_model(self, example: str) -> TetherError:
        """The error for a provider built without a model name (`example`: a model's name)."""
        return TetherError(f"{self.said} needs {self.model_from} (e.g. {example})")


@dataclass(frozen=True)
class ProviderSpec:
    """One provider: its `name`, what it is (`description`, one line), its `factory` (a
    `Build` → the provider; it raises `TetherError` for a missing setting: a model, a key, a
    file) and its `capabilities` (the class's). `origin` says where a plugin's came from
    ("" for a built-in)."""

    name: str
    description: str
    factory: Callable[[Build], Provider]
    capabilities: Capabilities
    origin: str = ""


def _openai(build: Build) -> Provider:
    if not build.model:
        raise build.needs_model("gpt-4o-mini")
    s = build.settings
    return OpenAICompatibleProvider(
        build.model, base_url=s.base_url, api_key=s.api_key_for("openai"), timeout=s.timeout,
        max_retries=s.max_retries,
    )  # fmt: skip


def _anthropic(build: Build) -> Provider:
    if not build.model:
        raise build.needs_model("claude-haiku-4-5")
    s = build.settings
    return AnthropicProvider(
        build.model, api_key=s.api_key_for("anthropic"), timeout=s.timeout,
        max_retries=s.max_retries, base_url=s.base_url,
    )  # fmt: skip


def _local(build: Build) -> Provider:
    model = build.model
    path = Path(model).expanduser() if model and model.endswith(".gguf") else None
    s = build.settings
    return LocalProvider(
        model_path=path, threads=s.local_threads, cache_dir=s.model_cache,
        models=build.local_models,
    )  # fmt: skip


def _replay(build: Build) -> Provider:
    s = build.settings
    if s.recordings is None:
        raise TetherError(f"{build.said} needs TETHER_RECORDINGS (a .jsonl file)")
    inner = build.make(s.replay_inner or "auto") if s.replay_mode != "replay" else None
    return ReplayProvider(s.recordings, mode=cast(ReplayMode, s.replay_mode), inner=inner)


# name → (factory, capabilities): the code of each name of `tether.catalog.PROVIDERS`
_CODE: dict[str, tuple[Callable[[Build], Provider], Capabilities]] = {
    "openai": (_openai, OpenAICompatibleProvider.capabilities),
    "anthropic": (_anthropic, AnthropicProvider.capabilities),
    "local": (_local, LocalProvider.capabilities),
    "extractive": (lambda build: ExtractiveProvider(), ExtractiveProvider.capabilities),
    "replay": (_replay, ReplayProvider.UNKNOWN),
}
if list(_CODE) != list(PROVIDERS):  # the catalog is the one list of names: no more, no fewer
    raise ImportError(f"the providers built here ({list(_CODE)}) are not tether.catalog's")

BUILT_IN: Mapping[str, ProviderSpec] = MappingProxyType(
    {name: ProviderSpec(name, PROVIDERS[name], *code) for name, code in _CODE.items()}
)
"""The built-in providers, in the order the docs list them."""


def _plugin(name: str) -> ProviderSpec | None:
    """The plugin's spec for `name` (None when no installed package declares it); a
    `TetherError` naming the plugin when it cannot be loaded or is not a `ProviderSpec`."""
    found = load_plugin(PROVIDER_PLUGINS, name)
    if found is None:
        return None
    loaded, origin = found
    if not isinstance(loaded, ProviderSpec):
        raise TetherError(
            f"{PROVIDER_PLUGINS} plugin {name!r} ({origin}) is a {type(loaded).__name__},"
            " not a tether.providers.registry.ProviderSpec"
        )
    return dataclasses.replace(loaded, name=name, origin=origin)


def spec(name: str) -> ProviderSpec:
    """The provider called `name` (any case): a built-in one, else an installed plugin's;
    a `TetherError` for an unknown name (listing every name) or a plugin that cannot load."""
    chosen = name.strip().lower()
    found = BUILT_IN.get(chosen) or _plugin(chosen)
    if found is None:
        raise TetherError(f"unknown provider {name!r}; use {one_of(provider_names())}")
    return found


def capabilities_for(name: str) -> Capabilities | None:
    """The capabilities of the provider called `name`; None for a name no provider has or a
    plugin that cannot be loaded."""
    try:
        return spec(name).capabilities
    except TetherError:
        return None


def names(**wanted: bool) -> list[str]:
    """The providers whose capabilities have the `wanted` values (e.g. `tool_use=True`), in
    the registry's order; a plugin that cannot be loaded is left out."""
    out = []
    for name in provider_names():
        caps = capabilities_for(name)
        if caps is not None and all(getattr(caps, k) == v for k, v in wanted.items()):
            out.append(name)
    return out
