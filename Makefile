# `make smoke` and `make test` work on a fresh machine: they create the virtualenv themselves.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3
export PATH := $(abspath $(BIN)):$(PATH)

VERL_VENV ?= .venv-verl
VERL_STAMP := $(VERL_VENV)/.installed-stamp

.PHONY: smoke toy toy-memalpha test lint unit verl-tests cluster-test report bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU torch first: an unpinned torch would pull gigabytes of CUDA wheels.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

smoke: $(STAMP)  ## the whole DAG on config/smoke.yaml: CPU, offline, minutes
	snakemake --profile profiles/smoke

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

unit: $(STAMP)  ## everything but tests/verl (they need verl's own venv) and tests/cluster
	pytest -q --ignore=tests/verl --ignore=tests/cluster

cluster-test: $(STAMP) $(VERL_STAMP)  ## real local services (issue 15): MLflow server; as root a 2-node SLURM cluster, Ray on it (.venv-verl's)
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

verl-tests: $(VERL_STAMP)
	PYTHONPATH=src $(VERL_VENV)/bin/python -m pytest -q tests/verl

test: lint unit verl-tests

clean:
	rm -rf results .snakemake
