#!/usr/bin/env bash
# Run by Snakemake inside the freshly created envs/core.yaml env (--sdm conda), and by
# envs/apptainer/core.def after it builds the same env.
set -euo pipefail
# The `memrl` command of this env runs the package from the working tree, not an installed copy
# (envs/README.md): from $MEMRL_SRC if set, else ./src (Snakemake jobs run in the repository root).
bin="$(python -c 'import os, sys; print(os.path.join(sys.prefix, "bin"))')"
cat > "$bin/memrl" <<SH
#!/bin/sh
export PYTHONPATH="\${MEMRL_SRC:-\$PWD/src}\${PYTHONPATH:+:\$PYTHONPATH}"
exec "$bin/python" -m memrl.cli "\$@"
SH
chmod +x "$bin/memrl"
