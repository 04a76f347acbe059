"""A CPU-only Ray driver for ray_job.sh on the test cluster (tests/cluster/test_ray.py): it checks
that the cluster has every node and its resources, runs one task pinned to each node and prints
where each ran and the image it ran in (the identity file every image of ours carries, read from
inside; none on the host). `--fail` exits 3 after that, `--hold S` then waits S seconds (a head to
kill)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

IMAGE_MARKER = Path("/opt/memrepro/image.json")  # memrepro.software.IMAGE_MARKER (no memrepro here)


def image() -> dict | None:
    return json.loads(IMAGE_MARKER.read_text()) if IMAGE_MARKER.is_file() else None


@ray.remote(num_cpus=1)
def where() -> dict:
    return {"host": socket.gethostname(), "ip": ray.util.get_node_ip_address(), "image": image()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--gpus-per-node", type=int, required=True)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--hold", type=float, default=0)
    args = parser.parse_args()

    ray.init(logging_level="ERROR")  # RAY_ADDRESS, from ray_job.sh
    alive = [node for node in ray.nodes() if node["Alive"]]
    resources = ray.cluster_resources()
    if len(alive) != args.nodes or resources.get("GPU") != args.nodes * args.gpus_per_node:
        print(f"ray_driver: expected {args.nodes} nodes, got {len(alive)}: {resources}")
        return 4
    pinned = [
        where.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        )
        for node in alive
    ]
    ran = ray.get([task.remote() for task in pinned], timeout=120)
    report = {
        "driver": socket.gethostname(),
        "driver_image": image(),
        "tasks": ran,
        "resources": resources,
    }
    print("RAY_DRIVER " + json.dumps(report, sort_keys=True), flush=True)
    if args.fail:
        return 3
    time.sleep(args.hold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
