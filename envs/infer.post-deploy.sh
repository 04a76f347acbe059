#!/usr/bin/env bash
# Run by Snakemake inside the freshly created envs/infer.yaml env (--sdm conda): the `memrepro` launcher.
set -euo pipefail
python "$(dirname "${BASH_SOURCE[0]}")/envtool.py" launcher
