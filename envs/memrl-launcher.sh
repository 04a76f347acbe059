#!/usr/bin/env bash
# Writes the `memrl` command of the active env: it runs the package from the working tree, not an
# installed copy (envs/README.md): from $MEMRL_SRC if set, else ./src (jobs run in the repo root).
# Called by every <env>.post-deploy.sh.
set -euo pipefail
bin="$(python -c 'import os, sys; print(os.path.join(sys.prefix, "bin"))')"
cat > "$bin/memrl" <<SH
#!/bin/sh
export PYTHONPATH="\${MEMRL_SRC:-\$PWD/src}\${PYTHONPATH:+:\$PYTHONPATH}"
exec "$bin/python" -m memrl.cli "\$@"
SH
chmod +x "$bin/memrl"
