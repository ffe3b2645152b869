"""What every benchmark shares: where things are, timers, the machine's load, a free port, a
`tether serve` fixture, a Workspace opened the one way, and results written as dated JSON.

- Paths: `ROOT` (the repository), `BENCH`, `RESULTS`, `DATA`, `CORPORA`, `HEALTH` (the
  labelled health sets), `SRC`, `LARKFIELD` (the shared benchmark, when present).
- Time: `stopwatch()` (a context manager whose `.seconds` is set on exit), `timed(fn)`,
  `percentile(values, q)`.
- The machine: `load_average()`, `machine()`, `commit()`, `provenance()`.
- Serving: `free_port()`, `start_server(...)`, `wait_ready(...)` and `serving(...)` (start,
  wait for /readyz or /healthz, yield the base URL, stop).
- `open_workspace(...)`: `tether.app.Workspace.open`, as every face opens one.
- Results: `write_result(name, figures, render)` writes `RESULTS/name.json` (the figures with
  the run's date, commit, machine and load) and `RESULTS/name.md`, rendered from that JSON
  with a line naming the run (`run_line`); `make_record`, `write_record` and `render_page`
  for results whose JSON and page are not named alike; `write_page_result(page, lines)` for
  a script that builds its page line by line as it measures (the JSON keeps the lines and
  the tables parsed from them); `sidecar_path(page)` never overwrites a JSON kept by hand;
  `read_figures(path)` and `read_record(path)` read either shape back (a record, or a JSON
  written before the harness, dated then from git history).

What it cannot do: it records the load, it does not control it (on a shared machine read
timings beside the load they were measured at); `commit()` names HEAD and says `-dirty` when
the tree has changes, not which of them a run read.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from bench.provenance import measured_at, page_figures

if TYPE_CHECKING:
    from tether.app import Workspace

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
DATA = BENCH / "data"
CORPORA = BENCH / "corpora"
HEALTH = BENCH / "health"
SRC = ROOT / "src"
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"
QUESTIONS = SRC / "tether" / "demo" / "questions.jsonl"

T = TypeVar("T")


# --- time ---------------------------------------------------------------------------------


@dataclass
class Stopwatch:
    """Seconds between entering and leaving a `stopwatch()` block (0.0 until it is left)."""

    seconds: float = 0.0


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    """`with stopwatch() as t: ...` then `t.seconds` (wall time, `time.perf_counter`)."""
    watch = Stopwatch()
    began = time.perf_counter()
    try:
        yield watch
    finally:
        watch.seconds = time.perf_counter() - began


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """`fn()`'s result and its wall seconds."""
    began = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - began


