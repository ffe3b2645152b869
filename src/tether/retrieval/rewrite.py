"""Query rewriting for the retriever: `LLMRewriter` asks a model (prompt
`prompts/rewrite.txt`) to rewrite a question into a search query, keeping the first line of
its answer, cached per question.

What it cannot do: it costs one model call per new question; any failure (provider error,
empty or cut output) leaves the question unchanged, so it never fails a search.
"""

from __future__ import annotations

import re

from tether.lru import LRU
from tether.prompts import load_prompt
from tether.protocols import Provider
from tether.types import Message, ModelRequest


class LLMRewriter:
    """Rewrites a question into a search query with a model (prompt `prompts/rewrite.txt`).

    Any failure (provider error, empty or cut output) returns the question unchanged."""

    name = "llm-rewrite"

    def __init__(self, provider: Provider, *, max_tokens: int = 64) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self._cache: LRU[str, str] = LRU(1024)

    def __call__(self, query: str) -> str:
        found = self._cache.get(query)
        if found is not None:
            return found

        template, prompt_id = load_prompt("rewrite")
        text = template.replace("$question", query)
        request = ModelRequest(
            messages=(Message("user", text),),
            max_tokens=self.max_tokens,
            purpose="rewrite",
            prompt_id=prompt_id,
            question=query,
        )
        try:
            completion = self.provider.complete(request)
        except Exception:  # a rewrite is an optional improvement: never fail the search
            return query
        rewritten = _first_line(completion.text) if completion.finish_reason == "stop" else ""
        return self._cache.put(query, rewritten or query)


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = re.sub(r"^(query|search query|requête)\s*:\s*", "", line.strip(), flags=re.I)
        line = line.strip().strip('"').strip()
        if line:
            return line[:500]
    return ""
