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

ENVS ?=

.PHONY: lock lock-check base-image images sif smoke-containers container-tests smoke mini toy toy-memalpha test lint unit verl-tests vllm-env vllm-tests cluster-test report bench clean

# Every environment installs from its hashed lock (envs/<env>.lock, `make lock`), nothing resolved
# again: the venvs here and the images (`make images`) get the same versions.
ENVTOOL := $(PYTHON) envs/envtool.py

$(STAMP): envs/dev.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(ENVTOOL) install dev --python $(BIN)/python
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

lock: $(STAMP)  ## resolve envs/<env>.in into envs/<env>.lock (all, or ENVS="core infer")
	$(ENVTOOL) lock $(ENVS)

lock-check: $(STAMP)  ## resolve every lock again (PyPI, no download): each one's pins and hashes must come out the same
	$(ENVTOOL) lock --check $(ENVS)

smoke: $(STAMP)  ## the whole DAG on config/smoke.yaml: CPU, offline, minutes
	snakemake --profile profiles/smoke

mini: $(STAMP) $(VLLM_STAMP)  ## SmolLM2-135M-Instruct through vLLM's CPU build on a slice of both papers
	snakemake --profile profiles/mini

# Images: one per environment, from envs/Containerfile and the environment's lock (envs/README.md).
# BASE=local builds them on `make base-image`'s Debian base (machines without a container registry).
IMAGES ?= core infer-cpu train-cpu
LOCAL_BASE := localhost/memrepro-base:bookworm
ENGINE ?= $(shell command -v podman || command -v docker)
ifeq ($(BASE),local)
IMAGE_BASE := --base $(LOCAL_BASE)
images: base-image
else ifneq ($(BASE),)
IMAGE_BASE := --base $(BASE)
endif

# mmdebstrap tries three times: a Debian mirror caught mid-sync fails `apt-get update` for a minute
base-image:  ## a base image from Debian's packages (mmdebstrap: no registry needed), as $(LOCAL_BASE)
	$(ENGINE) image exists $(LOCAL_BASE) || { \
	    tar=$$(mktemp --suffix=.tar) && \
	    for try in 1 2 3; do \
	        mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
	            bookworm $$tar && break; \
	        [ $$try = 3 ] && exit 1; echo "mmdebstrap failed (try $$try of 3): again in 60 s"; sleep 60; \
	    done && \
	    $(ENGINE) import $$tar $(LOCAL_BASE) && rm -f $$tar; }

images:  ## each environment's image from its lock (IMAGES="core infer-cpu train-cpu", BASE=local|IMAGE)
	for env in $(IMAGES); do $(ENVTOOL) build $$env $(IMAGE_BASE) || exit 1; done

sif:  ## each image as an apptainer SIF file in containers/ (needs apptainer; a cluster's login node)
	mkdir -p containers
	for env in $(IMAGES); do \
	    $(ENGINE) save --format docker-archive -o containers/$$env.tar localhost/memrepro-$$env && \
	    apptainer build --force containers/$$env.sif docker-archive:containers/$$env.tar || exit 1; \
	done

smoke-containers: $(STAMP)  ## the smoke DAG with every job in its image (make images BASE=local first)
	./pipeline --profile profiles/containers

container-tests: $(STAMP)  ## the built images: their checks, the podman launcher, a containerised slice of the smoke run
	pytest -q -m containers tests/containers

toy: $(STAMP)  ## proof that the CPU trainer learns: SFT warm start vs Multi-Conv DAPO, 4 seeds, ~15 min
	python -m memrepro.toy --config config/toy.yaml --out results/toy

toy-memalpha: $(STAMP)  ## proof that Mem-α's GRPO learns: warm start vs 3 (β, γ) runs, 3 seeds, ~25 min
	python -m memrepro.toy --config config/toy_memalpha.yaml --out results/toy_memalpha

bench: $(STAMP)  ## speed figures measured in one run (provenance, planning, synthesis, smoke): ~10 min
	python scripts/bench.py

report: $(STAMP)  ## the HTML report of the smoke run
	snakemake --profile profiles/smoke --report results/smoke/report.html

lint: $(STAMP)
	ruff check .
	ruff format --check .
	snakefmt --check Snakefile workflow
	snakemake --lint --configfile config/config.yaml

unit: $(STAMP)  ## everything but tests/verl, tests/vllm (each needs its own venv), tests/cluster, tests/containers
	pytest -q --ignore=tests/verl --ignore=tests/cluster --ignore=tests/vllm --ignore=tests/containers
	@# the suites CI runs later must at least import here: a broken import fails in seconds, not after an hour
	@for suite in cluster containers vllm; do \
	    out=$$(pytest --collect-only -q -p no:cacheprovider tests/$$suite) || { echo "$$out"; exit 1; }; done

cluster-test: $(STAMP) $(VERL_STAMP)  ## real local services: MLflow server, its UI in Debian's chromium; as root a 2-node SLURM cluster, Ray on it (.venv-verl's, and the train-cpu image's: make images)
	pytest -q -m cluster tests/cluster

# verl 0.9.1 pins transformers < 5.11, so it lives in a venv of its own, from the train-cpu lock:
# tests/verl checks our agent loop, Hydra overrides and trainer against verl's own code, and our
# advantage/loss/KL against verl's functions; the test cluster's Ray is this venv's.
$(VERL_STAMP): envs/train-cpu.lock
	$(PYTHON) -m venv $(VERL_VENV)
	$(ENVTOOL) install train-cpu --python $(VERL_VENV)/bin/python
	touch $(VERL_STAMP)

# vLLM's CPU build in a venv of its own (envs/infer-cpu.in says why): the `infer` jobs of
# `make mini` run its `memrepro` launcher, and tests/vllm run the real engines in it.
$(VLLM_STAMP): envs/infer-cpu.lock
	$(PYTHON) -m venv $(VLLM_VENV)
	$(ENVTOOL) install infer-cpu --python $(VLLM_VENV)/bin/python
	touch $(VLLM_STAMP)

vllm-env: $(VLLM_STAMP)

vllm-tests: $(STAMP) $(VLLM_STAMP)  ## the real vLLM engines (CPU build) and SmolLM2: no fake
	PYTHONPATH=src $(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/vllm

verl-tests: $(VERL_STAMP)
	PYTHONPATH=src $(VERL_VENV)/bin/python -m pytest -q tests/verl

test: lint unit verl-tests

clean:
	rm -rf results .snakemake
