"""The verl backend of `memrepro train`: rows in, verl launched, the last checkpoint merged out.

One job = one stage of one run. Everything verl writes lives in a work directory beside the
output (`.<stage>.verl/`), which Snakemake does not know about and so never deletes: a killed or
requeued job relaunches with `trainer.resume_mode=auto` and continues from verl's last checkpoint.
The output directory (a merged Hugging Face model + `train_metrics.jsonl`) appears atomically at
the end. Nothing here imports verl: the launched command does.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.scoring.verifier import DEFAULT_VERIFIER
from memrepro.train.validation import validation_summary
from memrepro.verl import QA_URL_ENV, RAN_IN_ENV
from memrepro.verl.overrides import (
    MEMAGENT,
    MEMALPHA,
    Recipe,
    SettingsError,
    VerlPaths,
    verl_command,
)

log = logging.getLogger(__name__)

METRICS_FILE = "train_metrics.jsonl"
# this working tree's src/: memrepro is not installed in the train image, so its Python finds it
# here
SOURCE_ROOT = Path(__file__).resolve().parents[2]
# verl's validation score of one data source: the mean over its items of the final row's reward
# (MemAgent: the trajectory's accuracy on RULER-HQA dev; Mem-α: r1 on a Memalpha source), @n
VAL_CORE = re.compile(r"val-core/(?P<source>.+)/reward/mean@\d+")
# our per-step curve keys <- verl's logged metric names (the first one present wins)
CURVE_KEYS: dict[str, tuple[str, ...]] = {
    "reward_mean": (
        "memagent/trajectory_reward/mean",
        "memalpha/reward/mean",
        "critic/score/mean",
    ),
    # Mem-α's reward terms per chunk row (memrepro.verl.trainer.memalpha_metrics), the CPU
    # trainer's names (train.memalpha_rollout.term_means)
    **{f"{term}_mean": (f"memalpha/{term}/mean",) for term in ("r1", "r2", "r3", "r4")},
    "memory_tokens_mean": ("memalpha/memory_tokens/mean",),
    "response_tokens_mean": ("response_length/mean",),  # per row: one conversation or chunk
    "kl": ("actor/kl_loss",),
    "pg_clipfrac": ("actor/pg_clipfrac",),
    "pg_clipfrac_lower": ("actor/pg_clipfrac_lower",),
    "pg_loss": ("actor/pg_loss",),
    "grad_norm": ("actor/grad_norm",),
    "lr": ("actor/lr",),
    "seconds": ("perf/time_per_step",),
}


def work_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.verl"


def job_paths(out: str | os.PathLike[str], model: str | os.PathLike[str]) -> VerlPaths:
    """Where a job's verl files live; the DAG (dry-run command) and the job compute the same."""
    work = work_dir(Path(out))
    return VerlPaths(
        train_files=work / "data" / "train.parquet",
        val_files=work / "data" / "val.parquet",
        model=Path(model),
        checkpoints=work / "checkpoints",
    )


def launch_command(
    settings: Mapping[str, Any],
    out: str,
    model: str,
    recipe: Recipe = MEMAGENT,
    container: str | None = None,
) -> list[str]:
    return verl_command(dict(settings), job_paths(out, model), recipe, container)


def launch_container(launch: Sequence[str]) -> str | None:
    """The train image a launch command runs Ray and verl in (`ray_job.sh --container`), if any."""
    head = list(launch[: launch.index("--")] if "--" in launch else launch)
    return head[head.index("--container") + 1] if "--container" in head[:-1] else None


def in_image(container: str | None, env: Mapping[str, str]) -> list[str]:
    """The prefix that runs a command in the train image as ray_job.sh does (its launcher
    $MEMREPRO_APPTAINER, options $MEMREPRO_CONTAINER_ARGS, default --nv); none without an image."""
    if container is None:
        return []
    options = shlex.split(env.get("MEMREPRO_CONTAINER_ARGS", "--nv"))
    return [env.get("MEMREPRO_APPTAINER", "apptainer"), "exec", *options, container]


def image_env(container: str | None, env: Mapping[str, str]) -> dict[str, str]:
    """The job's environment; with an image, memrepro's source for the Python inside it (apptainer
    sets X from APPTAINERENV_X), which every node's `ray start` passes on to its workers."""
    if container is None:
        return dict(env)
    return {**env, "APPTAINERENV_PYTHONPATH": str(SOURCE_ROOT)}


