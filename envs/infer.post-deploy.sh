#!/usr/bin/env bash
# Run by Snakemake inside the freshly created envs/infer.yaml env (--sdm conda), and by
# envs/apptainer/infer.def after it builds the same env.
set -euo pipefail
bash "$(dirname "${BASH_SOURCE[0]}")/memrl-launcher.sh"
