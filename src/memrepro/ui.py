"""`memrepro ui RESULTS`: MLflow's UI on a results directory's own store, opened on its runs.

It is `mlflow ui` run in the results directory (where the store's artifact locations, relative
to its folder, lead), after the store was opened once by memrepro (which makes the locations of a
store written before that relative), with the address that opens the experiment on its runs
rather than on MLflow's GenAI overview. Bound to 127.0.0.1 unless told otherwise. The address is
printed once the server answers (MLflow's UI takes half a minute or more to start), not before.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from memrepro.mlflow_notes import experiment_link
from memrepro.tracking.store import experiment_id

START_TIMEOUT_S = 600  # MLflow's UI starts in 20-60 s here; a server that never answers is said


def address(host: str, port: int, experiment: str) -> str:
    return f"http://{host}:{port}/{experiment_link(experiment)}"


def prepare(results: Path) -> str:
    """Open the results directory's SQLite store (rebasing a moved one) and return the id of its
    experiment; a directory without a store is named with what to do."""
    database = results / "mlflow.db"
    if not database.is_file():
        raise SystemExit(
            f"{database}: no MLflow store here. A run whose tracking_uri is a server logs there; "
            f"records not loaded yet load with: python -m memrepro.tracking {results}"
        )
    import mlflow

    uri = f"sqlite:///{database.resolve()}"
    try:
        return experiment_id(mlflow.MlflowClient(uri), uri)
    except Exception as exc:  # SQLAlchemy's, Alembic's or MLflow's: each says it differently
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SystemExit(
            f"{database}: not a readable MLflow store ({reason[:200]}). The job records hold "
            f"everything in it: move it aside and load them again: python -m memrepro.tracking "
            f"{results}"
        ) from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memrepro ui", description=__doc__.split("\n\n")[0].split(": ", 1)[1]
    )
    parser.add_argument("results", type=Path, help="a results directory: results/<run>")
    parser.add_argument("--port", type=int, default=5055)
    parser.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to let other hosts in")
    args = parser.parse_args(argv)
    experiment = prepare(args.results)
    command = ["mlflow", "ui", "--backend-store-uri", "sqlite:///mlflow.db"]
    command += ["--host", args.host, "--port", str(args.port)]
    print(f"Starting MLflow's UI on {args.results} (it takes a minute) ...", flush=True)
    server = subprocess.Popen([sys.executable, "-m", *command], cwd=args.results)
    local = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    try:
        wait_until_answering(server, f"http://{local}:{args.port}/health", START_TIMEOUT_S)
        print(f"MLflow UI of {args.results}: {address(args.host, args.port, experiment)}")
        sys.stdout.flush()
        code = server.wait()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (memrepro.cli maps it): stopped, no traceback
        code = 130
    finally:  # stopped, or a failed start: the server goes with this command
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
    sys.exit(code)


def wait_until_answering(server: subprocess.Popen, url: str, timeout_s: float) -> None:
    """Return once `url` answers; stop with the reason if the server exits or never answers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the MLflow UI server exited ({server.returncode}) before answering")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise SystemExit(f"the MLflow UI server did not answer at {url} within {timeout_s:.0f} s")
