# `make smoke` and `make test` work on a fresh machine: they create the virtualenv themselves.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: smoke test lint dryrun unit report clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU torch first: an unpinned torch would pull gigabytes of CUDA wheels.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

smoke: $(STAMP)  ## the whole DAG on config/smoke.yaml: CPU, offline, minutes
	snakemake --profile profiles/smoke

report: $(STAMP)  ## the HTML report of the smoke run
	snakemake --profile profiles/smoke --report results/smoke/report.html

lint: $(STAMP)
	ruff check .
	ruff format --check .
	snakefmt --check Snakefile workflow
	snakemake --lint --configfile config/config.yaml

dryrun: $(STAMP)  ## plans every job of the paper config under the SLURM profile (no SLURM needed)
	snakemake -n --quiet rules --profile profiles/slurm --configfile config/config.yaml all

unit: $(STAMP)
	pytest -q

test: lint dryrun unit

clean:
	rm -rf results .snakemake
