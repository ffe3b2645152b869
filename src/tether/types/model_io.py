"""Engine data types of a language-model call: the provider-neutral `ModelRequest` (its
`Message`s) and the `Completion` that comes back, and the `Capabilities` a provider declares
so behaviour follows its class, never its name.

Frozen data only. What it cannot do: it calls no model; a provider (`tether.providers`)
turns a request into a completion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ModelRequest:
    """What is sent to a language model: provider-neutral, hashable for record/replay."""

    messages: tuple[Message, ...]
    json_schema: dict | None = field(default=None, compare=False, hash=False)
    schema_name: str = "answer"
    max_tokens: int = 512
    temperature: float = 0.0
    purpose: str = "answer"  # answer | closed_book | rewrite | judge | rerank
    prompt_id: str = ""  # name@sha256[:12] of the prompt file that built it
    chunk_ids: tuple[str, ...] = ()  # the passages shown, in order (for replay notes)
    logprobs: bool = False  # ask for top log-probabilities of the first token (judges)
    # For answerers that read passages directly instead of a prompt (the extractive one):
    question: str = field(default="", compare=False)
    passages: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # (chunk_id, text)
    # ... and the question's e5 cosine to each sentence span of those passages, from the
    # index's sentence vectors: (chunk_id, start, end, cosine); empty without vectors
    closeness: tuple[tuple[str, int, int, float], ...] = field(default=(), compare=False)
    # ... and the reader's P(the sentence answers the question) for the spans closest to it
    # (`tether.embeddings.reader`, the relevance head): (chunk_id, start, end, probability);
    # empty without the reader
    answers: tuple[tuple[str, int, int, float], ...] = field(default=(), compare=False)
    # Tools a provider with tool calls may offer instead of `json_schema` (the agent's
    # actions): (name, description, JSON Schema of the arguments); a call comes back as the
    # JSON text {"action": name, ...arguments}.
    tools: tuple[tuple[str, str, dict], ...] = field(default=(), compare=False, hash=False)


@dataclass(frozen=True)
class Completion:
    """What came back from a model (or from a non-model answerer)."""

    text: str
    finish_reason: str = "stop"  # stop | length | refusal | error
    refusal: str | None = None
    model: str = ""
    provider: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cost_known: bool = True  # False: no listed price for the model, cost_usd is not a figure
    note: str = ""
    top_logprobs: dict[str, float] = field(default_factory=dict, compare=False, hash=False)


AnswerMode = Literal["select", "json"]  # what "auto" resolves to (`Capabilities`)


@dataclass(frozen=True)
class Capabilities:
    """What a provider is and can do, so behaviour follows the provider's class, never its
    name: each provider class declares `capabilities = Capabilities(...)`, and a wrapper (the
    replay provider) reports those of what it wraps. The defaults are a remote language model's.

    `answer_mode`: what answer mode "auto" resolves to (select: the model picks numbered
    sentences; json: it writes the answer and its claims). `judge`: the judge "auto" picks:
    `align+llm` when the model is already loaded in this process, so its second opinion on an
    uncertain claim (and on an uncertain question's answerability) costs no paid call, else
    `align`. `model`: it is a language model (the extractive answerer is not: it cannot
    rewrite a query). `tool_use`: it can choose the agent loop's actions. `recorded`: it answers
    only the requests it holds recordings of (a replay), so an evaluation asks only those."""

    answer_mode: AnswerMode = "json"
    judge: Literal["align", "align+llm"] = "align"
    model: bool = True
    tool_use: bool = True
    recorded: bool = False

    @property
    def second_opinion(self) -> bool:
        """A model's second opinion on uncertain cases is free (the judge `align+llm`)."""
        return self.judge == "align+llm"
