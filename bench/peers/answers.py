"""Answers with citations, tether beside LlamaIndex's CitationQueryEngine, with the same model
through the same OpenAI-compatible endpoint (`make bench-peers-answers`, or `run.py --answers
N`); results appended to bench/results/peers.md and peers.json.

The model is tether's local one (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, loaded by
xllamacpp as `tether.providers.local` loads it), served on 127.0.0.1 by a small stdlib HTTP
server (`POST /v1/chat/completions`, `GET /v1/models`, and `GET /stats`: the usage of every
request served) in a subprocess run by a Python that has xllamacpp (`--server-python`). Every
request is decoded greedily (temperature 0, top-k 1, whatever the client sent).

The systems, on the bundled demo collection and its index (tether's chunks, e5 vectors):
- tether: `Workspace.ask` with its OpenAI-compatible provider pointed at the endpoint, k = 5,
  in the answer modes asked for (`--modes`; json is what `auto` picks for an OpenAI-compatible
  provider, select what it picks for the local provider: the model chooses passage sentences);
- llamaindex: `CitationQueryEngine` over the hybrid retriever of the retrieval comparison fed
  the same chunks and vectors, `OpenAILike` at the endpoint, top 5 after the question's date
  and audience filter (`systems/llamaindex_answers.py`). Its answer is cut into sentences;
  each sentence is a claim citing the chunks of its [n] markers (`citation_claims`), and the
  claims go through tether's verifier (`Workspace.check`, the embedding judge, as `ask` uses
  for an OpenAI-compatible provider). A second reading lets a marker closing a paragraph
  cover the uncited sentences before it (`carry`); `--rescore` scores a kept run again.
Both are scored by `tether.evaluation.answer_eval.score` (the keys of `eval --answers`).
Questions: the first N - R English public questions of kind `answerable` and the first R of
kind `unanswerable` (R = N // 4, at least 1), by ID.

What it cannot do: LlamaIndex has no refusal of its own; its answer counts as a refusal when
its first sentence says the sources do not answer, or when it has no [n] marker and a refusal
phrase (`is_refusal_text`), a rule that can misread an answer. The model is weak (1.5B,
4-bit); the point is the same model for both. One request at a time; timings are on a shared
2-core machine (the load average is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import date
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers.common import ROOT

K = 5
MAX_TOKENS = 400  # tether's answer request (answering/answer.py); LlamaIndex is given the same
TIMEOUT_S = 900.0

# ------------------------------------------------------------------ the loopback endpoint


def shape_request(body: dict[str, Any]) -> dict[str, Any]:
    """The body handed to xllamacpp: the client's, decoded greedily (temperature 0, top-k 1)
    with the prompt cache kept; a `json_schema` response format becomes llama.cpp's own
    `{"type": "json_object", "schema": ...}` (as `tether.providers.local` sends it). Streaming
    is refused (ValueError)."""
    if body.get("stream"):
        raise ValueError("streaming is not served")
    out = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    out |= {"temperature": 0.0, "top_k": 1, "cache_prompt": True}
    fmt = out.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        out["response_format"] = {"type": "json_object", "schema": schema} if schema else {
            "type": "json_object"}  # fmt: skip
    return out


def shape_response(response: Any, model: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for what xllamacpp returned: an `error` key becomes its code (400
    when it names none), anything not a dict a 502; a completion gets the OpenAI fields a
    client may require (id, object, created, model)."""
    if not isinstance(response, dict):
        return 502, {"error": {"message": f"the model returned {type(response).__name__}",
                               "type": "server_error", "code": 502}}  # fmt: skip
    if "error" in response:
        error = response["error"]
        if not isinstance(error, dict):
            error = {"message": str(error)}
        code = error.get("code")
        status = code if isinstance(code, int) and 400 <= code < 600 else 400
        return status, {"error": {"type": "invalid_request_error", **error, "code": status}}
    out = dict(response)
    out.setdefault("id", f"chatcmpl-{time.time_ns()}")
    out.setdefault("object", "chat.completion")
    out.setdefault("created", int(time.time()))
    out["model"] = model  # xllamacpp names the file; the client asked for this name
    return 200, out


