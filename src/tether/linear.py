"""A fitted logistic regression stored as JSON: the format every learned decider here uses.

The claim judge (`tether.verify.learned`), the answerability judge
(`tether.answering.answerable`) and the learned rerank order (`tether.retrieval.rerank`) are
each a `LinearModel`: feature names, their training mean and scale, a weight per feature, a
bias and a threshold, plus a `trained` record of what it was fitted on. Reading one needs no
scikit-learn (`fitted` reads a fitted `StandardScaler` and `LogisticRegression` by attribute,
and `fit_scaled`, which fits them, imports it only when called), so a model runs in
microseconds with the standard library.

What it cannot do: it is linear in its features (interactions must be given as features of
their own), and it knows nothing of how its features were computed: a model must be read by
the code that wrote its features, which each owner checks by the feature names.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.errors import TetherError

__all__ = ["FORMAT", "LinearModel", "feature_hash", "fit_scaled", "read_model"]


def clipped_logit(p: float, eps: float = 1e-4) -> float:
    """log(p / (1 - p)) with p held inside [eps, 1 - eps]: the log-odds of a model's
    probability, finite at 0 and 1 (the reader's heads give both)."""
    p = min(max(float(p), eps), 1.0 - eps)
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class LinearModel:
    """A fitted logistic regression: feature names, their mean and scale, weights, bias."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    trained: Mapping[str, Any]  # what it was fitted on and how well it did there

    def logit(self, values: Mapping[str, float]) -> float:
        """The linear score; a feature missing from `values` counts as its training mean, so
        it moves nothing."""
        z = self.bias
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True):
            z += w * (float(values.get(name, m)) - m) / s
        return z

    def probability(self, values: Mapping[str, float]) -> float:
        """The model's probability for `values` (see `logit`)."""
        z = self.logit(values)
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    @classmethod
    def fitted(
        cls,
        features: Sequence[str],
        scaler: Any,
        regression: Any,
        threshold: float,
        trained: Mapping[str, Any],
    ) -> LinearModel:
        """The model of a fitted scikit-learn `StandardScaler` and `LogisticRegression` (read
        by attribute, so this module needs no scikit-learn), rounded to six places."""
        return cls(
            features=tuple(features),
            mean=tuple(round(float(v), 6) for v in scaler.mean_),
            scale=tuple(round(float(v), 6) or 1.0 for v in scaler.scale_),
            weights=tuple(round(float(v), 6) for v in regression.coef_[0]),
            bias=round(float(regression.intercept_[0]), 6),
            threshold=threshold,
            trained=trained,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "feature_hash": feature_hash(self.features),
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "threshold": self.threshold,
            "trained": dict(self.trained),
        }


def fit_scaled(
    xs: Any, ys: Any, c: float, *, max_iter: int = 2000, weights: Any = None
) -> tuple[Any, Any]:
    """A scikit-learn `StandardScaler` and a class-balanced `LogisticRegression` (strength
    `c`) fitted on (xs, ys), with `weights` per row when given: what `LinearModel.fitted`
    reads. Imports scikit-learn (the `dev` extra) only when called."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(xs)
    regression = LogisticRegression(C=c, class_weight="balanced", max_iter=max_iter)
    regression.fit(scaler.transform(xs), ys, sample_weight=weights)
    return scaler, regression


FORMAT = 1  # the model file's format (a file without one predates it and is read as 1)


def feature_hash(features: Sequence[str]) -> str:
    """A short hash of the feature names in their order: a file records it, and a reader
    that computes other features refuses the file instead of reading a missing one as its
    mean."""
    return hashlib.sha256("\n".join(features).encode("utf-8")).hexdigest()[:16]


def read_model(
    path: Path | str, what: str, rebuild: str, features: Sequence[str] | None = None
) -> LinearModel:
    """The model stored at `path`; a missing or damaged file is a TetherError naming `what`
    it is and the command that rebuilds it (`rebuild`). So is a file of another format, one
    whose `feature_hash` does not match its own feature names, and, when the caller gives
    the `features` its code computes, one fitted on other features (a renamed or dropped
    feature would otherwise be read silently as its training mean)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        n = len(raw["features"])
        if not (len(raw["mean"]) == len(raw["scale"]) == len(raw["weights"]) == n):
            raise ValueError("feature, mean, scale and weight counts differ")
        if int(raw.get("format", FORMAT)) != FORMAT:
            raise ValueError(f"format {raw['format']}, this tether reads {FORMAT}")
        names = [str(f) for f in raw["features"]]
        if "feature_hash" in raw and raw["feature_hash"] != feature_hash(names):
            raise ValueError("its feature_hash does not match its feature names")
        if features is not None and set(names) != set(features):
            missing = sorted(set(features) - set(names))
            unknown = sorted(set(names) - set(features))
            raise ValueError(
                f"fitted on other features (not in the file: {', '.join(missing) or '-'};"
                f" not computed here: {', '.join(unknown) or '-'})"
            )
        return LinearModel(
            features=tuple(str(f) for f in raw["features"]),
            mean=tuple(float(x) for x in raw["mean"]),
            scale=tuple(float(x) or 1.0 for x in raw["scale"]),
            weights=tuple(float(x) for x in raw["weights"]),
            bias=float(raw["bias"]),
            threshold=float(raw["threshold"]),
            trained=dict(raw.get("trained", {})),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TetherError(
            f"cannot read {what} {path} ({exc}); rebuild it with `{rebuild}`"
        ) from None
