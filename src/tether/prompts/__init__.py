"""The prompt files (answer, rewrite, rerank), read byte-exact; a prompt's ID carries its hash so
a recorded answer names the exact prompt it was made with."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources


@cache
def load_prompt(name: str) -> tuple[str, str]:
    """(text, prompt_id) of a prompt file, byte-exact; prompt_id is name@sha256[:12]."""
    data = (resources.files("tether.prompts") / f"{name}.txt").read_bytes()
    return data.decode("utf-8"), f"{name}@{hashlib.sha256(data).hexdigest()[:12]}"