def percentile(values: Sequence[float], q: float, empty: float = float("nan")) -> float:
    """The `q`-th percentile (0-100) of `values`: the value at index int(q/100 * n) of the
    sorted list (the last one at most); `empty` when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else empty


# --- the machine --------------------------------------------------------------------------


def load_average() -> float:
    """The 1-minute load average (nan where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def load_averages() -> list[float]:
    """The 1-, 5- and 15-minute load averages (empty where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else `platform.processor()`, else the arch."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """The CPU count and model, the platform and Python's version."""
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def commit() -> str:
    """HEAD's short hash, with `-dirty` when the tree has changes; "unrecorded" without git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
            check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unrecorded"
    return f"{head}-dirty" if dirty else head


def provenance(load_before: float | None = None) -> dict[str, Any]:
    """Where and when a result was measured: date (UTC), commit, machine, load before/after."""
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        "load": {"before": load_before, "after": load_average()},
    }


# --- serving ------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (another process may take it before it is bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    index: Path | None, port: int, folder: Path, extra: Sequence[str] = ("--queue", "16"),
    stderr: Any = None, src: Path = SRC, env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:  # fmt: skip
    """`tether serve` on 127.0.0.1:`port` (the extractive answerer, no rate limit), over
    `index` or the demo index built in `folder`; `extra` flags; its stderr to `stderr`; the
    tether package of `src`; `env` added to the environment."""
    environ = {**os.environ, "PYTHONPATH": str(src), "TETHER_PROVIDER": "extractive", **(env or {})}
    where = ["--index", str(index)] if index else ["--demo"]
    command = [sys.executable, "-m", "tether", "--quiet", "serve", *where, "--port", str(port),
               "--rate", "0", *extra]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, env=environ, stderr=stderr)


async def wait_ready(base: str, seconds: float = 600, path: str = "/healthz") -> None:
    """Until `base + path` answers 200 (/readyz: the models are loaded)."""
    async with httpx.AsyncClient() as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if (await client.get(base + path)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.5)
    raise SystemExit("the server did not start")


@contextmanager
def serving(
    index: Path | None, folder: Path, extra: Sequence[str] = ("--queue", "16"),
    ready: str = "/readyz", seconds: float = 600,
) -> Iterator[str]:  # fmt: skip
    """A `tether serve` fixture: started on a free port (`start_server`), waited for until
    `ready` answers 200; yields its base URL; stopped on leaving."""
    port = free_port()
    server = start_server(index, port, folder, extra)
    base = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_ready(base, seconds, ready))
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


# --- the Workspace ------------------------------------------------------------------------


def open_workspace(index: Path | str | None = None, **options: Any) -> Workspace:
    """A Workspace the one way every face opens it (`Workspace.open`; `create=True` writes)."""
    from tether.app import Workspace  # imported on use: `--list` needs no engine

    return Workspace.open(index, **options)


# --- results ------------------------------------------------------------------------------


def write_result(
    name: str, figures: dict[str, Any], render: Callable[[dict[str, Any]], str],
    *, load_before: float | None = None, folder: Path = RESULTS,
) -> Path:  # fmt: skip
    """Write `folder/name.json` (`figures` under "figures", with `provenance`) and
    `folder/name.md`, `render(record)` under a line naming the run; the JSON's path."""
    record = make_record(name, figures, load_before)
    folder.mkdir(parents=True, exist_ok=True)
    out = write_record(folder / f"{name}.json", record)
    (folder / f"{name}.md").write_text(render_page(record, render), encoding="utf-8")
    return out


def make_record(
    name: str, figures: dict[str, Any], load_before: float | None = None
) -> dict[str, Any]:
    """A result's JSON record: `{"bench": name, date, commit, machine, load, "figures"}`."""
    return {"bench": name, **provenance(load_before), "figures": figures}


def write_record(path: Path, record: dict[str, Any]) -> Path:
    """Write a result's JSON record to `path` (its folder made); `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def write_page_result(
    page: Path, lines: Sequence[str], *, load_before: float | None = None,
    figures: dict[str, Any] | None = None,
) -> Path:  # fmt: skip
    """For a script that builds its page line by line as it measures: `page`'s JSON (beside
    it) holds `figures`, the page's tables and numbered sentences (`provenance.page_figures`)
    and its lines; `page` is rendered from that record with the line naming the run. The
    JSON's path."""
    text = "\n".join(lines)
    body = {**(figures or {}), **page_figures(text), "lines": list(lines)}
    record = make_record(page.stem, body, load_before)
    out = write_record(page.with_suffix(".json"), record)
    page.write_text(render_page(record, lambda r: "\n".join(r["figures"]["lines"])), "utf-8")
    return out


def sidecar_path(page: Path) -> Path:
    """Where a page's JSON record goes: `page.json`, unless that file holds something else
    kept by hand (a JSON that is no record), then `page.run.json` beside it."""
    path = page.with_suffix(".json")
    if not path.is_file():
        return path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        data = None
    return path if is_record(data) else page.with_suffix(".run.json")


def read_record(path: Path) -> dict[str, Any]:
    """A result's JSON as a record: as written by the harness, or, for a JSON written before
    it, its whole content as the figures with the date and commit of the last commit that
    changed it (git history) and no load."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if is_record(data):
        return dict(data)
    sha, day = measured_at(path)
    return {
        "bench": path.stem, "date": day, "commit": sha, "machine": "not recorded",
        "load": "load not recorded", "figures": data,
    }  # fmt: skip


def read_figures(path: Path) -> Any:
    """The figures of a result's JSON: a record's "figures", or the whole JSON of a file
    written before the harness (those name no "bench")."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["figures"] if is_record(data) else data


def is_record(data: Any) -> bool:
    """Whether a result's JSON is a harness record (it names its bench and has figures)."""
    return isinstance(data, dict) and "bench" in data and "figures" in data


def run_line(record: dict[str, Any]) -> str:
    """One line naming a run: date, commit, CPUs and model, load before and after."""
    m = record.get("machine") or {}
    load = record.get("load") or {}
    if not isinstance(m, dict) or not isinstance(load, dict):  # a page's record from git
        said = load if isinstance(load, str) and "load" in load else f"load {load}"
        return (
            f"Run {record.get('date', 'unrecorded')} at commit"
            f" {record.get('commit', 'unrecorded')}; machine {m}; {said}."
        )
    return (
        f"Run {record.get('date', 'unrecorded')} at commit {record.get('commit', 'unrecorded')}; "
        f"{m.get('cpus', '?')} CPUs ({m.get('cpu_model', '?')}); load average "
        f"{load.get('before', '?')} before, {load.get('after', '?')} after."
    )


def render_page(record: dict[str, Any], render: Callable[[dict[str, Any]], str]) -> str:
    """The Markdown of a result: `render(record)` with the run's line after its title."""
    body = render(record).rstrip("\n")
    lines = body.split("\n")
    if lines and lines[0].startswith("# "):
        return "\n".join([lines[0], "", run_line(record), *lines[1:]]) + "\n"
    return run_line(record) + "\n\n" + body + "\n"
