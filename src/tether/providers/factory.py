"""`make_provider`: the provider the settings ask for, or the one `auto` chooses.

With no provider configured (auto): the local model when xllamacpp and the model parts are
installed, else the extractive answerer; the provider's `describe()` and `selection` say which
was chosen and why.

What it cannot do: it checks that a provider can be built (keys, model names, files named in
the settings), not that it answers: a wrong model name or an unreachable server shows up on
the first request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from tether.config import Settings, check_provider
from tether.errors import TetherError
from tether.protocols import Provider
from tether.providers.anthropic import AnthropicProvider
from tether.providers.extractive import ExtractiveProvider
from tether.providers.local import LocalModels, LocalProvider, local_model_status
from tether.providers.openai import OpenAICompatibleProvider
from tether.providers.replay import ReplayMode, ReplayProvider

# The process's registry of loaded local models, used only by `make_provider` when its caller
# passes none (a caller that holds its own `LocalModels` controls their lifetime instead).
PROCESS_LOCAL_MODELS = LocalModels()


def make_provider(
    settings: Settings,
    *,
    name: str | None = None,
    model: str | None = None,
    local_models: LocalModels | None = None,
) -> Provider:
    """The provider `settings` ask for (or `name`), with `model` overriding TETHER_MODEL.

    A local provider takes its server from `local_models` (the process default
    `PROCESS_LOCAL_MODELS` when none is given, so providers made here share loaded models).

    With no provider set (auto): the local model when xllamacpp and the model parts are
    installed, else the extractive answerer. The provider's `describe()` (and its
    `selection` attribute) say which was chosen and why.
    """
    chosen = check_provider(name or settings.provider or "auto")
    # what a missing setting is said against: the name the caller gave, or the variable
    said = f"provider {chosen!r}" if name else f"TETHER_PROVIDER={chosen}"
    model_from = "a model: --model or TETHER_MODEL" if name else "TETHER_MODEL"
    needs_model = f"{said} needs {model_from}"
    model = model or settings.model
    models = local_models if local_models is not None else PROCESS_LOCAL_MODELS
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
    if chosen == "openai":
        if not model:
            raise TetherError(f"{needs_model} (e.g. gpt-4o-mini)")
        provider = OpenAICompatibleProvider(
            model,
            base_url=settings.base_url,
            api_key=settings.api_key_for("openai"),
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
    elif chosen == "anthropic":
        if not model:
            raise TetherError(f"{needs_model} (e.g. claude-haiku-4-5)")
        provider = AnthropicProvider(
            model,
            api_key=settings.api_key_for("anthropic"),
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            base_url=settings.base_url,
        )
    elif chosen == "local":
        path = Path(model).expanduser() if model and model.endswith(".gguf") else None
        provider = LocalProvider(
            model_path=path,
            threads=settings.local_threads,
            cache_dir=settings.model_cache,
            models=models,
        )
    elif chosen == "extractive":
        provider = ExtractiveProvider()
    elif chosen == "replay":
        if settings.recordings is None:
            raise TetherError(f"{said} needs TETHER_RECORDINGS (a .jsonl file)")
        inner = None
        if settings.replay_mode != "replay":
            inner = make_provider(
                settings, name=settings.replay_inner or "auto", model=model, local_models=models
            )
        mode = cast(ReplayMode, settings.replay_mode)
        provider = ReplayProvider(settings.recordings, mode=mode, inner=inner)
    else:  # check_provider lets no other name through
        raise AssertionError(chosen)
    return provider
