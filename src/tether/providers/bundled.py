"""The `recorded` provider: the bundled recordings of the local model's answers to bundled
questions (`tether/demo/recordings/local-qwen.jsonl`, made by scripts/record_answers.py),
replayed with the ask options they were made with (`RECORDED_OPTIONS`), so that each request
finds its exact recording (`tether eval --answers --provider recorded`).

What it cannot do: it replays only (a question that was not recorded is a `ProviderError`,
as for any replay); the options are those of the bundled file, not of a recording of your own
(`TETHER_PROVIDER=replay` with TETHER_RECORDINGS replays that one with the options asked).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from tether.providers.replay import ReplayProvider

RECORDED_OPTIONS: dict[str, Any] = {"k": 4, "budget": 1000, "method": "hybrid", "mode": "json"}
"""The options the bundled recordings were made with (scripts/record_answers.py); an
evaluation of the recordings asks with them so each request finds its exact recording. They
are json-mode answers (recorded through the replay provider when "auto" resolved by the
provider's name, and a replay's name was not "local"). A replay's "auto" resolves to the mode
its answers were recorded in (`ReplayProvider.recorded_modes`); the mode is named here too, so
an evaluation asks exactly as they were recorded."""


def bundled_recordings() -> Path:
    """The bundled recordings of the local model's answers to bundled questions."""
    return Path(str(resources.files("tether.demo") / "recordings" / "local-qwen.jsonl"))


def recorded_provider() -> ReplayProvider:
    """A replay of the bundled recordings that knows the options they were made with."""
    return ReplayProvider(bundled_recordings(), recorded_options=RECORDED_OPTIONS)
