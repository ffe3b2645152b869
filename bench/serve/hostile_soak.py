"""A bounded soak of `tether serve` under a hostile client mix, over loopback (run on demand:
`python bench/serve/hostile_soak.py [--seconds 120] [--index FILE]`; writes
bench/results/hostile_soak.json, with the run's date, commit, machine and load, and
hostile_soak.md rendered from it).

Starts `tether serve` on 127.0.0.1 on a free port (`serve_load.start_server`: anonymous
callers as the public audience, the extractive answerer so no model loads, no request rate
limit, the server's own header/body timeouts and caps), over a copy of `--index` (or of the
bundled demo index built in a temporary folder), so the asks it records never touch the
original. Then two phases of `--seconds / 2` each:

1. **unloaded**: `--search-clients` closed-loop clients on POST /v1/search (bm25 and rerank
   alternately, the bundled questions), latencies recorded;
2. **under attack**: the same search clients, and in a process of its own (so the attackers'
   CPU time is not counted in the search clients' latencies) the hostile mix: /v1/check
   bodies near the size and claim caps and over them, many claims citing many passages,
   bodies sent one byte a second, request headers sent one byte a second, bursts of wrong
   bearer keys, deeply nested JSON bodies, over-long questions and queries, concurrent
   /v1/ask.

Every hostile attempt is judged: a **defect** is a 5xx (but a 503 with Retry-After: a full
check or model line, the designed refusal), no answer at all, an answer later than the
server's timeouts allow (a hang), or an error body that is not one line. The server's stderr
is kept and its tracebacks and ERROR lines counted. The server is killed at the end, whatever
happens.

What it cannot do: client and server share the machine (and other jobs on it; the load
average is recorded); the extractive answerer writes short answers, so the hostile model
endpoint (a long reply) is not part of the mix (tests cover its caps); every client comes
from 127.0.0.1, so all share one failed-authentication bucket.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import BENCH as HERE
from bench.harness import (
    QUESTIONS,
    free_port,
    load_average,
    load_averages,
    make_record,
    percentile,
    render_page,
    start_server,
    wait_ready,
    write_record,
)  # fmt: skip

MAX_BODY = 64 * 1024  # tether.server.api.ServeConfig.max_body
MAX_CLAIMS = 30  # tether.answering.answer
MAX_CLAIM_CHARS = 2_000
MAX_QUESTION_CHARS = 2_000  # tether.answering.gate
DEADLINE_S = 60.0  # tether serve --deadline (default)
SLACK_S = 15.0  # how much later than a timeout an answer may come before it is a hang
GOAL_RATIO = 2.0  # search p95 under attack / unloaded


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "requests": len(values),
        "p50": statistics.median(values) if values else float("nan"),
        "p95": percentile(values, 95),
    }


# ---- the plain search clients ----------------------------------------------------------


async def searches(base: str, questions: list[str], clients: int, seconds: float) -> dict:
    """`clients` closed-loop clients on /v1/search for `seconds`, bm25 and rerank
    alternately (client n: rerank when n is odd); latencies in ms per method."""
    times: dict[str, list[float]] = {"bm25": [], "rerank": []}
    errors: Counter[str] = Counter()
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def loop(n: int, client: httpx.AsyncClient) -> None:
        method = "rerank" if n % 2 else "bm25"
        i = n
        while time.monotonic() < stop:
            body = {"query": questions[i % len(questions)], "as_of": "none", "method": method}
            i += clients
            began = time.perf_counter()
            try:
                r = await client.post(base + "/v1/search", json=body)
            except httpx.HTTPError as exc:
                errors[f"{method}: {type(exc).__name__}"] += 1
                continue
            if r.status_code != 200:
                errors[f"{method}: HTTP {r.status_code}"] += 1
                continue
            times[method].append((time.perf_counter() - began) * 1000)

    async with httpx.AsyncClient(timeout=DEADLINE_S + SLACK_S, limits=limits) as client:
        await asyncio.gather(*(loop(n, client) for n in range(clients)))
    both = times["bm25"] + times["rerank"]
    return {
        "all": summary(both), "bm25": summary(times["bm25"]),
        "rerank": summary(times["rerank"]), "errors": dict(errors),
    }  # fmt: skip


# ---- the hostile mix --------------------------------------------------------------------


class Tally:
    """Attempts, statuses and defects per kind of attack."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()
        self.statuses: dict[str, Counter[str]] = {}
        self.defects: list[dict[str, Any]] = []
        self.slowest: dict[str, float] = {}

    def record(
        self, kind: str, status: int | str, body: bytes, elapsed: float, limit: float,
        headers: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.attempts[kind] += 1
        self.statuses.setdefault(kind, Counter())[str(status)] += 1
        self.slowest[kind] = max(self.slowest.get(kind, 0.0), elapsed)
        reason = judge(status, body, elapsed, limit, headers or {})
        if reason:
            text = body[:200].decode(errors="replace")
            self.defects.append({"kind": kind, "status": status, "why": reason,
                                 "seconds": round(elapsed, 1), "body": text})  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempts": dict(self.attempts),
            "statuses": {k: dict(v) for k, v in self.statuses.items()},
            "defects": self.defects,
            "slowest_s": {k: round(v, 1) for k, v in self.slowest.items()},
        }


