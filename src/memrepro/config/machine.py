"""The machine a profile describes, and the GPU jobs that fit on it.

A profile for one machine declares it in Snakemake's global resources (`resources: {gpu: 8,
nodes: 1}`, profiles/local); a cluster profile declares neither, and SLURM places each job. On one
machine Snakemake would quietly shrink a job asking for more than the machine has (a 16-node
training run would start on 8 GPUs, hours later, and fail), so the plan refuses it instead,
naming the config key that asked. It also runs GPU jobs one at a time: Snakemake counts GPUs but
gives no job its own devices, so each GPU job claims every GPU of the machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memrepro.config.matrix import gpus_model
from memrepro.layout import ConfigError, memalpha_runs, uses_qa_server


@dataclass(frozen=True)
class Machine:
    """GPUs and nodes the profile offers; None: not declared (a cluster places the jobs)."""

    gpus: int | None = None
    nodes: int | None = None

    @classmethod
    def from_resources(cls, resources: Mapping[str, Any]) -> Machine:
        """From Snakemake's `workflow.global_resources` (values, or Resource objects)."""

        def value(name: str) -> int | None:
            resource = resources.get(name)
            resource = getattr(resource, "value", resource)
            return None if resource is None else int(resource)

        return cls(gpus=value("gpu"), nodes=value("nodes"))

    def claim(self, job: str, gpus: int, nodes: int, keys: str) -> int:
        """The `gpu` resource of `job` (needing `gpus` over `nodes`, set by config `keys`): all
        of the machine's GPUs for a GPU job, or a refusal where it does not fit."""
        too_many_nodes = self.nodes is not None and nodes > self.nodes
        too_many_gpus = self.gpus is not None and gpus > self.gpus
        if too_many_nodes or too_many_gpus:
            raise ConfigError(
                f"{job} needs {_count(nodes, 'node')} with {_count(gpus, 'GPU')} ({keys}), but "
                f"this profile runs on {_count(self.nodes or 1, 'node')} with "
                f"{_count(self.gpus or 0, 'GPU')} (its `resources`). Change {keys}, run it with "
                "profiles/slurm, or leave training out (config/eval-released.yaml)."
            )
        if self.gpus is not None and gpus > 0:
            return self.gpus
        return gpus


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def gpu_keys(config: dict[str, Any], model: str) -> str:
    """The config key that sets an inference job's GPUs (a trained run's base model's)."""
    return f"models.{gpus_model(config, model)}.gpus"


def train_keys(config: dict[str, Any], run: str) -> str:
    """The config keys that set a training job's GPUs and nodes."""
    section = "memalpha.training.runs" if run in memalpha_runs(config) else "training.runs"
    keys = f"{section}.{run}.nodes and .gpus_per_node"
    if run in memalpha_runs(config) and uses_qa_server(config):
        keys += ", memalpha.training.qa_server.gpus"
    return keys