def handler_class(
    complete: Callable[[dict[str, Any]], Any], model: str, log: list[dict[str, Any]]
) -> type[BaseHTTPRequestHandler]:
    """A request handler forwarding chat completions to `complete` (xllamacpp's
    `handle_chat_completions`, or a fake in the tests) and logging each one's usage."""

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": model, "object": "model", "created": 0, "owned_by": "local"}]})  # fmt: skip
            elif self.path.rstrip("/") == "/stats":
                self._send(200, {"requests": log})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}", "code": 404}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}", "code": 404}})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = shape_request(json.loads(self.rfile.read(length) or b"{}"))
            except (ValueError, json.JSONDecodeError) as exc:
                self._send(400, {"error": {"message": str(exc), "code": 400}})
                return
            began = time.perf_counter()
            try:
                status, out = shape_response(complete(body), model)
            except Exception as exc:  # the model failed: the client sees a 500, not a hang
                status, out = 500, {"error": {"message": str(exc), "code": 500}}
            usage = out.get("usage") or {}
            timings = out.get("timings") or {}
            log.append({
                "status": status, "seconds": time.perf_counter() - began,
                "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                "completion_tokens": int(usage.get("completion_tokens") or 0),
                "prompt_ms": float(timings.get("prompt_ms") or 0.0),
                "predicted_ms": float(timings.get("predicted_ms") or 0.0),
            })  # fmt: skip
            self._send(status, out)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def start_server(
    complete: Callable[[dict[str, Any]], Any], model: str, port: int = 0
) -> tuple[HTTPServer, threading.Thread]:
    """An HTTP server on 127.0.0.1 (one request at a time) serving `complete`, running in a
    daemon thread; `server.server_address[1]` is its port. Stop it with `server.shutdown()`."""
    server = HTTPServer(("127.0.0.1", port), handler_class(complete, model, []))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def serve(port: int) -> None:
    """Load the local model as tether does and serve it until killed; prints `READY <port>
    <model>` once listening."""
    from tether.config import load_settings
    from tether.providers.local import LocalModels, LocalProvider

    settings = load_settings()
    local = LocalProvider(threads=settings.local_threads, cache_dir=settings.model_cache)
    xserver, seconds = LocalModels().server(local.model_path, local.n_ctx, local.threads)
    server, thread = start_server(xserver.handle_chat_completions, local.model, port)
    print(f"READY {server.server_address[1]} {local.model} threads={local.threads} "
          f"load_s={seconds or 0:.1f}", flush=True)  # fmt: skip
    thread.join()


class Endpoint:
    """The serving subprocess, started by `python answers.py --serve` under `python`."""

    def __init__(self, python: str, env: dict[str, str] | None = None) -> None:
        cmd = [python, str(Path(__file__).resolve()), "--serve"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "READY":
            self.proc.kill()
            raise RuntimeError(f"the model server did not start (exit {self.proc.wait()})")
        self.port, self.model, self.info = int(line[1]), line[2], " ".join(line[3:])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> list[dict[str, Any]]:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=30) as r:
            return list(json.load(r)["requests"])

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ------------------------------------------------------------------ an answer's claims

_MARKER = re.compile(r"\[(?:source\s*)?(\d+(?:\s*,\s*(?:source\s*)?\d+)*)\]", re.IGNORECASE)
_LEADING = re.compile(r"^(?:[\s,;]*\[(?:source\s*)?\d+(?:\s*,\s*(?:source\s*)?\d+)*\])+[.,;:]?",
                      re.IGNORECASE)  # fmt: skip
REFUSAL = re.compile(
    r"(do(es)? not|don't|doesn't) (provide|contain|mention|include|specify|say|answer|state)"
    r"|no (information|mention|details?)|not (mentioned|specified|provided|stated)"
    r"|(cannot|can't|unable to) (be )?(answer|determine|find|provide)"
    r"|none of the (provided )?sources|i don't know",
    re.IGNORECASE,
)
SOURCES_SILENT = re.compile(
    r"\b(sources?|passages?|context|documents?|information)\b.*"
    r"\b(do(es)? not|don't|doesn't|no|not|none|cannot)\b"
    r"|\b(no|none of the)\b.*\b(sources?|passages?|context|documents?|information)\b",
    re.IGNORECASE,
)


