"""What the tests of `tether serve` share: the app over an index with the extractive answerer,
no rate limit unless asked, and the given keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def serve_app(index: Path, keys: dict[str, Any], *, anonymous: bool, **config: Any) -> Any:
    """`create_app` over `index` with `keys` ({key: audience}), the extractive answerer and
    ServeConfig(rate=0, **config)."""
    from tether.config import Settings
    from tether.server.api import ServeConfig, create_app
    from tether.server.keys import KeyRing

    ring = KeyRing.of(keys, allow_anonymous=anonymous)
    conf = ServeConfig(**{"rate": 0.0, **config})
    return create_app(index, ring, config=conf, settings=Settings(provider="extractive"))
