"""What a provider's name stands for, below the code that builds it: the `ProviderSpec` each
name has (what it is, how it is built, its capabilities), the `Build` a factory is given, the
capabilities of each built-in name (`BUILT_IN_CAPABILITIES`) and the lookups that need no
factory: `plugin_spec` (an installed plugin's spec), `capabilities_for(name)` and
`names(**wanted)`.

It sits under both `tether.providers.registry` (which gives each built-in name its factory)
and `tether.providers.replay` (whose replay takes the capabilities of the provider its
recordings name), so neither imports the other.

What it cannot do: it builds no provider (`tether.providers.registry.spec(name).factory`
does); a plugin is loaded (its module imported) only when its name is looked up; one that
cannot be loaded is a `TetherError` naming it from `plugin_spec`, and is left out of
`capabilities_for` and `names`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from tether.catalog import PROVIDER_PLUGINS, load_plugin, provider_names
from tether.config import Settings
from tether.errors import TetherError
from tether.protocols import Provider
from tether.providers.anthropic import AnthropicProvider
from tether.providers.extractive import ExtractiveProvider
from tether.providers.local import LocalModels, LocalProvider
from tether.providers.openai import OpenAICompatibleProvider
from tether.types import Capabilities


@dataclass(frozen=True)
class Build:
    """What a factory is given: the settings, the model asked for (`--model`, else
    TETHER_MODEL), the local models its local provider loads into (the caller's registry,
    shared with the other providers it builds), how the choice is named in a message
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


REPLAYED = Capabilities(recorded=True)
"""A replay of recordings that name no registered provider (or several that differ): a remote
model's capabilities, answering only what was recorded (`ReplayProvider.UNKNOWN`)."""

BUILT_IN_CAPABILITIES: Mapping[str, Capabilities] = MappingProxyType(
    {
        "openai": OpenAICompatibleProvider.capabilities,
        "anthropic": AnthropicProvider.capabilities,
        "local": LocalProvider.capabilities,
        "extractive": ExtractiveProvider.capabilities,
        "replay": REPLAYED,
        "recorded": REPLAYED,
    }
)
"""The capabilities each built-in name declares (its class's), by name: the names of
`tether.catalog.PROVIDERS`, then `tether.catalog.BUNDLED_PROVIDERS` (the registry checks, when
it loads, that these are exactly the names it builds)."""


def plugin_spec(name: str) -> ProviderSpec | None:
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


def capabilities_for(name: str) -> Capabilities | None:
    """The capabilities of the provider called `name` (any case); None for a name no
    provider has or a plugin that cannot be loaded."""
    chosen = name.strip().lower()
    found = BUILT_IN_CAPABILITIES.get(chosen)
    if found is not None:
        return found
    try:
        plugin = plugin_spec(chosen)
    except TetherError:
        return None
    return plugin.capabilities if plugin is not None else None


def names(**wanted: bool) -> list[str]:
    """The providers whose capabilities have the `wanted` values (e.g. `tool_use=True`), in
    the registry's order; a plugin that cannot be loaded is left out."""
    out = []
    for name in provider_names():
        caps = capabilities_for(name)
        if caps is not None and all(getattr(caps, k) == v for k, v in wanted.items()):
            out.append(name)
    return out
