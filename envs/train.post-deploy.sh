#!/usr/bin/env bash
# Run by Snakemake inside the freshly created envs/train.yaml env (--sdm conda), and by
# envs/apptainer/train.def. flash-attn 2.8.3 (verl's `fsdp` extra) is an sdist whose setup.py imports
# torch, so it cannot build in pip's isolated build env. It first tries a matching prebuilt wheel
# from the flash-attention GitHub releases, then compiles (needs nvcc: `module load cuda/13.0` or
# a CUDA devel image; about an hour with MAX_JOBS=8).
set -euo pipefail
if ! command -v nvcc >/dev/null 2>&1 && [ -z "${CUDA_HOME:-}" ]; then
    echo "train.post-deploy.sh: nvcc not found and CUDA_HOME unset; flash-attn needs the CUDA" \
         "toolkit (matching torch 2.11's CUDA 13.0) to build. Load it and recreate the env." >&2
    exit 1
fi
export MAX_JOBS="${MAX_JOBS:-8}"
python -m pip install --no-build-isolation "flash-attn==2.8.3"
python -c "import importlib.metadata as m; print('flash-attn', m.version('flash-attn'))"