def _numbers(marker: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", marker)]


def citation_claims(text: str, sources: Sequence[str], carry: bool = False) -> list[Any]:
    """One claim per sentence of `text`, citing the chunks its [n] markers name
    (`sources[n - 1]`; a number outside 1..len(sources) becomes `marker:[n]`, which the
    verifier flags as missing). Markers that open a sentence ("... wet. [2] Next") belong to
    the sentence before; the claim's text has its markers removed; a sentence with no words
    left is dropped. With `carry`, a sentence citing nothing takes the markers of the next
    sentence of its paragraph that cites something (a marker closing a paragraph read as
    covering the uncited sentences before it); sentences after the last marker cite nothing."""
    from tether.text import sentences
    from tether.types import Claim

    text = text.strip()
    parts: list[tuple[str, list[int]]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        first = len(parts)
        for a, b in sentences(paragraph):
            sentence = paragraph[a:b]
            lead = _LEADING.match(sentence)
            if lead and len(parts) > first:
                parts[-1][1].extend(_numbers(lead.group(0)))
                sentence = sentence[lead.end() :]
            cited = [n for m in _MARKER.finditer(sentence) for n in _numbers(m.group(1))]
            parts.append((sentence, cited))
        if carry:
            later: list[int] = []
            for i in range(len(parts) - 1, first - 1, -1):
                if parts[i][1]:
                    later = parts[i][1]
                elif later and re.search(r"\w", _MARKER.sub("", parts[i][0])):
                    parts[i] = (parts[i][0], list(later))
    claims = []
    for sentence, cited in parts:
        words = " ".join(_MARKER.sub("", sentence).split())
        words = re.sub(r"\s+([.,;:!?])", r"\1", words).strip()
        if not re.search(r"\w", words):
            continue
        ids = [sources[n - 1] if 1 <= n <= len(sources) else f"marker:[{n}]" for n in cited]
        claims.append(Claim(words, tuple(dict.fromkeys(ids))))
    return claims


def is_refusal_text(text: str) -> bool:
    """LlamaIndex's answer read as a refusal: empty, tether's own refusal sentence, a first
    sentence saying the sources do not answer (`SOURCES_SILENT`: it names the sources,
    passages, context or information and negates), or no [n] marker and a refusal phrase
    (`REFUSAL`)."""
    from tether.text import is_refusal, sentences

    stripped = text.strip()
    if not stripped or is_refusal(stripped):
        return True
    first = next((stripped[a:b] for a, b in sentences(stripped)), stripped)
    if SOURCES_SILENT.search(first):
        return True
    return not _MARKER.search(stripped) and bool(REFUSAL.search(stripped))


# ------------------------------------------------------------------ questions and runs


def pick_questions(questions: Sequence[Any], n: int) -> list[Any]:
    """The first n - r English public `answerable` questions and the first r `unanswerable`
    ones by ID (r = n // 4, at least 1; n = 1 gives one answerable question)."""
    r = 0 if n < 2 else max(1, n // 4)

    def first(kind: str, count: int) -> list[Any]:
        pool = [q for q in questions if q.kind == kind and q.language == "en"
                and q.audience == "public" and q.abstain == (kind == "unanswerable")]  # fmt: skip
        return sorted(pool, key=lambda q: q.id)[:count]

    return first("answerable", n - r) + first("unanswerable", r)


def _usage(log: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "requests": len(log),
        "prompt_tokens": sum(e["prompt_tokens"] for e in log),
        "completion_tokens": sum(e["completion_tokens"] for e in log),
        "model_s": sum(e["seconds"] for e in log),
    }


def _row_record(row: Any, checks: Sequence[Any], usage: dict[str, Any], extra: dict) -> dict:
    from tether.verify.flags import flag_kind

    kinds: dict[str, int] = {}
    for ch in checks:
        for f in {flag_kind(f) for f in ch.flags}:
            kinds[f] = kinds.get(f, 0) + 1
    cited = [cid for ch in checks for cid in ch.claim.chunk_ids]
    return {
        "id": row.id, "kind": row.kind, "abstain": row.abstain, "status": row.status,
        "refused_by": row.refused_by, "correct": row.correct, "correct_shown": row.correct_shown,
        "answer": row.answer, "seconds": row.seconds, "claims": len(checks),
        "citations": len(cited),
        "flagged_claims": sum(1 for ch in checks if ch.flags),
        "flagged_citations": sum(len(ch.claim.chunk_ids) for ch in checks if ch.flags),
        "flag_kinds": kinds,
        "reads_refusal": is_refusal_text(row.answer),
        "checks": [{"claim": ch.claim.text, "cites": list(ch.claim.chunk_ids),
                    "flags": [str(f) for f in ch.flags]} for ch in checks],
        **usage, **extra,
    }  # fmt: skip


def ask_tether(ws: Any, qs: Sequence[Any], mode: str, endpoint: Endpoint) -> list[dict]:
    from tether.answering.pipeline import AskOptions
    from tether.evaluation.answer_eval import score

    out = []
    for q in qs:
        opts = AskOptions(as_of=q.as_of, audience=q.audience, language=q.language, k=K,
                          mode=mode)  # fmt: skip
        before = len(endpoint.stats())
        began = time.perf_counter()
        result = ws.ask(q.question, opts, audit=False)
        seconds = time.perf_counter() - began
        usage = _usage(endpoint.stats()[before:])
        row = score(q, result, seconds)
        extra = {"mode": result.answer.mode if result.answer else mode,
                 "problem": result.problem.detail if result.problem else ""}  # fmt: skip
        out.append(_row_record(row, result.checks, usage, extra))
        print(f"  tether[{mode}] {q.id}: {row.status} correct={row.correct} "
              f"{seconds:.0f}s", file=sys.stderr, flush=True)  # fmt: skip
    return out


def ask_llamaindex(ws: Any, ref: Any, qs: Sequence[Any], endpoint: Endpoint) -> list[dict]:
    """LlamaIndex's answers as they came: text, the chunk ID of each source number,
    seconds, the endpoint's usage, and the error when the request failed."""
    from bench.peers.systems.llamaindex_answers import LlamaAnswers, chunk_nodes
    from tether.app import shared_models
    from tether.text import embed_text

    ids, matrix = ws.store.vectors()
    row_of = {cid: i for i, cid in enumerate(ids)}
    given = [(c.chunk_id, c.meta.source, embed_text(c), matrix[row_of[c.chunk_id]])
             for c in ws.store.chunks() if c.chunk_id in row_of]  # fmt: skip
    llama = LlamaAnswers(chunk_nodes(given), shared_models().embedder(), endpoint.base_url,
                         endpoint.model, MAX_TOKENS, TIMEOUT_S)  # fmt: skip
    out = []
    for q in qs:
        allowed = ref.allowed_sources(q)
        before = len(endpoint.stats())
        began = time.perf_counter()
        problem = ""
        try:
            text, sources = llama.ask(q.question, allowed.__contains__, K)
        except Exception as exc:  # a failed request is recorded, not fatal
            text, sources, problem = "", [], f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - began
        out.append({"id": q.id, "raw": text, "sources": sources, "problem": problem,
                    "seconds": seconds, **_usage(endpoint.stats()[before:])})  # fmt: skip
        print(f"  llamaindex {q.id}: {seconds:.0f}s", file=sys.stderr, flush=True)
    return out


def llamaindex_rows(ws: Any, qs: Sequence[Any], asked: Sequence[dict], carry: bool) -> list[dict]:
    """LlamaIndex's answers read as claims (`citation_claims`), checked by tether's verifier
    against the sources it was given, and scored like tether's."""
    from tether.evaluation.answer_eval import score
    from tether.types import Answer, AskResult
    from tether.verify.options import CheckOptions

    by_id = {q.id: q for q in qs}
    out = []
    for a in asked:
        q, text, sources, problem = by_id[a["id"]], a["raw"], a["sources"], a["problem"]
        refused = is_refusal_text(text) and not problem
        claims = [] if refused else citation_claims(text, sources, carry)
        checks = ws.check(claims, list(dict.fromkeys(sources)), CheckOptions(
            audience=q.audience, as_of=q.as_of, language=q.language, question=q.question,
        )) if claims else []  # fmt: skip
        said = " ".join(c.text for c in claims) or text.strip()  # the text without markers
        answer = Answer(not refused, said, tuple(claims)) if not problem else None
        result = AskResult(q.question, q.as_of, q.audience, q.language, "llamaindex",
                           answer=answer, checks=tuple(checks))  # fmt: skip
        row = score(q, result, a["seconds"])
        usage = {k: a[k] for k in ("requests", "prompt_tokens", "completion_tokens", "model_s")}
        extra = {"mode": "CitationQueryEngine", "problem": problem, "sources": sources,
                 "raw": text}  # fmt: skip
        out.append(_row_record(row, checks, usage, extra))
    return out


def summary(rows: Sequence[dict]) -> dict[str, Any]:
    """The figures of one system's rows (see the table in `section`)."""
    answerable = [r for r in rows if not r["abstain"]]
    must = [r for r in rows if r["abstain"]]
    kinds: dict[str, int] = {}
    for r in rows:
        for k, v in r["flag_kinds"].items():
            kinds[k] = kinds.get(k, 0) + v
    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "correct": sum(r["correct"] for r in answerable),
        "correct_shown": sum(r["correct_shown"] for r in answerable),
        "must_refuse": len(must),
        "refused_when_should": sum(r["refused_by"] is not None for r in must),
        "refused_when_should_not": sum(r["refused_by"] is not None for r in answerable),
        "reads_refusal_when_should": sum(r["reads_refusal"] for r in must),
        "reads_refusal_when_should_not": sum(r["reads_refusal"] for r in answerable),
        "failed": sum(bool(r["problem"]) for r in rows),
        "claims": sum(r["claims"] for r in rows),
        "citations": sum(r["citations"] for r in rows),
        "flagged_claims": sum(r["flagged_claims"] for r in rows),
        "flagged_citations": sum(r["flagged_citations"] for r in rows),
        "flag_kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        "median_s": statistics.median(r["seconds"] for r in rows) if rows else 0.0,
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "requests": sum(r["requests"] for r in rows),
    }


HEADING = "## Answers with citations"


def section(data: dict[str, Any]) -> str:
    """The markdown section of an answers run (`data` as `run` returns it)."""
    lines = [
        HEADING, "",
        f"Run on {data['date']}; model {data['model']} ({data['server']}), served on"
        f" 127.0.0.1 by `bench/peers/answers.py` to every system alike (temperature 0,"
        f" top-k 1, {MAX_TOKENS} tokens at most); load average {data['load'][0]:.1f} at the"
        f" start and {data['load'][1]:.1f} at the end. Bundled demo collection, tether's"
        f" chunks and e5 vectors for both, k = {K}. Questions: {', '.join(data['questions'])}"
        f" ({data['answerable']} answerable, {data['must_refuse']} that must be refused)."
        " Scored by `tether.evaluation.answer_eval.score` (the keys of `eval --answers`);"
        " every claim checked by tether's verifier (for LlamaIndex: each sentence of its"
        " answer with the sources of its [n] markers, through `Workspace.check`).",
        "",
        "| system | questions | correct (of answerable) | refused when it should |"
        " refused when it should not | reads as a refusal, one phrase rule for all (should /"
        " should not) | claims | citations | claims flagged |"
        " citations in flagged claims | flags (claims) | median s per answer |"
        " prompt tokens | completion tokens |",
        "|---" * 14 + "|",
    ]  # fmt: skip
    for name, s in data["summary"].items():
        flags = ", ".join(f"{k} {v}" for k, v in s["flag_kinds"].items()) or "none"
        failed = f" ({s['failed']} failed)" if s["failed"] else ""
        lines.append(
            f"| {name} | {s['questions']}{failed} | {s['correct']} / {s['answerable']} |"
            f" {s['refused_when_should']} / {s['must_refuse']} |"
            f" {s['refused_when_should_not']} | {s['reads_refusal_when_should']} /"
            f" {s['reads_refusal_when_should_not']} | {s['claims']} | {s['citations']} |"
            f" {s['flagged_claims']} | {s['flagged_citations']} | {flags} |"
            f" {s['median_s']:.0f} | {s['prompt_tokens']} | {s['completion_tokens']} |"
        )
    lines += ["", *NOTES, ""]
    return "\n".join(lines) + "\n"


NOTES = [
    "Read with care: a 1.5B model at 4 bits is weak, and a dozen questions move a figure by"
    " a whole question; the point is one model behind both engines.",
    "",
    "- tether (json) is what tether does with any OpenAI-compatible provider: the model"
    " writes claims and cites chunk IDs. tether (select) is what it does with its local"
    " provider: the model picks passage sentences by number and tether quotes them, so its"
    " claims are the passages' own sentences and its citations are right by construction"
    " (the verifier still checks them).",
    "- A tether refusal may come from its support gate (no model call) or from the verifier"
    " (every claim failed a check a public reader is not shown, so the reader gets the"
    " refusal sentence); 'correct' is scored on the text the reader gets in that case and"
    " on what the model said otherwise.",
    "- LlamaIndex has no refusal of its own: an answer whose first sentence says the sources"
    " do not answer, or with no [n] marker and a refusal phrase, counts as one"
    " (`is_refusal_text`). The column 'reads as a refusal' applies that same phrase rule to"
    " every system's answer text (a tether answer such as 'the price is not provided in the"
    " given passages' is no refusal by tether's own rule).",
    "- LlamaIndex's answers are read twice: one claim per sentence with its own [n] markers"
    " (the CitationQueryEngine row), and with a marker closing a paragraph taken to cover"
    " the uncited sentences before it (the second row; same answers, same correctness). The"
    " small model often puts one marker at the end of a paragraph, so the first reading"
    " flags most of its sentences `no_citation`; the second shows what the verifier finds"
    " in the text itself.",
    "- Seconds per answer: tether's whole `ask` (retrieval, gate, model, verifier);"
    " LlamaIndex's query (retrieval and model; the verifier run afterwards is not counted)."
    " Tokens are those the endpoint counted for each system's requests.",
    "- Each row's answer, claims and flags are in peers.json under `answers`"
    " (`llamaindex_asked`: LlamaIndex's raw answers and the chunk ID of each source number).",
]


LLAMA = "llamaindex CitationQueryEngine"
LLAMA_CARRY = "llamaindex, a marker covering the uncited sentences before it"


def scored(ws: Any, qs: Sequence[Any], data: dict[str, Any]) -> dict[str, Any]:
    """`data` with LlamaIndex's rows (both readings of its markers) and every summary made
    from its tether rows and LlamaIndex's answers as they came (`llamaindex_asked`)."""
    rows = {k: v for k, v in data["rows"].items() if k.startswith("tether")}
    for r in (r for v in rows.values() for r in v):
        r["reads_refusal"] = is_refusal_text(r["answer"])
    asked = data["llamaindex_asked"]
    rows[LLAMA] = llamaindex_rows(ws, qs, asked, carry=False)
    rows[LLAMA_CARRY] = llamaindex_rows(ws, qs, asked, carry=True)
    return data | {"rows": rows, "summary": {k: summary(v) for k, v in rows.items()},
                   "notes": NOTES}  # fmt: skip


def _workspace(work: Path, provider: Any = None) -> tuple[Any, Any]:
    from bench.peers.common import question_sets
    from tether import Collection

    qset = question_sets(work, ["bundled"])[0]
    index = work / "bundled.sqlite"
    col = Collection(qset.folder, index=index, provider=provider)
    if not index.exists():
        print("[answers] building tether's index of the demo collection …", file=sys.stderr)
        col.ingest()
    return col.workspace, qset


def run(n: int, work: Path, server_python: str, modes: Sequence[str]) -> dict[str, Any]:
    """Serve the model, ask every system the chosen questions, and return the figures."""
    from bench.peers.common import Reference
    from tether.providers.openai import OpenAICompatibleProvider

    load0 = os.getloadavg()[0]
    endpoint = Endpoint(server_python)
    try:
        provider = OpenAICompatibleProvider(endpoint.model, base_url=endpoint.base_url,
                                            timeout=TIMEOUT_S, max_retries=0)  # fmt: skip
        ws, qset = _workspace(work, provider)
        qs = pick_questions(qset.questions, n)
        rows = {f"tether ({mode})": ask_tether(ws, qs, mode, endpoint) for mode in modes}
        asked = ask_llamaindex(ws, Reference(ws.store, qset), qs, endpoint)
    finally:
        endpoint.close()
    data = {
        "date": date.today().isoformat(), "model": endpoint.model, "server": endpoint.info,
        "load": [load0, os.getloadavg()[0]], "questions": [q.id for q in qs],
        "answerable": sum(not q.abstain for q in qs), "must_refuse": sum(q.abstain for q in qs),
        "rows": rows, "llamaindex_asked": asked,
    }  # fmt: skip
    return scored(ws, qs, data)


def rescore(work: Path) -> dict[str, Any]:
    """The figures of the run kept in `work`/answers.json scored again (the answers are not
    asked again: after a change to the reading of LlamaIndex's markers or to the verifier)."""
    data = json.loads((work / "answers.json").read_text())
    if "llamaindex_asked" not in data:  # a run before the answers were kept as they came
        keep = ("id", "raw", "sources", "problem", "seconds", "requests", "prompt_tokens",
                "completion_tokens", "model_s")  # fmt: skip
        data["llamaindex_asked"] = [{k: r[k] for k in keep} for r in data["rows"][LLAMA]]
    ws, qset = _workspace(work)
    by_id = {q.id: q for q in qset.questions}
    return scored(ws, [by_id[i] for i in data["questions"]], data)


def write(data: dict[str, Any], out: Path, html: bool = True) -> None:
    """Put the section in `out` (peers.md, replacing an earlier one) and the figures in its
    .json under `answers`; with `html`, redraw its .html (the retrieval chart and the text)."""
    md = out.read_text() if out.exists() else "# tether and its peers\n\n"
    if HEADING in md:
        md = md[: md.index(HEADING)].rstrip() + "\n\n"
    out.write_text(md + section(data))
    js = out.with_suffix(".json")
    saved = json.loads(js.read_text()) if js.exists() else {}
    is_record = "bench" in saved and "figures" in saved  # harness.make_record's
    results = saved["figures"] if is_record else saved
    results["answers"] = data
    js.write_text(json.dumps(saved, indent=1, default=str))
    sets = {k: v for k, v in results.items() if k != "answers"}
    if html and sets:
        from bench.peers.run import chart

        chart(sets, out.with_suffix(".html"))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=12, help="questions to ask (default 12)")
    ap.add_argument("--modes", default="json,select", help="tether's answer modes")
    ap.add_argument(
        "--server-python",
        default=sys.executable,
        help="a Python with xllamacpp and tether (default: this one)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/tether-peers"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "peers.md")
    ap.add_argument(
        "--rescore",
        action="store_true",
        help="score the answers kept in WORK/answers.json again (no model)",
    )
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args(argv)
    if args.serve:
        return serve(0)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.rescore:
        data = rescore(args.work)
    else:
        data = run(args.answers, args.work, args.server_python, args.modes.split(","))
    (args.work / "answers.json").write_text(json.dumps(data, indent=1))  # kept if write fails
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write(data, args.out)
    print(section(data), file=sys.stderr)


if __name__ == "__main__":
    main()