def stores(paths: VerlPaths) -> tuple[Path, Path]:
    """The SQLite context stores of the train and validation parquet files."""
    return paths.train_files.with_suffix(".contexts.sqlite"), paths.val_files.with_suffix(
        ".contexts.sqlite"
    )


def prepare_data(
    settings: Mapping[str, Any], rows: list[dict], dev_rows: list[dict], paths: VerlPaths
) -> None:
    """verl's parquet rows (question + context id) and the context stores the agent loop reads."""
    from memrepro.verl.dataset import write_verl_dataset

    train_store, val_store = stores(paths)
    for data, parquet, store in (
        (rows, paths.train_files, train_store),
        (dev_rows, paths.val_files, val_store),
    ):
        summary = write_verl_dataset(
            data,
            parquet,
            store,
            settings["agent"],
            settings["max_chunks"],
            verifier=settings.get("verifier", DEFAULT_VERIFIER),
        )
        log.info("%s: %s", parquet, summary)


def _check_launch(launch: Sequence[str], expected: Sequence[str]) -> None:
    if list(launch) != list(expected):
        raise SystemExit(
            "the launch command differs from the one the config generates "
            "(memrepro.verl.overrides):"
            f"\n  given:     {' '.join(launch)}\n  generated: {' '.join(expected)}"
        )


def run(
    settings: Mapping[str, Any],
    rows: list[dict],
    dev_rows: list[dict],
    model: Path,
    out: Path,
    launch: Sequence[str],
    env: Mapping[str, str],
) -> dict[str, Any]:
    """MemAgent: prepare data, run the launch command until it exits, merge its last
    checkpoint into out."""
    paths = job_paths(out, model)
    container = launch_container(launch)
    _check_launch(launch, launch_command(settings, str(out), str(model), container=container))
    prepare_data(settings, rows, dev_rows, paths)
    env = image_env(container, env)
    return _train_and_merge(settings, paths, out, launch, env, "last", container)


def run_memalpha(
    settings: Mapping[str, Any],
    instances: list[dict],
    validation: list[dict],
    model: Path,
    qa_model: Path,
    memory_tokenizer: Path | None,
    out: Path,
    launch: Sequence[str],
    env: Mapping[str, str],
) -> dict[str, Any]:
    """Mem-α: the train and validation instances as verl rows, the frozen QA model / judge
    served for the life of the run (its URL reaches the agent loops as $MEMREPRO_QA_BASE_URL), verl,
    the merge of the recipe's checkpoint."""
    from memrepro.engines.server import free_port, served
    from memrepro.verl.dataset import memalpha_loop_settings, write_memalpha_verl_dataset

    paths = job_paths(out, model)
    container = launch_container(launch)
    _check_launch(launch, launch_command(settings, str(out), str(model), MEMALPHA, container))
    env = image_env(container, env)
    counter = "o200k_base" if memory_tokenizer is None else str(Path(memory_tokenizer).resolve())
    for rows, parquet, store in zip(
        (instances, validation), (paths.train_files, paths.val_files), stores(paths), strict=True
    ):
        loop_settings = memalpha_loop_settings(
            settings,
            counter,
            settings["qa_server"]["served_name"],
            str(Path(qa_model).resolve()),
            validation=parquet == paths.val_files,
        )
        summary = write_memalpha_verl_dataset(rows, parquet, store, loop_settings)
        log.info("%s: %s", parquet, summary)
    # free here; on another node it is only likely free (the server fails fast, with its log)
    port = free_port()
    plan = qa_server_plan(settings, qa_model, env, port, allocation_nodes(env), container)
    log.info("starting the QA server on %s:%d: %s", plan.host, port, " ".join(plan.command))
    server_log = work_dir(out) / "qa_server.log"
    with served(
        plan.command,
        port,
        server_log,
        host=plan.host,
        timeout=settings["qa_server"]["startup_seconds"],
        env={**env, **plan.server_env},
    ) as url:
        log.info("QA server healthy at %s (log: %s)", url, server_log)
        trainer_env = {**env, **plan.trainer_env, QA_URL_ENV: url}
        checkpoint = settings["checkpoint"]
        return _train_and_merge(settings, paths, out, launch, trainer_env, checkpoint, container)


