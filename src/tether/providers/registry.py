"""The providers tether can build, by name: one `ProviderSpec` each (what it is, how it is
built, its capabilities), the built-in ones in the order of `tether.catalog.PROVIDERS`, the
ones set up for the bundled demo (`recorded`: `tether.providers.bundled`), then the
third-party ones installed under the entry-point group `tether.providers`.

`make_provider` (`tether.providers.factory`) builds through `spec(name).factory`; the replay
provider reads `capabilities_for(name)` for the provider its recordings name; the agent's
message lists `names(tool_use=True)` (both from `tether.providers.specs`, which knows each
name's capabilities without its factory, and re-exported here with `ProviderSpec` and
`Build`). The names themselves are `tether.catalog`'s (the settings
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

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import cast

from tether.catalog import BUNDLED_PROVIDERS, PROVIDERS, one_of, provider_names
from tether.errors import TetherError
from tether.protocols import Provider
from tether.providers.anthropic import AnthropicProvider
from tether.providers.bundled import recorded_provider
from tether.providers.extractive import ExtractiveProvider
from tether.providers.local import LocalProvider
from tether.providers.openai import OpenAICompatibleProvider
from tether.providers.replay import ReplayMode, ReplayProvider
from tether.providers.specs import (
    BUILT_IN_CAPABILITIES,
    Build,
    ProviderSpec,
    capabilities_for,
    names,
    plugin_spec,
)

__all__ = [
    "BUILT_IN",
    "BUNDLED",
    "Build",
    "ProviderSpec",
    "capabilities_for",
    "names",
    "provider_names",
    "spec",
]


def _openai(build: Build) -> Provider:
    if not build.model:
        raise build.needs_model("gpt-4o-mini")
    s = build.settings
    return OpenAICompatibleProvider(
        build.model,
        base_url=s.base_url,
        api_key=s.api_key_for("openai"),
        timeout=s.timeout,
        max_retries=s.max_retries,
    )


def _anthropic(build: Build) -> Provider:
    if not build.model:
        raise build.needs_model("claude-haiku-4-5")
    s = build.settings
    return AnthropicProvider(
        build.model,
        api_key=s.api_key_for("anthropic"),
        timeout=s.timeout,
        max_retries=s.max_retries,
        base_url=s.base_url,
    )


def _local(build: Build) -> Provider:
    model = build.model
    path = Path(model).expanduser() if model and model.endswith(".gguf") else None
    s = build.settings
    return LocalProvider(
        model_path=path,
        threads=s.local_threads,
        cache_dir=s.model_cache,
        models=build.local_models,
    )


def _replay(build: Build) -> Provider:
    s = build.settings
    if s.recordings is None:
        raise TetherError(f"{build.said} needs TETHER_RECORDINGS (a .jsonl file)")
    inner = build.make(s.replay_inner or "auto") if s.replay_mode != "replay" else None
    return ReplayProvider(s.recordings, mode=cast(ReplayMode, s.replay_mode), inner=inner)


# name → factory: the code of each name of `tether.catalog.PROVIDERS`, then of
# `tether.catalog.BUNDLED_PROVIDERS` (their capabilities: `tether.providers.specs`)
_CODE: dict[str, Callable[[Build], Provider]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "local": _local,
    "extractive": lambda build: ExtractiveProvider(),
    "replay": _replay,
    "recorded": lambda build: recorded_provider(),
}
_NAMES = {**PROVIDERS, **BUNDLED_PROVIDERS}
if list(_CODE) != list(_NAMES) or list(BUILT_IN_CAPABILITIES) != list(_NAMES):
    # the catalog is the one list of names: no more, no fewer
    raise ImportError(f"the providers built here ({list(_CODE)}) are not tether.catalog's")

_SPECS = {
    name: ProviderSpec(name, _NAMES[name], code, BUILT_IN_CAPABILITIES[name])
    for name, code in _CODE.items()
}
BUILT_IN: Mapping[str, ProviderSpec] = MappingProxyType({name: _SPECS[name] for name in PROVIDERS})
"""The built-in providers, in the order the docs list them."""

BUNDLED: Mapping[str, ProviderSpec] = MappingProxyType(
    {name: _SPECS[name] for name in BUNDLED_PROVIDERS}
)
"""The built-in providers set up for the bundled demo (`recorded`): a name may choose one,
the listings leave them out."""


def spec(name: str) -> ProviderSpec:
    """The provider called `name` (any case): a built-in one, else an installed plugin's;
    a `TetherError` for an unknown name (listing every name) or a plugin that cannot load."""
    chosen = name.strip().lower()
    found = BUILT_IN.get(chosen) or BUNDLED.get(chosen) or plugin_spec(chosen)
    if found is None:
        raise TetherError(f"unknown provider {name!r}; use {one_of(provider_names())}")
    return found
