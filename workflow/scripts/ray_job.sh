#!/usr/bin/env bash
# Run a command on a Ray cluster spanning a job's nodes (the verl trainer: memrl.verl.overrides).
#
#   ray_job.sh --nodes N --gpus-per-node G -- cmd [args...]
#
# N == 1: exec cmd; verl's run_ppo starts a local Ray itself.
# N > 1: inside a SLURM allocation of at least N nodes, start Ray on the first N, run cmd on the
#   head (the first node) only, stop Ray. Two ways, chosen by MEMRL_RAY_LAUNCH:
#   symmetric (default)  one `srun ... ray symmetric-run` (Ray >= 2.49): every node starts Ray,
#                        the head runs cmd, then stops the cluster. Not for nodes shared with
#                        other Ray clusters (fixed default ports).
#   manual               head and workers started with `ray start ... --block` in the background
#                        (port ranges from MEMRL_RAY_PORT, so two jobs on one node can coexist),
#                        cmd on the head (srun) with RAY_ADDRESS set, Ray stopped on exit.
# Environment:
#   MEMRL_RAY_PORT         GCS port of the head (6379); in manual mode the other ports follow it
#   MEMRL_RAY_WAIT         seconds to wait for all nodes (300, manual mode)
#   RAY_NETWORK_INTERFACE  interface whose IPv4 address the head advertises (e.g. ib0); also the
#                          default of NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME
#   MEMRL_SRUN_ARGS        extra srun arguments for the site (word-split), e.g. "--mpi=none"
# srun inherits this environment (--export=ALL), so MLFLOW_*, HF_*, NCCL_*, GLOO_* and the rest
# reach every node's Ray processes; memrl.verl.main also forwards MLFLOW_*/HF_* to Ray actors.
# `ray symmetric-run` exits 0 when Ray itself fails to start: the caller (memrl train) checks
# that the final checkpoint exists.
set -euo pipefail

die() {
    echo "ray_job.sh: $*" >&2
    exit 2
}

nodes=""
gpus=""
while (($#)); do
    case "$1" in
    --nodes)
        nodes="${2:-}"
        shift 2 || die "--nodes needs a value"
        ;;
    --gpus-per-node)
        gpus="${2:-}"
        shift 2 || die "--gpus-per-node needs a value"
        ;;
    --)
        shift
        break
        ;;
    *) die "unknown argument '$1' (usage: ray_job.sh --nodes N --gpus-per-node G -- cmd...)" ;;
    esac
done
[[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got '$nodes'"
[[ "$gpus" =~ ^[1-9][0-9]*$ ]] || die "--gpus-per-node must be a positive integer, got '$gpus'"
(($#)) || die "no command after --"

if ((nodes == 1)); then
    exec "$@"
fi

[[ -n "${SLURM_JOB_ID:-}" && -n "${SLURM_JOB_NODELIST:-}" ]] ||
    die "--nodes $nodes needs a SLURM allocation of $nodes nodes (SLURM_JOB_ID is not set);" \
        "run multi-node training through the slurm profile, or set training.runs.<run>.nodes: 1"
command -v srun >/dev/null || die "srun not found"
command -v ray >/dev/null || die "ray not found on PATH (activate the train environment)"

mapfile -t all_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
((${#all_nodes[@]} >= nodes)) ||
    die "the allocation has ${#all_nodes[@]} node(s) (${SLURM_JOB_NODELIST}), $nodes requested"
job_nodes=("${all_nodes[@]:0:nodes}")
head_node="${job_nodes[0]}"
node_list="$(
    IFS=,
    echo "${job_nodes[*]}"
)"
port="${MEMRL_RAY_PORT:-6379}"
read -r -a site_args <<<"${MEMRL_SRUN_ARGS:-}"
srun_args=(--export=ALL --overlap --gpus-per-node="$gpus" "${site_args[@]}")

cpu_args=()
if [[ -n "${SLURM_CPUS_PER_TASK:-}" ]]; then
    cpu_args=(--num-cpus="$SLURM_CPUS_PER_TASK")
fi

if [[ -n "${RAY_NETWORK_INTERFACE:-}" ]]; then
    export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-$RAY_NETWORK_INTERFACE}"
    export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-$RAY_NETWORK_INTERFACE}"
    head_ip="$(srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$head_node" \
        ip -o -4 addr show dev "$RAY_NETWORK_INTERFACE" | awk '{split($4, a, "/"); print a[1]; exit}')"
else
    head_ip="$(srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$head_node" \
        hostname --ip-address | awk '{print $1; exit}')"
fi
[[ -n "$head_ip" ]] || die "could not find the IP address of the head node $head_node"
address="$head_ip:$port"
echo "ray_job.sh: $nodes nodes ($node_list), head $head_node at $address" >&2

case "${MEMRL_RAY_LAUNCH:-symmetric}" in
symmetric)
    exec srun "${srun_args[@]}" --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1 \
        -w "$node_list" \
        ray symmetric-run --address "$address" --min-nodes "$nodes" \
        "${cpu_args[@]}" --num-gpus="$gpus" -- "$@"
    ;;
manual) ;;
*) die "MEMRL_RAY_LAUNCH must be symmetric or manual, got '${MEMRL_RAY_LAUNCH}'" ;;
esac

# manual: every port from a block above the GCS port, so jobs with distinct MEMRL_RAY_PORT
# (at least 1000 apart) share nodes; no dashboard
port_args=(
    --node-manager-port=$((port + 1))
    --object-manager-port=$((port + 2))
    --ray-client-server-port=$((port + 3))
    --dashboard-agent-listen-port=$((port + 4))
    --dashboard-agent-grpc-port=$((port + 5))
    --metrics-export-port=$((port + 6))
    --runtime-env-agent-port=$((port + 7))
    --min-worker-port=$((port + 10))
    --max-worker-port=$((port + 999))
)
ray_pids=()
cleanup() {
    local pid
    srun "${srun_args[@]}" --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1 \
        -w "$node_list" ray stop --force >/dev/null 2>&1 || true
    for pid in "${ray_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$head_node" \
    ray start --head --node-ip-address="$head_ip" --port="$port" --include-dashboard=false \
    "${port_args[@]}" \
    "${cpu_args[@]}" --num-gpus="$gpus" --block &
ray_pids+=($!)
sleep 10
for node in "${job_nodes[@]:1}"; do
    srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$node" \
        ray start --address="$address" "${port_args[@]}" "${cpu_args[@]}" --num-gpus="$gpus" \
        --block &
    ray_pids+=($!)
done

waited=0
deadline="${MEMRL_RAY_WAIT:-300}"
until RAY_ADDRESS="$address" python -c \
    "import ray, sys; ray.init(); sys.exit(sum(n['Alive'] for n in ray.nodes()) < $nodes)" \
    >/dev/null 2>&1; do
    ((waited < deadline)) || die "Ray did not reach $nodes nodes within ${deadline}s"
    sleep 10
    waited=$((waited + 10))
done
echo "ray_job.sh: Ray is up on $nodes nodes, running on $head_node: $*" >&2

srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$head_node" env RAY_ADDRESS="$address" "$@"