def _train_and_merge(
    settings: Mapping[str, Any],
    paths: VerlPaths,
    out: Path,
    launch: Sequence[str],
    env: Mapping[str, str],
    checkpoint: str,
    container: str | None,
) -> dict[str, Any]:
    """Run verl to its last step, then merge the `checkpoint` one (the last, or the best
    validated: `best_validated_step`), in the train image where verl ran in one."""
    from memrepro.data.io import publish_directory
    from memrepro.verl.checkpoints import latest_step, merge_command, step_dir

    logs = work_dir(out) / "metrics"
    logs.mkdir(parents=True, exist_ok=True)
    attempt_log = logs / f"attempt-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    resumed_from = latest_step(paths.checkpoints)
    log.info("launching verl (resuming after step %s): %s", resumed_from, " ".join(launch))
    began = time.perf_counter()
    ran_in = work_dir(out) / "ran_in.json"
    ran_in.unlink(missing_ok=True)
    trainer_env = {**env, "VERL_FILE_LOGGER_PATH": str(attempt_log), RAN_IN_ENV: str(ran_in)}
    subprocess.run(list(launch), env=trainer_env, check=True)
    step = latest_step(paths.checkpoints)
    if step is None or step < settings["steps"]:
        raise SystemExit(
            f"verl exited without a checkpoint of step {settings['steps']} in {paths.checkpoints} "
            f"(last: {step}); rerun the job to resume from it"
        )
    curve = curve_rows(read_verl_logs(sorted(logs.glob("attempt-*.jsonl"))))
    if checkpoint == "best":
        step, score = best_validated_step(curve)
        if not (step_dir(paths.checkpoints, step) / "actor").is_dir():
            raise SystemExit(
                f"{paths.checkpoints}: no checkpoint of step {step}, the best validated"
            )
        log.info("merging step %d, the best validated (val_reward %.4f)", step, score)
    staging = out.parent / f".{out.name}.partial"
    merge = [*in_image(container, env), *merge_command(paths.checkpoints, step, staging)]
    subprocess.run(merge, env=dict(env), check=True)
    with (staging / METRICS_FILE).open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in curve)
    publish_directory(staging, out)
    return {
        "steps": settings["steps"],
        "checkpoint_step": step,
        "resumed_from": resumed_from or 0,
        "seconds": time.perf_counter() - began,
        "final_reward_mean": curve[-1]["reward_mean"] if curve else float("nan"),
        "ran_in": read_ran_in(ran_in),
    }


def read_ran_in(path: Path) -> dict[str, str]:
    """The image verl's driver ran in, as it wrote it from inside (memrepro.verl.main), under
    `ray.`: the job itself runs on the host, so its own container tags say none."""
    try:
        tags = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"ray.container.image": f"unknown (the driver wrote no {path})"}
    return {f"ray.{key}": str(value) for key, value in tags.items()}


@dataclass(frozen=True)
class ServerPlan:
    """Where and how the QA server runs inside the training job's allocation."""

    command: list[str]
    host: str  # where it answers (and binds, on one node)
    server_env: dict[str, str]  # its GPUs, on the training node
    trainer_env: dict[str, str]  # verl's GPUs, on the training node


def allocation_nodes(environ: Mapping[str, str]) -> list[str]:
    """The SLURM allocation's host names, in order (empty outside SLURM)."""
    nodelist = environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return []
    shown = subprocess.run(
        ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True
    )
    return shown.stdout.split()


