# Two commands on a fresh machine: `make demo` and `make test`.
# `make demo` installs only what the demo needs (the library and the local model, no torch);
# `make test` adds the `dev` extra (test suite, linters, type checker; torch for two tests).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[local]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,local]'
	touch $(VENV)/.demo-installed $@

.PHONY: install install-dev demo test test-fast lint bench bench-judge judge answerability bench-answerability bench-peers bench-peers-answers rerank-model bench-manuals train-reader train-reader-rank bench-reader bench-reader-rank bench-list readme-figures
install: $(VENV)/.demo-installed
install-dev: $(VENV)/.dev-installed

demo: install
	$(BIN)/tether demo

test: install-dev
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/pytest

# The inner loop: tests/unit only (fakes, no model, no index server; seconds). `make test` runs
# every folder: unit, contract (each store role on every backend), integration (real models
# and indexes) and faces (CLI, HTTP, MCP, the page in Chromium).
test-fast: install-dev
	$(BIN)/pytest tests/unit

lint: install-dev
	$(BIN)/ruff check .

# The benchmarks: `bench/run.py --list` names each (and the experiments, run by hand);
# `make bench` runs the standard set (the long ones take half an hour on 2 cores), one with
# `.venv/bin/python bench/run.py NAME`; each writes its bench/results/ page.
bench-list:
	$(BIN)/python bench/run.py --list

# README.md's figure rows, rendered from bench/results/figures.json (a test fails when stale).
readme-figures:
	$(BIN)/python bench/run.py --readme

bench: install-dev
	$(BIN)/python bench/run.py --all

# The learned claim judge: rebuild its model (src/tether/verify/judge_model.json, about 10 s)
# and measure it on the tuned-on and held-out claim sets (bench/results/judge.md, minutes).
judge: install-dev
	$(BIN)/python -m tether.evaluation.judge_training

bench-judge: install-dev
	$(BIN)/python bench/run.py judge

# tether side by side with LlamaIndex, Haystack and txtai (their own venv: they pin other
# versions of shared libraries); results in bench/results/peers.md
bench-peers:
	test -x .venv-peers/bin/python || $(PY) -m venv .venv-peers
	.venv-peers/bin/pip install -q -e '.[peers]'
	.venv-peers/bin/python bench/peers/run.py

# Answers with citations: tether and LlamaIndex's CitationQueryEngine with the same local model
# on one loopback endpoint (served by tether's own venv, which has xllamacpp); N questions,
# 20-60 s each on 2 cores. The section is added to bench/results/peers.md and peers.json.
N ?= 12
bench-peers-answers: install
	test -x .venv-peers/bin/python || $(PY) -m venv .venv-peers
	.venv-peers/bin/pip install -q -e '.[peers]'
	.venv-peers/bin/python bench/peers/answers.py --answers $(N) --server-python $(BIN)/python

# The answerability judge: rebuild its model (src/tether/answering/answerability_model.json;
# about a minute, the training collections' indexes kept in .tether/answerability) and measure
# it on the tuned-on and held-out answer sets (bench/results/answerability.md, minutes).
answerability: install-dev
	$(BIN)/python scripts/train_answerability.py

bench-answerability: install-dev
	$(BIN)/python bench/run.py answerability -- --no-answerability
	$(BIN)/python bench/run.py answerability
	$(BIN)/python bench/run.py answerability -- --markdown

# The learned rerank order: set up the real manuals (Debian's doc packages, root; about 15
# minutes of embedding the first time, kept in TETHER_CORPORA or /work/corpora), rebuild the
# model from the tuned-on ones (src/tether/retrieval/rerank_model.json; a few minutes), then
# measure every manual, the held-out gettext and MkDocs included (bench/results/real_corpora.md).
rerank-model: install-dev
	$(BIN)/python bench/corpora/setup.py python postgresql sqlite git flex
	$(BIN)/python scripts/train_rerank_order.py

bench-manuals: install-dev
	$(BIN)/python bench/corpora/setup.py
	$(BIN)/python bench/run.py real-corpora -- --json bench/results/real_corpora.json

# The reader (tether's own cross-encoder, src/tether/embeddings/reader_model/): train it from
# the sets training/datasets.toml gives the role `train` (about 50 minutes on 2 cores; it
# resumes from training/runs/reader/checkpoint.pt when run again), then ship it. ARGS passes
# options to training/reader/train.py (--help lists them).
ARGS ?=
train-reader: install-dev
	$(BIN)/python training/reader/train.py --run training/runs/reader $(ARGS)
	cp training/runs/reader/reader.npz training/runs/reader/card.json src/tether/embeddings/reader_model/

# The reader's second stage (issue 44): its relevance head fine-tuned on question <-> passage
# pairs mined from the tuned-on manuals' indexes (bench/corpora/setup.py first), with a replay
# of the first stage's examples, starting from the first stage's weights (make train-reader).
train-reader-rank: install-dev
	$(BIN)/python training/reader/mine.py
	$(BIN)/python training/reader/train.py --init training/runs/reader/reader.npz \
		--mined training/cache/mined-rank.jsonl --replay 3000 --lr 5e-5 --written-passes 1 \
		--run training/runs/reader-rank $(ARGS)
	cp training/runs/reader-rank/reader.npz training/runs/reader-rank/card.json src/tether/embeddings/reader_model/

# The deep rerank measured, reader off and on (bench/results/reader_rank.md).
bench-reader-rank: install-dev
	$(BIN)/python bench/run.py reader-rank

# The reader measured: claims (tuned-on and held-out sets), contradictions (health sets),
# cost, and the learning curve's runs if present (bench/results/reader.md).
bench-reader: install-dev
	$(BIN)/python bench/run.py reader
