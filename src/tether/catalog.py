"""The names of the parts a setting chooses (providers, ingest executors): the built-in ones,
in the order the docs list them, each with one line saying what it is, and the entry-point
groups where an installed package adds its own; and the choices of the options' text fields
(`Method`/`METHODS`, `AskMode`/`ASK_MODES`, `AUDIENCES`), as `Literal`s that
`tether.options` types its fields with and the CLI builds its help and checks from.

This is the one list those names are written in (with `BUNDLED_PROVIDERS`, the providers set
up for the bundled demo, which a command line may name but the listings leave out). The
settings (`tether.config`) check TETHER_PROVIDER and TETHER_EXECUTOR against it, the CLI's
help and messages print it, and the registries (`tether.providers.registry`,
`tether.ingest.executor`) give each name its code and check, when they load, that they cover
exactly these names. It sits below all of them and imports only `tether.errors`, so reading it
loads neither pydantic nor a provider.

A third-party package declares a provider in its own metadata, e.g. in its pyproject.toml:

    [project.entry-points."tether.providers"]
    mine = "my_package.tether_plugin:SPEC"

`plugin_names(group)` reads the names declared under a group from the installed packages'
metadata; no plugin code runs, so a broken plugin cannot break reading the settings.
`load_plugin(group, name)` imports one plugin when a registry needs it, and turns any failure
into one line naming the plugin and its entry point.

What it cannot do: it knows names, not code. That a plugin's name is listed says only that an
installed package declares it; whether it loads is found out by the registry when the name is
used (and reported there, naming the plugin). A plugin named like a built-in is not listed: a
built-in cannot be replaced.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, get_args

from tether.errors import TetherError
from tether.types import Audience

AUDIENCES: tuple[str, ...] = get_args(Audience)
# "auto": rerank when the index has vectors, else bm25 (`tether.retrieval.retriever`)
Method = Literal["auto", "bm25", "dense", "hybrid", "rerank", "deep"]
METHODS: tuple[str, ...] = tuple(m for m in get_args(Method) if m != "auto")
# how `ask` has the model answer; "auto": the provider's `Capabilities.answer_mode`
AskMode = Literal["auto", "json", "inline", "select"]
ASK_MODES: tuple[str, ...] = get_args(AskMode)

PROVIDER_PLUGINS = "tether.providers"
EXECUTOR_PLUGINS = "tether.executors"

PROVIDERS: Mapping[str, str] = MappingProxyType(
    {
        "openai": "an OpenAI-compatible server (OpenAI, Azure, Ollama, vLLM, llama.cpp);"
        " needs TETHER_MODEL",
        "anthropic": "Anthropic's API; needs TETHER_MODEL and an API key",
        "local": "the local Qwen2.5 model through llama.cpp (the tether[local] extra)",
        "extractive": "no model: quotes the passage sentences that best match the question",
        "replay": "answers recorded in TETHER_RECORDINGS (record/replay for tests and demos)",
    }
)
"""The built-in providers: name → what it is, in the order the docs list them."""

JUDGES: Mapping[str, str] = MappingProxyType(
    {
        "align": "the learned alignment judge, the default; the reader reads claims in another"
        " language than their passages",
        "align+llm": "the local model as a second opinion on uncertain claims",
        "reader": "the reader on every claim",
        "words": "the alignment judge, never the reader",
        "embedding": "",
        "llm": "the local model on every claim",
        "none": "the rules alone",
    }
)
"""The claim judges: name → what it is ("" when the name says it), in the order the CLI lists
them; the judge registry (`tether.answering.judging`) builds each and checks it covers
exactly these names."""

BUNDLED_PROVIDERS: Mapping[str, str] = MappingProxyType(
    {
        "recorded": "the bundled recordings of the local model's answers, replayed with the"
        " options they were made with (`tether eval --answers --provider recorded`)",
    }
)
"""Built-in providers set up for the bundled demo: a `--provider` (and `make_provider`'s
`name`) may name them; the listings, the messages and TETHER_PROVIDER leave them out."""

RECORDER = "replay"
"""The built-in provider that records another one (TETHER_REPLAY_INNER names the other)."""

EXECUTORS: Mapping[str, str] = MappingProxyType(
    {
        "process": "a pool of worker processes over the cores (small ingests stay in this one)",
        "serial": "everything in this process",
        "ray": "a Ray cluster (the tether[ray] extra)",
    }
)
"""The built-in ingest executors: name → where the work runs, the default first."""


def plugin_names(group: str, builtin: Iterable[str] = ()) -> list[str]:
    """The names the installed packages declare under the entry-point group `group`, in
    lower case and sorted, less `builtin` (read from the packages' metadata only)."""
    declared = importlib.metadata.entry_points(group=group)
    return sorted({ep.name.strip().lower() for ep in declared} - set(builtin))


def load_plugin(group: str, name: str) -> tuple[Any, str] | None:
    """The object the entry point `name` (any case) of `group` names, loaded, and where it
    comes from ("entry point NAME = MODULE:OBJECT from PACKAGE VERSION"); None when no
    installed package declares `name`. A plugin that fails to load (any exception of its
    code) is a `TetherError` of one line naming it, its entry point and the failure."""
    wanted = name.strip().lower()
    found = [
        ep
        for ep in importlib.metadata.entry_points(group=group)
        if ep.name.strip().lower() == wanted
    ]
    if not found:
        return None
    ep = found[0]
    dist = getattr(ep, "dist", None)
    origin = f"entry point {ep.name} = {ep.value}" + (
        f" from {dist.name} {dist.version}" if dist is not None else ""
    )
    try:
        return ep.load(), origin
    except Exception as exc:  # third-party code: whatever it raises is reported as one line
        raise TetherError(
            f"{group} plugin {wanted!r} ({origin}) could not be loaded:"
            f" {type(exc).__name__}: {' '.join(str(exc).split())}"
        ) from None


def provider_names(plugins: bool = True) -> tuple[str, ...]:
    """The providers a setting may name: the built-in ones, then the plugins' (`plugins`)."""
    return (*PROVIDERS, *(plugin_names(PROVIDER_PLUGINS, PROVIDERS) if plugins else ()))


def executor_names(plugins: bool = True) -> tuple[str, ...]:
    """The ingest executors a setting may name: the built-in ones, then the plugins'."""
    return (*EXECUTORS, *(plugin_names(EXECUTOR_PLUGINS, EXECUTORS) if plugins else ()))


def one_of(names: Sequence[str], last: str = "or") -> str:
    """The names for a sentence: "a, b or c" ("a" alone; "" for none)."""
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} {last} {names[-1]}"