def judge(
    status: int | str, body: bytes, elapsed: float, limit: float, headers: dict[str, str]
) -> str:
    """Why this answer is a defect ("" when it is not)."""
    if isinstance(status, str):
        return f"no answer ({status})"
    if elapsed > limit + SLACK_S:
        return f"answered after {elapsed:.0f} s (limit {limit:.0f} s)"
    if status >= 500 and not (status == 503 and "retry-after" in headers):
        return f"HTTP {status}"
    if status >= 400:
        text = body.decode(errors="replace").strip()
        if "\n" in text or "Traceback" in text:
            return "error body of more than one line"
        try:
            detail = json.loads(text).get("detail", "")
        except (ValueError, AttributeError):
            return "" if text else "empty error body"
        if not isinstance(detail, str) or "\n" in detail or len(detail) > 300:
            return "error detail not one short line"
    return ""


async def post(
    client: httpx.AsyncClient, tally: Tally, kind: str, url: str, *, limit: float,
    content: bytes | None = None, body: Any = None, headers: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """POST and record the answer (a transport error or a timeout is recorded as such)."""
    began = time.monotonic()
    try:
        r = await client.post(
            url, content=content, json=body, headers=headers, timeout=limit + SLACK_S
        )
    except httpx.HTTPError as exc:
        tally.record(kind, type(exc).__name__, b"", time.monotonic() - began, limit)
        return
    tally.record(kind, r.status_code, r.content, time.monotonic() - began, limit, dict(r.headers))


async def raw(
    tally: Tally, kind: str, port: int, pieces: list[bytes], every: float, limit: float
) -> None:
    """Send `pieces` over a raw connection, one every `every` seconds, while reading the
    answer (until its Content-Length is in, or the connection closes); record it."""
    began = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def send() -> None:
        try:
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(every)
        except (ConnectionError, OSError):
            pass  # the server answered and closed: expected

    sender = asyncio.create_task(send())
    data = b""
    status: int | str = "closed without an answer"
    try:
        async with asyncio.timeout(limit + SLACK_S):
            while True:
                chunk = await reader.read(65536)
                data += chunk
                head, sep, rest = data.partition(b"\r\n\r\n")
                if sep:
                    lines = head.decode(errors="replace").split("\r\n")
                    status = int(lines[0].split()[1])
                    length = next((int(x.split(":")[1]) for x in lines
                                   if x.lower().startswith("content-length:")), None)  # fmt: skip
                    if length is not None and len(rest) >= length:
                        data = rest
                        break
                if not chunk:
                    data = rest
                    break
    except TimeoutError:
        status = "timeout"
    except (ConnectionError, OSError) as exc:
        status = type(exc).__name__
    finally:
        sender.cancel()
        writer.close()
    tally.record(kind, status, data, time.monotonic() - began, limit)


def texts_and_ids(hits: list[dict]) -> tuple[list[str], list[str]]:
    return [h["text"] for h in hits], [h["chunk_id"] for h in hits]


def claim_bodies(texts: list[str], ids: list[str], rng: random.Random) -> dict[str, Any]:
    """The /v1/check bodies: near the caps, over them, many claims citing many passages."""
    pool = " ".join(texts)

    def claim(chars: int) -> str:
        start = rng.randrange(max(1, len(pool) - chars))
        return (pool[start : start + chars] + " x" * chars)[:chars]

    near = {"claims": [], "passage_ids": ids[:10], "as_of": "none"}
    while True:  # as many claims of the largest size as fit in the body limit
        near["claims"].append({"text": claim(MAX_CLAIM_CHARS - 10), "chunk_ids": ids[:3]})
        if len(json.dumps(near)) > MAX_BODY - 512 or len(near["claims"]) == MAX_CLAIMS:
            near["claims"].pop()
            break
    many = {"claims": [{"text": claim(40), "chunk_ids": (ids * 50)[:50]}
                       for _ in range(MAX_CLAIMS)], "passage_ids": (ids * 50)[:50],
            "as_of": "none"}  # fmt: skip
    too_many = {**many, "claims": many["claims"] + many["claims"][:1]}
    too_long = {"claims": [{"text": claim(MAX_CLAIM_CHARS + 1), "chunk_ids": ids[:1]}],
                "passage_ids": ids[:3]}  # fmt: skip
    return {"near": near, "many": many, "too_many": too_many, "too_long": too_long}


def deep_bodies() -> list[bytes]:
    """Deeply nested JSON, each under the body limit."""
    n = 20_000
    return [
        b"[" * n + b"]" * n,
        b'{"query": ' + b"[" * n + b"]" * n + b"}",
        b'{"a":' * 6_000 + b"1" + b"}" * 6_000,
        b'{"claims": [{"text": "x", "chunk_ids": ' + b"[" * n + b"]" * n + b"}]}",
    ]


async def hostile(base: str, port: int, seconds: float, timeouts: dict[str, float]) -> dict:
    """The hostile mix for `seconds` (each attacker finishes its attempt under way)."""
    rng = random.Random(25)
    tally = Tally()
    stop = time.monotonic() + seconds
    questions = [json.loads(x)["question"] for x in QUESTIONS.read_text().splitlines()]
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=32)
    async with httpx.AsyncClient(limits=limits) as client:
        r = await client.post(base + "/v1/search",
                              json={"query": questions[0], "k": 20, "as_of": "none"})  # fmt: skip
        texts, ids = texts_and_ids(r.json())
        checks = claim_bodies(texts, ids, rng)
        deep = deep_bodies()
        deadline = DEADLINE_S
        body_s, head_s = timeouts["body"], timeouts["header"]

        async def forever(step: Callable[[], Awaitable[None]], pause: float = 0.0) -> None:
            while time.monotonic() < stop:
                await step()
                await asyncio.sleep(pause)

        async def big_check() -> None:
            await post(client, tally, "check near the caps", base + "/v1/check",
                       body=checks["near"], limit=deadline)  # fmt: skip

        async def many_claims() -> None:
            await post(client, tally, "check: 30 claims x 50 citations", base + "/v1/check",
                       body=checks["many"], limit=deadline)  # fmt: skip

        async def over_caps() -> None:
            for name in ("too_many", "too_long"):
                await post(client, tally, f"check over the caps ({name})", base + "/v1/check",
                           body=checks[name], limit=5)  # fmt: skip
            await post(client, tally, "body over 64 KiB", base + "/v1/check",
                       content=b'{"claims": "' + b"x" * MAX_BODY + b'"}',
                       headers={"content-type": "application/json"}, limit=5)  # fmt: skip

        async def slow_body() -> None:
            body = json.dumps({"query": "refund policy", "as_of": "none"}).encode()
            head = (f"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                    f"\r\nContent-Length: {len(body) + 100}\r\n\r\n").encode()  # fmt: skip
            pieces = [head] + [body[i : i + 1] for i in range(len(body))] + [b" "] * 100
            await raw(tally, "body one byte a second", port, pieces, 1.0, body_s)

        async def header_dribble() -> None:
            head = b"POST /v1/search HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 200
            pieces = [head[i : i + 1] for i in range(len(head))]
            await raw(tally, "headers one byte a second", port, pieces, 1.0, head_s)

        async def wrong_keys() -> None:
            await asyncio.gather(*(
                post(client, tally, "wrong bearer key", base + "/v1/search",
                     body={"query": "refund"}, limit=5,
                     headers={"Authorization": f"{scheme} wrong-{rng.getrandbits(64):x}"})
                for scheme in ["Bearer"] * 8 + ["Basic", "Token"]
            ))  # fmt: skip

        async def deep_json() -> None:
            for path in ("/v1/search", "/v1/check", "/v1/ask"):
                await post(client, tally, "deeply nested JSON", base + path,
                           content=rng.choice(deep),
                           headers={"content-type": "application/json"}, limit=10)  # fmt: skip

        async def long_text() -> None:
            q = (rng.choice(questions) + " ") * 200
            await post(client, tally, "question over 2,000 chars", base + "/v1/ask",
                       body={"question": q[: MAX_QUESTION_CHARS + 1]}, limit=5)  # fmt: skip
            await post(client, tally, "search query of 2,000 chars", base + "/v1/search",
                       body={"query": q[:MAX_QUESTION_CHARS], "method": "rerank",
                             "as_of": "none"}, limit=deadline)  # fmt: skip

        async def asks() -> None:
            q = rng.choice(questions)
            if rng.random() < 0.3:
                q = (q + " ") * 200
            await post(client, tally, "concurrent /v1/ask", base + "/v1/ask",
                       body={"question": q[:MAX_QUESTION_CHARS], "as_of": "none",
                             "stream": rng.random() < 0.3}, limit=deadline)  # fmt: skip

        await asyncio.gather(
            *(forever(big_check) for _ in range(3)), forever(many_claims, 0.5),
            forever(over_caps, 0.5), *(forever(slow_body) for _ in range(4)),
            *(forever(header_dribble) for _ in range(4)), forever(wrong_keys, 1.0),
            forever(deep_json, 0.3), forever(long_text, 0.5), *(forever(asks) for _ in range(4)),
        )  # fmt: skip
        health = await client.get(base + "/healthz", timeout=10)
    return {**tally.as_dict(), "healthz_after": health.status_code}


def hostile_process(base: str, port: int, seconds: float, timeouts: dict, out: Any) -> None:
    try:
        out.put(asyncio.run(hostile(base, port, seconds, timeouts)))
    except Exception as exc:  # the attacker itself failed: say so, do not hang the parent
        out.put({"error": f"{type(exc).__name__}: {exc}"})


# ---- the run ----------------------------------------------------------------------------


def server_log(path: Path) -> dict[str, Any]:
    text = path.read_text(errors="replace") if path.exists() else ""
    lines = text.splitlines()
    return {
        "tracebacks": text.count("Traceback (most recent call last)"),
        "error_lines": sum(1 for x in lines if "ERROR" in x),
        "lines": len(lines),
        "tail": lines[-20:],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = [json.loads(x)["question"] for x in QUESTIONS.read_text().splitlines()]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    timeouts = {"header": args.header_timeout, "body": args.body_timeout}
    half = args.seconds / 2
    with tempfile.TemporaryDirectory(prefix="tether-hostile-") as tmp:
        folder = Path(tmp)
        index = None
        if args.index:
            index = folder / "index.sqlite"
            shutil.copy(args.index, index)
        log = folder / "server.stderr"
        extra = ("--header-timeout", str(args.header_timeout),
                 "--body-timeout", str(args.body_timeout))  # fmt: skip
        with log.open("wb") as err:
            server = start_server(index, port, folder, extra, stderr=err)
        try:
            asyncio.run(wait_ready(base))
            loads = {"start": load_averages()}
            asyncio.run(searches(base, questions, 2, 3))  # warm-up (loads the reranker)
            began = time.monotonic()
            unloaded = asyncio.run(searches(base, questions, args.search_clients, half))
            loads["after unloaded"] = load_averages()
            out = mp.get_context("spawn").Queue()
            attacker = mp.get_context("spawn").Process(
                target=hostile_process, args=(base, port, half, timeouts, out)
            )
            attacker.start()
            attacked = asyncio.run(searches(base, questions, args.search_clients, half))
            loads["after attacked"] = load_averages()
            grace = DEADLINE_S + SLACK_S + max(timeouts.values()) + 30
            try:
                attacks = out.get(timeout=grace)
            except Exception:
                attacks = {"error": f"the attackers did not report within {grace:.0f} s"}
            attacker.join(10)
            if attacker.is_alive():
                attacker.kill()
            elapsed = time.monotonic() - began
        finally:
            server.kill()
            server.wait(30)
        log_summary = server_log(log)
    return {
        "when": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "seconds": args.seconds, "measured_s": round(elapsed, 1),
        "search_clients": args.search_clients, "timeouts_s": timeouts,
        "index": "a copy of " + str(args.index) if args.index else "the demo index, built",
        "cpus": os.cpu_count(), "load": loads, "unloaded": unloaded, "attacked": attacked,
        "hostile": attacks, "server_log": log_summary,
    }  # fmt: skip


def render(r: dict[str, Any]) -> str:
    h = r["hostile"]
    un, at = r["unloaded"], r["attacked"]
    lines = [
        "# `tether serve` under a hostile client mix (loopback)",
        "",
        f"`python bench/serve/hostile_soak.py --seconds {r['seconds']:g}`, {r['when']}:"
        f" {r['index']}, the extractive answerer, anonymous callers (public), no request rate"
        f" limit, header timeout {r['timeouts_s']['header']:g} s, body timeout"
        f" {r['timeouts_s']['body']:g} s, other limits the server's defaults."
        f" {r['search_clients']} closed-loop search clients (half bm25, half rerank) for"
        f" {r['seconds'] / 2:g} s alone, then {r['seconds'] / 2:g} s beside the hostile mix"
        " (run from a process of its own).",
        "",
        f"Machine: {r['cpus']} CPU cores shared with other jobs; load average (1, 5, 15 min)"
        + "; ".join(f" {k} {v}" for k, v in r["load"].items())
        + ".",
        "",
        "## Plain /v1/search",
        "",
        "| method | unloaded: requests | p50 ms | p95 ms | under attack: requests | p50 ms"
        " | p95 ms | p95 ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in ("bm25", "rerank", "all"):
        a, b = un[m], at[m]
        ratio = b["p95"] / a["p95"] if a["p95"] else float("nan")
        lines.append(
            f"| {m} | {a['requests']} | {a['p50']:.0f} | {a['p95']:.0f} | {b['requests']}"
            f" | {b['p50']:.0f} | {b['p95']:.0f} | {ratio:.2f}x |"
        )
    ratio = at["all"]["p95"] / un["all"]["p95"] if un["all"]["p95"] else float("nan")
    verdict = "met" if ratio <= GOAL_RATIO else "**not met**"
    errs = {**{f"unloaded {k}": v for k, v in un["errors"].items()},
            **{f"attacked {k}": v for k, v in at["errors"].items()}}  # fmt: skip
    lines += [
        "",
        f"Goal: search p95 under attack within {GOAL_RATIO:g}x its unloaded p95: {verdict}"
        f" ({ratio:.2f}x over both methods). Search errors: "
        + (", ".join(f"{k}: {v}" for k, v in errs.items()) or "none")
        + ".",
        "",
        "## Hostile attempts",
        "",
    ]
    if "error" in h:
        lines += [f"The attackers failed: {h['error']}", ""]
    else:
        total = sum(h["attempts"].values())
        lines += ["| attack | attempts | statuses | slowest s |", "|---|---:|---|---:|"]
        for kind, n in h["attempts"].items():
            statuses = ", ".join(f"{s}: {c}" for s, c in sorted(h["statuses"][kind].items()))
            lines.append(f"| {kind} | {n} | {statuses} | {h['slowest_s'][kind]} |")
        lines += [
            "",
            f"**{total} hostile attempts, {len(h['defects'])} defects** (a defect: a 5xx other"
            " than a 503 with Retry-After from a full line, no answer, an answer later than the"
            f" timeouts plus {SLACK_S:g} s, an error body that is not one line);"
            f" /healthz after the attack: {h['healthz_after']}.",
            "",
        ]
        for d in h["defects"][:20]:
            lines.append(f"- {d['kind']}: {d['why']} after {d['seconds']} s: `{d['body'][:120]}`")
    log = r["server_log"]
    lines += [
        "",
        f"Server stderr: {log['tracebacks']} tracebacks, {log['error_lines']} ERROR lines"
        f" ({log['lines']} lines in all).",
        "",
    ]
    if log["tracebacks"] or log["error_lines"]:
        lines += ["```", *log["tail"], "```", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120, help="both phases together")
    parser.add_argument("--search-clients", type=int, default=4)
    parser.add_argument("--index", type=Path, default=None, help="copied; default: the demo")
    parser.add_argument("--header-timeout", type=float, default=10.0)
    parser.add_argument("--body-timeout", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "hostile_soak.md")
    args = parser.parse_args()
    load_before = load_average()
    result = run(args)
    record = make_record(args.out.stem, result, load_before)
    write_record(args.out.with_suffix(".json"), record)
    text = render_page(record, lambda r: render(r["figures"]))
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
