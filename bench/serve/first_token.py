"""How long a help-desk agent waits for the local model's answer on the page (run on demand:
`python bench/serve/first_token.py [--questions 4]`; writes bench/results/first_token.json, with the
run's date, commit, machine and load, and first_token.md rendered from it).

Starts `tether serve --demo` as its own process with the local model (TETHER_PROVIDER=local)
and a staff key, twice:
- with the warm-up (the default): the seconds until GET /readyz is 200, then each question
  streamed (POST /v1/ask with `stream`, as the page asks): seconds to the first event, to the
  first piece of draft text (`text`), to the `answer` event and to the `result`, with the
  prompt's and the reply's tokens;
- with `--no-warm`: the first question's seconds to its first piece of text and to its
  result (the model loads on that question).

What it cannot do: one machine at one moment (its load average is recorded); the demo's
bundled questions only; the local model's speed on this machine's cores, not a GPU's; each request's
prompt differs, so llama.cpp's prompt cache helps only with the shared instructions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import BENCH as HERE
from bench.harness import QUESTIONS, SRC, free_port, load_average, write_result


def bundled(count: int) -> list[str]:
    """The first `count` answerable public questions of the demo's set."""
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    kept = [r["question"] for r in rows
            if not r.get("abstain") and r.get("audience", "public") == "public"]  # fmt: skip
    return kept[:count]


def start(folder: Path, port: int, keys: Path, warm: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "TETHER_PROVIDER": "local"}
    command = [sys.executable, "-m", "tether", "--quiet", "serve", "--demo", "--port",
               str(port), "--keys", str(keys), "--rate", "0", "--deadline", "900",
               "--warm" if warm else "--no-warm"]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, env=env, stderr=subprocess.DEVNULL)


def wait_for(base: str, path: str, seconds: float = 1800) -> float:
    """Seconds until GET `path` answers 200."""
    began = time.monotonic()
    with httpx.Client() as client:
        while time.monotonic() - began < seconds:
            try:
                if client.get(base + path, timeout=5).status_code == 200:
                    return time.monotonic() - began
            except httpx.TransportError:
                pass
            time.sleep(0.25)
    raise SystemExit(f"{path} did not answer 200 within {seconds:g} s")


def ask(base: str, key: str, question: str) -> dict:
    """One streamed question: seconds to each milestone, and the tokens."""
    body = {"question": question, "as_of": "none", "stream": True}
    marks: dict[str, float] = {}
    result: dict = {}
    began = time.monotonic()
    headers = {"Authorization": f"Bearer {key}"}
    with (
        httpx.Client(timeout=900) as client,
        client.stream("POST", base + "/v1/ask", json=body, headers=headers) as response,
    ):
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
                marks.setdefault("first_event", time.monotonic() - began)
                marks.setdefault(name, time.monotonic() - began)
            elif line.startswith("data: ") and name == "result":
                result = json.loads(line[6:])
    completion = result.get("completion") or {}
    return {
        "question": question,
        "status": result.get("status"),
        "mode": (result.get("answer") or {}).get("mode"),
        "first_event_s": marks.get("first_event"),
        "first_text_s": marks.get("text"),
        "answer_s": marks.get("answer"),
        "result_s": marks.get("result"),
        "prompt_tokens": completion.get("input_tokens"),
        "reply_tokens": completion.get("output_tokens"),
    }


def run(folder: Path, keys: Path, key: str, warm: bool, questions: list[str]) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    server = start(folder, port, keys, warm)
    try:
        up = wait_for(base, "/healthz")
        ready = wait_for(base, "/readyz") if warm else None
        asked = [ask(base, key, q) for q in questions]
    finally:
        server.terminate()
        server.wait(30)
    return {"warm": warm, "healthz_s": up, "readyz_s": ready,
            "since_start_s": time.monotonic() - began, "questions": asked}  # fmt: skip


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def report(record: dict[str, Any]) -> str:
    """The page of a run, from its JSON record (`harness.write_result`)."""
    warm, cold = record["figures"]["warm"], record["figures"]["cold"]
    load = (record["load"]["before"], record["load"]["after"])
    rows = warm["questions"]
    firsts = [r["first_text_s"] for r in rows if r["first_text_s"] is not None]
    lines = [
        "# First text of a local answer on the page",
        "",
        f"Run {record['date']} on {record['figures']['arch']},"
        f" {record['machine']['cpus']} cores; load average before/after {load[0]:.2f}/{load[1]:.2f}."
        " `python bench/serve/first_token.py` (the demo collection, the local model, a staff key,"
        " streamed as the page asks).",
        "",
        f"- Warm-up: /healthz after {fmt(warm['healthz_s'])} s, /readyz (models loaded)"
        f" after {fmt(warm['readyz_s'])} s.",
        f"- After the warm-up, first draft text: median {fmt(statistics.median(firsts) if firsts else None)} s"
        f" over {len(firsts)} answered questions (goal 3 s).",
        f"- Without the warm-up (`--no-warm`), the first question: first text after"
        f" {fmt(cold['questions'][0]['first_text_s'])} s, result after"
        f" {fmt(cold['questions'][0]['result_s'])} s.",
        "",
        "| question | status | mode | first event s | first text s | answer s | result s |"
        " prompt tokens | reply tokens |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['question']} | {r['status']} | {r['mode'] or '-'} | {fmt(r['first_event_s'])}"
            f" | {fmt(r['first_text_s'])} | {fmt(r['answer_s'])} | {fmt(r['result_s'])}"
            f" | {r['prompt_tokens'] or '-'} | {r['reply_tokens'] or '-'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=4)
    args = parser.parse_args()
    sys.path.insert(0, str(SRC))
    from tether.server.keys import add_key

    questions = bundled(args.questions)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        keys = folder / "keys.json"
        key = add_key(keys, "bench", "staff")
        warm = run(folder, keys, key, True, questions)
        cold = run(folder, keys, key, False, questions[:1])
    figures = {"warm": warm, "cold": cold, "arch": platform.machine()}
    out = write_result(
        "first_token", figures, report, load_before=load_before, folder=HERE / "results"
    )
    print(out.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
