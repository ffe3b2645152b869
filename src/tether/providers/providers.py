"""Transitional: the old import path `tether.providers.providers`, re-exporting the providers
from their own modules (base, openai, anthropic, local, extractive, replay, factory).

Kept only while modules outside this package (cli/main.py) still import the old path; it holds
no logic of its own and can be deleted once nothing imports it. It cannot stand in for a
monkeypatch target: patch the module that defines the name.
"""

from __future__ import annotations

from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import price_for
from tether.providers.extractive import ExtractiveProvider, split_sentences
from tether.providers.factory import make_provider
from tether.providers.local import (
    LOCAL_MODEL_SHA256,
    LOCAL_MODEL_SIZE,
    LocalModels,
    LocalProvider,
    ensure_local_model,
    local_model_status,
)
from tether.providers.openai import OpenAICompatibleProvider
from tether.providers.replay import ReplayProvider, request_key, request_loose_key

__all__ = [
    "LOCAL_MODEL_SHA256",
    "LOCAL_MODEL_SIZE",
    "AnthropicProvider",
    "ExtractiveProvider",
    "LocalModels",
    "LocalProvider",
    "OpenAICompatibleProvider",
    "ReplayProvider",
    "ensure_local_model",
    "local_model_status",
    "make_provider",
    "price_for",
    "request_key",
    "request_loose_key",
    "split_sentences",
]
