"""Ingest of a public mixed collection: six formats, built from Debian packages and PyPI sdists.

`python bench/ingest/ingest_mixed.py [--root DIR] [--build-only] [--kills 0.5,0.9]` (about half an
hour on 2 cores):

1. builds `ROOT/mixed` (ROOT: `--root`, else TETHER_CORPORA, else /work/corpora) from fixed
   file lists (`FILES` below): `apt-get download` + `dpkg-deb -x` of Debian's
   developers-reference (Sphinx HTML), debian-faq and maint-guide (DocBook/dblatex PDF) and
   systemd (its Markdown notes), no package installed; `pip download --no-binary` of the click
   (reStructuredText), typer (Markdown), docutils (its .txt manuals, read as plain text) and
   Jinja2 sdists; Jinja2's .rst pages converted to DOCX by pandoc (`apt-get install pandoc`
   when it is missing: Debian ships no DOCX manual). The package versions found are recorded;
2. parse only: `tether ingest --no-embed` into a fresh index;
3. the whole ingest as a user runs it: `tether ingest --json` (the default settings: the
   process executor, sentence vectors, calibration, the vector cache) into a fresh index and
   a fresh, empty vector cache, its stderr read line by line (it logs each phase when stderr is not a terminal) and
   every line timestamped on arrival, so each phase's start and end are measured;
4. killed and rerun: for each fraction f in `--kills`, a fresh index and a fresh vector cache;
   `tether ingest` is killed (SIGKILL) once it has used f of step 3's CPU seconds (a point in
   the work, whatever else runs on the machine), then run again to the end; the work redone
   is (killed run + rerun − step 3) / step 3, in CPU seconds and in wall seconds.

Words and chunks per format are read from the index step 3 wrote. The load average is recorded
around each run. Writes bench/results/ingest_mixed.json (the run's date, commit, machine,
load and figures) and ingest_mixed.md rendered from it.

What it cannot do: it needs apt-get (Debian bookworm's archive) and PyPI; another release of a
package may lack a listed file, which stops the build with the path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_result

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "results"
TETHER = [sys.executable, "-m", "tether"]

DEBS = ("developers-reference", "debian-faq", "maint-guide", "systemd")
SDISTS = ("click==8.1.7", "typer==0.9.0", "docutils==0.20.1", "Jinja2==3.1.2")
DEVREF = "deb/usr/share/developers-reference/"
TYPER = "sdist/typer-0.9.0/docs/"
# (source inside the build folder, destination inside the collection)
FILES: list[tuple[str, str]] = [
    *[(f"{DEVREF}{p}.html", f"devref/{p}.html") for p in (
        "best-pkging-practices", "beyond-pkging", "developer-duties", "l10n",
        "new-maintainer", "pkgs", "resources", "scope", "tools")],
    ("deb/usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz", "pdf/debian-faq.pdf"),
    ("deb/usr/share/doc/maint-guide/maint-guide.en.pdf", "pdf/maint-guide.pdf"),
    *[(f"deb/usr/share/doc/systemd/{p}", f"systemd/{p.removesuffix('.gz')}") for p in (
        "CODING_STYLE.md.gz", "DISTRO_PORTING.md", "ENVIRONMENT.md.gz", "HACKING.md.gz",
        "TRANSIENT-SETTINGS.md.gz", "TRANSLATORS.md", "UIDS-GIDS.md.gz")],
    *[(f"sdist/click-8.1.7/docs/{p}.rst", f"click/{p}.rst") for p in (
        "advanced", "api", "arguments", "changes", "commands", "complex", "contrib",
        "documentation", "exceptions", "index", "upgrading", "wincmd",
        "license", "options", "parameters", "prompts", "quickstart", "setuptools",
        "shell-completion", "testing", "unicode-support", "utils", "why")],
    *[(f"{TYPER}{p}.md", f"typer/{p}.md") for p in (
        "index", "features", "typer-cli", "help-typer", "contributing", "tutorial/first-steps",
        "tutorial/package", "tutorial/printing", "tutorial/exceptions", "tutorial/testing",
        "tutorial/progressbar", "tutorial/using-click", "tutorial/options-autocompletion",
        "tutorial/commands/help", "tutorial/commands/index", "tutorial/commands/callback",
        "tutorial/arguments/help", "tutorial/arguments/optional", "tutorial/options/name",
        "tutorial/options/help", "tutorial/options/callback-and-context",
        "tutorial/subcommands/name-and-help", "tutorial/parameter-types/file")],
    *[(f"sdist/docutils-0.20.1/docs/user/{p}.txt", f"docutils/{p}.txt") for p in (
        "config", "emacs", "html", "latex", "links", "odt", "slide-shows", "tools")],
    *[(f"sdist/Jinja2-3.1.2/docs/{p}.rst", f"jinja/{p}.docx") for p in (
        "templates", "api", "extensions", "faq", "switching", "sandbox", "tricks")],
]  # fmt: skip


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[Any]:
    return subprocess.run(cmd, check=True, capture_output=True, **({"text": True} | kw))


def build(root: Path) -> dict[str, Any]:
    """Download, unpack and copy the listed files into root/mixed; the versions found."""
    target = root / "mixed"
    work = root / "mixed-build"
    versions: dict[str, str] = {}
    (work / "debs").mkdir(parents=True, exist_ok=True)
    for name in DEBS:
        if not list((work / "debs").glob(f"{name}_*.deb")):
            run(["apt-get", "download", name], cwd=work / "debs")
        deb = sorted((work / "debs").glob(f"{name}_*.deb"))[-1]
        versions[name] = deb.name.split("_")[1]
        run(["dpkg-deb", "-x", str(deb), str(work / "deb")])
    (work / "sdists").mkdir(exist_ok=True)
    for spec in SDISTS:
        name, version = spec.split("==")
        if not list((work / "sdists").glob(f"{name}-{version}.tar.gz")) and not list(
            (work / "sdists").glob(f"{name.lower()}-{version}.tar.gz")
        ):
            run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                 "-q", "-d", str(work / "sdists"), spec])  # fmt: skip
        versions[name] = version
    (work / "sdist").mkdir(exist_ok=True)
    for tar in (work / "sdists").glob("*.tar.gz"):
        run(["tar", "xzf", str(tar), "-C", str(work / "sdist")])
    if shutil.which("pandoc") is None:
        run(["apt-get", "install", "-y", "-q", "pandoc"])
    versions["pandoc"] = run(["pandoc", "--version"]).stdout.split("\n")[0]
    if target.exists():
        shutil.rmtree(target)
    for src, dst in FILES:
        s, d = work / src, target / dst
        if not s.is_file():
            raise SystemExit(f"error: {s} is missing (another release of its package?)")
        d.parent.mkdir(parents=True, exist_ok=True)
        if dst.endswith(".docx"):
            run(["pandoc", "-f", "rst", "-t", "docx", "-o", str(d), str(s)])
        elif src.endswith(".gz"):
            d.write_bytes(run(["gzip", "-dc", str(s)], text=False).stdout)
        else:
            shutil.copyfile(s, d)
    return versions


TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> dict[int, float]:
    """CPU seconds (user + system) so far of every process in process group `pgid`."""
    out: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[2]) == pgid:
            out[int(name)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


class Timed:
    """A running `tether ingest`, its stderr lines timestamped (seconds since its start) and
    the CPU seconds of its process group (it and its pool's workers) sampled every 0.25 s:
    CPU time moves much less than wall time with what else runs on the machine."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.began = time.perf_counter()
        self.proc = subprocess.Popen(
            [*TETHER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env, start_new_session=True,
        )  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self.out = ""
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._err.start()
        self._cpu: dict[int, float] = {}
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while self.proc.poll() is None:
            for pid, seconds in group_cpu(self.proc.pid).items():
                self._cpu[pid] = max(seconds, self._cpu.get(pid, 0.0))
            time.sleep(0.25)

    @property
    def cpu(self) -> float:
        """CPU seconds of the run's processes, as last sampled."""
        self._sampler.join()
        return round(sum(self._cpu.values()), 1)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append((round(time.perf_counter() - self.began, 1), line.rstrip()))

    def wait(self) -> float:
        assert self.proc.stdout is not None
        self.out = self.proc.stdout.read()
        rc = self.proc.wait()
        self._err.join()
        seconds = time.perf_counter() - self.began
        if rc != 0:
            tail = "\n".join(line for _, line in self.lines[-20:])
            raise SystemExit(f"tether ingest exited {rc}:\n{tail}")
        return seconds

    def kill_at(self, cpu_seconds: float) -> float:
        """SIGKILL the run's process group once its processes have used `cpu_seconds` of CPU
        (a point in the work, whatever else the machine runs), or when it ends; its wall
        seconds."""
        while sum(self._cpu.values()) < cpu_seconds and self.proc.poll() is None:
            time.sleep(0.2)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._err.join()
        return time.perf_counter() - self.began


def env_for(cache: str) -> dict[str, str]:
    env = dict(os.environ, TETHER_VECTOR_CACHE=cache, PYTHONUNBUFFERED="1")
    env.pop("TETHER_INDEX", None)
    return env


PHASE = re.compile(r"^(?P<label>[A-Za-z][^:]*?)(?::| \d| …| \.\.\.)")


def phases(lines: list[tuple[float, str]]) -> list[dict[str, Any]]:
    """The first and last time each phase's label was logged (the label: text before ':')."""
    seen: dict[str, list[float]] = {}
    for at, line in lines:
        m = PHASE.match(line)
        if m:
            seen.setdefault(m.group("label").strip(), []).append(at)
    return [
        {"phase": k, "first_s": v[0], "last_s": v[-1], "lines": len(v)} for k, v in seen.items()
    ]


def contents(index: Path) -> dict[str, Any]:
    """Files, chunks and words per format, read from the index."""
    from tether.stores.sqlite import SqliteStore

    store = SqliteStore(index)
    files: Counter[str] = Counter()
    chunks: Counter[str] = Counter()
    words: Counter[str] = Counter()
    seen: set[str] = set()
    for c in store.chunks():
        fmt = c.meta.format
        if c.meta.source not in seen:
            seen.add(c.meta.source)
            files[fmt] += 1
        chunks[fmt] += 1
        words[fmt] += len(c.text.split())
    store.close()
    return {f: {"files": files[f], "chunks": chunks[f], "words": words[f]} for f in sorted(files)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--root", type=Path, default=Path(os.environ.get("TETHER_CORPORA", "/work/corpora"))
    )
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--kills", default="0.5,0.9")
    args = ap.parse_args()
    load_before = load_average()
    result: dict[str, Any] = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
    }  # fmt: skip
    result["versions"] = build(args.root)
    folder = args.root / "mixed"
    result["files"] = sum(1 for p in folder.rglob("*") if p.is_file())
    print(f"built {folder}: {result['files']} files", flush=True)
    if args.build_only:
        return
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        common = [str(folder), "--default-access", "public", "--json"]

        def ingest(
            name: str, extra: list[str], cache: str = "off", index: str = ""
        ) -> dict[str, Any]:
            before = load_average()
            t = Timed(["ingest", *common, "--index", index or str(tmp / f"{name}.sqlite"), *extra],
                      env_for(cache))  # fmt: skip
            seconds = t.wait()
            report = json.loads(t.out)
            row = {"seconds": round(seconds, 1), "cpu_s": t.cpu, "load": [before, load_average()],
                   "reported_seconds": report["seconds"],
                   "calibration_seconds": report.get("calibration_seconds", 0.0),
                   "chunks": report["chunks_written"], "problems": report["problems"],
                   "phases": phases(t.lines), "log": t.lines}  # fmt: skip
            print(f"{name}: {row['seconds']} s, load {row['load']}", flush=True)
            return row

        result["parse_only"] = ingest("parse", ["--no-embed"])
        whole = ingest("whole", [], cache=str(tmp / "cache-whole"))  # the default: a cache
        result["whole"] = whole
        result["contents"] = contents(tmp / "whole.sqlite")
        kills = []
        for f in [float(x) for x in args.kills.split(",") if x]:
            cache = str(tmp / f"cache-{f}")
            index = tmp / f"kill-{f}.sqlite"
            before = load_average()
            t = Timed(["ingest", *common, "--index", str(index)], env_for(cache))
            killed = t.kill_at(f * whole["cpu_s"])
            killed_cpu = t.cpu
            rerun = ingest(f"rerun-{f}", [], cache=cache, index=str(index))
            redone = (killed + rerun["seconds"] - whole["seconds"]) / whole["seconds"]
            redone_cpu = (killed_cpu + rerun["cpu_s"] - whole["cpu_s"]) / whole["cpu_s"]
            kills.append({"at": f, "killed_after_s": round(killed, 1), "killed_cpu_s": killed_cpu,
                          "load_before": before, "rerun_s": rerun["seconds"],
                          "rerun_cpu_s": rerun["cpu_s"], "rerun_load": rerun["load"],
                          "redone": round(redone, 3), "redone_cpu": round(redone_cpu, 3),
                          "killed_log_tail": t.lines[-3:]})  # fmt: skip
            print(f"kill at {f}: killed {killed:.1f} s ({killed_cpu} CPU s), rerun "
                  f"{rerun['seconds']} s ({rerun['cpu_s']} CPU s), redone {redone:.1%} of the "
                  f"wall time, {redone_cpu:.1%} of the CPU time", flush=True)  # fmt: skip
        result["kills"] = kills
    write_result("ingest_mixed", result, render, load_before=load_before, folder=OUT)
    print((OUT / "ingest_mixed.md").read_text())


def render(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.write_result`)."""
    r = record["figures"]
    w = r["whole"]
    c = r["contents"]
    words = sum(v["words"] for v in c.values())
    lines = [
        "# Ingest of a mixed public collection (six formats)",
        "",
        f"Generated by `bench/ingest/ingest_mixed.py` on {r['when']}; {r['machine']['platform']}, "
        f"{r['machine']['cpus']} CPUs, Python {r['machine']['python']}. Load averages (1 min) "
        "are recorded per run. Packages: "
        + ", ".join(f"{k} {v}" for k, v in r["versions"].items()) + ".",
        "",
        "| format | files | chunks | words |",
        "|---|---|---|---|",
        *[f"| {f} | {v['files']} | {v['chunks']} | {v['words']} |" for f, v in c.items()],
        f"| all | {sum(v['files'] for v in c.values())} | {sum(v['chunks'] for v in c.values())}"
        f" | {words} |",
        "",
        "| run | seconds | CPU s | calibration s | load before → after |",
        "|---|---|---|---|---|",
        f"| parse only (`--no-embed`) | {r['parse_only']['seconds']} | {r['parse_only']['cpu_s']} | "
        f"{r['parse_only']['calibration_seconds']} | {r['parse_only']['load'][0]} → "
        f"{r['parse_only']['load'][1]} |",
        f"| whole ingest (embeddings, sentence vectors, calibration; an empty vector cache) | {w['seconds']} | {w['cpu_s']} | "
        f"{w['calibration_seconds']} ({w['calibration_seconds'] / w['seconds']:.1%}) | "
        f"{w['load'][0]} → {w['load'][1]} |",
        "",
        "Phases of the whole ingest (its log lines off a terminal, timestamped on arrival):",
        "",
        "| phase | first line s | last line s | lines |",
        "|---|---|---|---|",
        *[f"| {p['phase']} | {p['first_s']} | {p['last_s']} | {p['lines']} |" for p in w["phases"]],
        "",
        "Killed (SIGKILL) and rerun, each with a fresh index and vector cache; redone = (killed "
        "run + rerun − whole ingest) / whole ingest, in wall time and in CPU time (the CPU "
        "seconds of `tether ingest` and its pool's workers, sampled every 0.25 s: what other "
        "jobs on the machine move least):",
        "",
        "| killed at (share of the whole ingest's CPU s) | killed after s (CPU s) | rerun s "
        "(CPU s) | redone, wall | redone, CPU |",
        "|---|---|---|---|---|",

        *[f"| {k['at']:.0%} | {k['killed_after_s']} ({k['killed_cpu_s']}) | {k['rerun_s']} "
          f"({k['rerun_cpu_s']}) | {k['redone']:.1%} | {k['redone_cpu']:.1%} |"
          for k in r["kills"]],
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
