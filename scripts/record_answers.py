"""Record real local-model answers to bundled questions (for replay in tests, the demo and the
verifier's labelled claim set).

    python scripts/record_answers.py [--ids Q001,Q053,...] [--limit N]

Runs the whole pipeline (hybrid retrieval, the gate, the context, the prompt) with the local
Qwen2.5-Coder-1.5B-Instruct model behind a recording ReplayProvider (mode auto: questions
already recorded are not asked again), appending to src/tether/demo/recordings/local-qwen.jsonl.
Each record says the model and the date it was recorded. Uses the demo index in a temporary
folder, built with the default embedder. Slow: about 1 to 2 minutes per question on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tether.answering.context import token_counter
from tether.answering.pipeline import AskOptions, ask
from tether.app import retriever_for, shared_models
from tether.embeddings.embedders import token_counter_of
from tether.evaluation.questions import demo_collection, load_questions
from tether.ingest.sync import sync
from tether.providers.local import LocalProvider
from tether.providers.replay import ReplayProvider
from tether.stores.sqlite import SqliteStore

RECORDINGS = Path(__file__).resolve().parent.parent / "src/tether/demo/recordings/local-qwen.jsonl"
# Options the recordings are made with; tests and the demo replay with the same ones
# (tether.evaluation.answer_eval.RECORDED_OPTIONS). The file holds json-mode answers: the
# local model's own mode is select, so a recording in select mode needs all of them changed.
RECORD_OPTIONS = {"k": 4, "budget": 1000, "method": "hybrid", "mode": "json"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", help="comma-separated question IDs (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="stop after N questions")
    parser.add_argument("--index", type=Path, help="reuse this demo index")
    args = parser.parse_args()
    questions = load_questions()
    if args.ids:
        wanted = args.ids.split(",")
        by_id = {q.id: q for q in questions}
        questions = [by_id[i] for i in wanted]
    if args.limit:
        questions = questions[: args.limit]
    RECORDINGS.parent.mkdir(parents=True, exist_ok=True)
    index = args.index or Path(tempfile.mkdtemp()) / "demo.sqlite"
    store = SqliteStore(index)
    sync(store, demo_collection(), embedder=shared_models().embedder())
    retriever = retriever_for(store)
    provider = ReplayProvider(RECORDINGS, mode="auto", inner=LocalProvider())
    tokens = token_counter(lambda: token_counter_of(shared_models().embedder()))  # verify=False below: no judge needed
    for n, q in enumerate(questions, 1):
        t = time.perf_counter()
        options = AskOptions(
            as_of=q.as_of, audience=q.audience, language=q.language, verify=False, **RECORD_OPTIONS
        )
        result = ask(
            q.question, store, provider, options, retriever=retriever, judge=None, tokens=tokens
        )
        took = time.perf_counter() - t
        if result.gate is not None and not result.gate.passed:
            status = "refused by the gate"
        elif result.problem is not None:
            status = f"problem {result.problem.kind}: {result.problem.detail}"
        else:
            status = f"answerable={result.answer.answerable} claims={len(result.answer.claims)}"
        print(f"[{n}/{len(questions)}] {q.id} {took:5.1f}s {status}", flush=True)
    print(f"recordings: {RECORDINGS}", file=sys.stderr)


if __name__ == "__main__":
    main()