def qa_server_plan(
    settings: Mapping[str, Any],
    qa_model: str | os.PathLike[str],
    environ: Mapping[str, str],
    port: int,
    nodes: Sequence[str],
    container: str | None = None,
) -> ServerPlan:
    """The QA server's placement (`qa_server` settings), in the train image where verl runs in
    one (`container`):
    - one training node: on that node, the last `qa_server.gpus` of the job's GPUs
      (CUDA_VISIBLE_DEVICES, else 0..n-1), verl the first `gpus_per_node`;
    - N > 1 training nodes: alone on node N + 1 of the allocation (Ray takes the first N,
      workflow/scripts/ray_job.sh), started there with `srun --overlap`, bound to all
      interfaces and reached by host name."""
    from memrepro.engines.server import vllm_server_command

    server = settings["qa_server"]
    gpus, train_nodes, per_node = server["gpus"], settings["nodes"], settings["gpus_per_node"]
    if server["tensor_parallel_size"] > gpus:
        raise SettingsError(
            f"qa_server.tensor_parallel_size={server['tensor_parallel_size']} exceeds its "
            f"gpus={gpus}"
        )

    def serve(host: str) -> list[str]:
        python = "python" if container else sys.executable  # the image's, or this environment's
        return in_image(container, environ) + vllm_server_command(
            qa_model,
            server["served_name"],
            port,
            host=host,
            tensor_parallel_size=server["tensor_parallel_size"],
            gpu_memory_utilization=server["gpu_memory_utilization"],
            max_model_len=server["max_model_len"],
            python=python,
        )

    if train_nodes == 1:
        visible = environ.get("CUDA_VISIBLE_DEVICES")
        devices = visible.split(",") if visible else [str(i) for i in range(per_node + gpus)]
        if len(devices) < per_node + gpus:
            raise SettingsError(
                f"the job sees GPUs {devices}: gpus_per_node={per_node} for verl and "
                f"qa_server.gpus={gpus} for the QA server need {per_node + gpus}"
            )
        return ServerPlan(
            serve("127.0.0.1"),
            "127.0.0.1",
            {"CUDA_VISIBLE_DEVICES": ",".join(devices[-gpus:])},
            {"CUDA_VISIBLE_DEVICES": ",".join(devices[:per_node])},
        )
    if len(nodes) <= train_nodes:
        raise SettingsError(
            f"{train_nodes} training nodes and the QA server need {train_nodes + 1} nodes; the "
            f"allocation has {list(nodes)} (SLURM_JOB_NODELIST)"
        )
    host = nodes[train_nodes]
    srun = ["srun", "--overlap", "--nodes=1", "--ntasks=1", "-w", host, f"--gpus-per-node={gpus}"]
    return ServerPlan([*srun, *serve("0.0.0.0")], host, {}, {})


def read_verl_logs(files: Iterable[Path]) -> dict[int, dict[str, float]]:
    """verl's file-logger lines ({"step", "data"}) of every attempt, a later attempt winning a
    step (a resumed run repeats the steps after its last checkpoint); a torn last line, what a
    killed job leaves, is left out."""
    from memrepro.data.io import iter_appended_jsonl

    steps: dict[int, dict[str, float]] = {}
    for path in files:
        for number, entry in iter_appended_jsonl(path, required=("step", "data")):
            try:
                steps[int(entry["step"])] = dict(entry["data"])
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a verl log line: {exc}") from exc
    return steps


def curve_rows(steps: Mapping[int, Mapping[str, float]]) -> list[dict[str, float]]:
    """Per-step rows in train_metrics.jsonl's keys (the CPU trainer's), from verl's names."""
    rows = []
    for step in sorted(steps):
        data = steps[step]
        row: dict[str, float] = {"step": step}
        for ours, names in CURVE_KEYS.items():
            found = next((data[name] for name in names if name in data), None)
            if found is not None:
                row[ours] = float(found)
        row.update(validation_metrics(data))
        if "reward_mean" in row:  # validation-only lines carry no training curve
            rows.append(row)
    return rows


def validation_metrics(data: Mapping[str, float]) -> dict[str, float]:
    """A log line's validation scores: `val/<source>` per data source and `val_reward`, their
    unweighted mean (a step without validation: none)."""
    sources = {
        match["source"]: float(value)
        for name, value in data.items()
        if (match := VAL_CORE.fullmatch(name))
    }
    return validation_summary(sources) if sources else {}


def best_validated_step(curve: Sequence[Mapping[str, float]]) -> tuple[int, float]:
    """(step, val_reward) of the best validation; of equal scores, the latest step (the most
    trained)."""
    validated = [(row["val_reward"], int(row["step"])) for row in curve if "val_reward" in row]
    if not validated:
        raise SystemExit("checkpoint 'best': verl logged no validation score (val-core/...)")
    score, step = max(validated)
    return step, score
