"""`make_provider`: the provider the settings ask for, or the one `auto` chooses.

A name is built by its `ProviderSpec` in `tether.providers.registry` (the built-in providers
and the installed plugins'). With no provider configured (auto): the local model when
xllamacpp and the model parts are installed, else the extractive answerer; the provider's
`describe()` and `selection` say which was chosen and why.

Loaded local models live in the `LocalModels` registry the caller passes (the Workspace's
`Models.local`, one for the process): this module keeps none of its own. A caller that passes
none gets a registry for this call alone (shared with the provider a replay records from).

What it cannot do: it checks that a provider can be built (keys, model names, files named in
the settings), not that it answers: a wrong model name or an unreachable server shows up on
the first request.
"""

from __future__ import annotations

from typing import Any

from tether.config import Settings, check_provider
from tether.protocols import Provider
from tether.providers.extractive import ExtractiveProvider
from tether.providers.local import LocalModels, LocalProvider, local_model_status
from tether.providers.registry import Build, spec


def make_provider(
    settings: Settings,
    *,
    name: str | None = None,
    model: str | None = None,
    local_models: LocalModels | None = None,
) -> Provider:
    """The provider `settings` ask for (or `name`), with `model` overriding TETHER_MODEL.

    A local provider takes its server from `local_models`: the caller's registry (the
    Workspace's `Models.local`), so the providers made with it share loaded models; a
    registry for this call alone when none is given.

    With no provider set (auto): the local model when xllamacpp and the model parts are
    installed, else the extractive answerer. The provider's `describe()` (and its
    `selection` attribute) say which was chosen and why.
    """
    chosen = check_provider(name or settings.provider or "auto")
    models = local_models if local_models is not None else LocalModels()
    provider: Any
    if chosen == "auto":
        ok, why = local_model_status(settings.model_cache)
        if ok:
            provider = LocalProvider(
                threads=settings.local_threads, cache_dir=settings.model_cache, models=models
            )
            provider.selection = "no provider configured; using the local model"
        else:
            provider = ExtractiveProvider()
            provider.selection = f"{why}; using the extractive answerer"
        return provider
    model = model or settings.model
    build = Build(
        settings,
        model,
        models,
        # what a missing setting is said against: the name the caller gave, or the variable
        said=f"provider {chosen!r}" if name else f"TETHER_PROVIDER={chosen}",
        model_from="a model: --model or TETHER_MODEL" if name else "TETHER_MODEL",
        make=lambda other: make_provider(settings, name=other, model=model, local_models=models),
    )
    return spec(chosen).factory(build)
