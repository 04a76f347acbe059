#!/usr/bin/env bash
# Run by Snakemake inside the freshly created envs/train.yaml env (--sdm conda), and by
# envs/apptainer/train.def after it builds the same env.
set -euo pipefail
bash "$(dirname "${BASH_SOURCE[0]}")/memrl-launcher.sh"

# flash-attn 2.8.3 (verl's `fsdp` extra) is an sdist whose setup.py imports torch, so it cannot build
# in pip's isolated build env. It first tries a matching prebuilt wheel from the flash-attention
# GitHub releases, then compiles: that needs nvcc for CUDA 13.0 (torch 2.11's CUDA), e.g.
# `module load cuda/13.0` before creating the env, or the CUDA devel base image of train.def.
# Compiling takes about an hour with MAX_JOBS=8.
if ! command -v nvcc >/dev/null 2>&1 && [ -z "${CUDA_HOME:-}" ]; then
    echo "train.post-deploy.sh: nvcc not found and CUDA_HOME unset; flash-attn needs the CUDA" \
         "toolkit to build. Load it and recreate the env." >&2
    exit 1
fi
export MAX_JOBS="${MAX_JOBS:-8}"
python -m pip install --no-build-isolation "flash-attn==2.8.3"
python -c "import importlib.metadata as m; print('flash-attn', m.version('flash-attn'))"
