#!/usr/bin/env bash
# Run a command on a Ray cluster spanning a job's nodes (the verl trainer: memrepro.verl.overrides).
#
#   ray_job.sh --nodes N --gpus-per-node G [--container IMAGE] -- cmd [args...]
#
# --container IMAGE: srun stays on the host and everything of Ray's runs in IMAGE (the train
#   environment's), through `apptainer exec $MEMREPRO_CONTAINER_ARGS IMAGE ...`: each node's
#   `ray start`, the health checks and cmd. Without it Ray and cmd come from PATH.
# N == 1: exec cmd (in IMAGE with --container); verl's run_ppo starts a local Ray itself.
# N > 1: inside a SLURM allocation of at least N nodes, start Ray on the first N, run cmd on the
#   head (the first node) only, stop Ray. Two ways, chosen by MEMREPRO_RAY_LAUNCH:
#   manual (default)  `ray start --block` on the head, then on every worker, each one srun step
#                     in the background (ports from MEMREPRO_RAY_PORT, so two jobs with ports 1000
#                     apart can share nodes); cmd on the head (srun) with RAY_ADDRESS set once
#                     all N nodes are alive. Every step is watched: Ray exiting on any node
#                     before or while cmd runs ends the job with that node's name; waits are
#                     bounded by MEMREPRO_RAY_WAIT. On exit each Ray step's srun gets SIGTERM,
#                     on which SLURM kills the step (its processes get SIGKILL; a container
#                     launcher's image ends with it), and srun is killed if it outlives
#                     MEMREPRO_RAY_STOP_WAIT.
#   symmetric         one `srun ... ray symmetric-run` (Ray >= 2.49): every node starts Ray, the
#                     head runs cmd, then stops the cluster. Ray's own waits (30 s for the
#                     nodes: RAY_SYMMETRIC_RUN_CLUSTER_WAIT_TIMEOUT); it exits 0 when Ray itself
#                     fails to start, so the caller (memrepro train) checks the final checkpoint.
#                     Not for nodes shared with other Ray clusters (fixed default ports).
# The head's address is the node's NodeAddr in SLURM (the address the cluster reaches it at),
# or the IPv4 address of RAY_NETWORK_INTERFACE on it.
# Exit status: cmd's own; 1 when Ray died under it; 2 for a usage error, a missing tool or a
# cluster that did not come up in time.
# Environment:
#   MEMREPRO_RAY_PORT         GCS port of the head (6379); in manual mode the other ports follow it
#   MEMREPRO_RAY_WAIT         seconds to wait for the head, then for all nodes (300, manual mode)
#   MEMREPRO_RAY_STOP_WAIT    seconds Ray gets to stop before its steps are killed (60, manual mode)
#   RAY_NETWORK_INTERFACE  interface whose IPv4 address the head advertises (e.g. ib0); also the
#                          default of NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME
#   MEMREPRO_SRUN_ARGS        extra srun arguments for the site (word-split), e.g. "--mpi=none"
#   MEMREPRO_APPTAINER        the container launcher (apptainer; singularity; envs/podman/apptainer)
#   MEMREPRO_CONTAINER_ARGS   its exec options (word-split; default --nv: the node's GPUs inside)
# srun inherits this environment (--export=ALL), so MLFLOW_*, HF_*, NCCL_*, GLOO_* and the rest
# reach every node's Ray processes; memrepro.verl.main also forwards MLFLOW_*/HF_* to Ray actors.
set -euo pipefail

die() {
    echo "ray_job.sh: $*" >&2
    exit 2
}

nodes=""
gpus=""
image=""
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
    --container)
        image="${2:-}"
        shift 2 || die "--container needs an image"
        ;;
    --)
        shift
        break
        ;;
    *) die "unknown argument '$1' (usage: ray_job.sh --nodes N --gpus-per-node G [--container IMAGE] -- cmd...)" ;;
    esac
done
[[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got '$nodes'"
[[ "$gpus" =~ ^[1-9][0-9]*$ ]] || die "--gpus-per-node must be a positive integer, got '$gpus'"
(($#)) || die "no command after --"

in_image=() # the prefix that runs a command in the image; none without --container
if [[ -n "$image" ]]; then
    launcher="${MEMREPRO_APPTAINER:-apptainer}"
    command -v "$launcher" >/dev/null ||
        die "$launcher not found (MEMREPRO_APPTAINER): --container $image needs apptainer on every node"
    read -r -a container_args <<<"${MEMREPRO_CONTAINER_ARGS---nv}"
    in_image=("$launcher" exec "${container_args[@]}" "$image")
fi

if ((nodes == 1)); then
    exec "${in_image[@]}" "$@"
fi

[[ -n "${SLURM_JOB_ID:-}" && -n "${SLURM_JOB_NODELIST:-}" ]] ||
    die "--nodes $nodes needs a SLURM allocation of $nodes nodes (SLURM_JOB_ID is not set);" \
        "run multi-node training through the slurm profile, or set training.runs.<run>.nodes: 1"
command -v srun >/dev/null || die "srun not found"
[[ -n "$image" ]] || command -v ray >/dev/null ||
    die "ray not found on PATH (activate the train environment, or give --container IMAGE)"

mapfile -t all_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
((${#all_nodes[@]} >= nodes)) ||
    die "the allocation has ${#all_nodes[@]} node(s) (${SLURM_JOB_NODELIST}), $nodes requested"
job_nodes=("${all_nodes[@]:0:nodes}")
head_node="${job_nodes[0]}"
node_list="$(
    IFS=,
    echo "${job_nodes[*]}"
)"
port="${MEMREPRO_RAY_PORT:-6379}"
read -r -a site_args <<<"${MEMREPRO_SRUN_ARGS:-}"
srun_args=(--export=ALL --overlap --gpus-per-node="$gpus" "${site_args[@]}")

cpu_args=()
if [[ -n "${SLURM_CPUS_PER_TASK:-}" ]]; then
    cpu_args=(--num-cpus="$SLURM_CPUS_PER_TASK")
fi

if [[ -n "${RAY_NETWORK_INTERFACE:-}" ]]; then
    export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-$RAY_NETWORK_INTERFACE}"
    export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-$RAY_NETWORK_INTERFACE}"
fi
node_ip() { # the IPv4 address Ray advertises for a node
    if [[ -n "${RAY_NETWORK_INTERFACE:-}" ]]; then
        srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$1" \
            ip -o -4 addr show dev "$RAY_NETWORK_INTERFACE" | awk '{split($4, a, "/"); print a[1]; exit}'
    else
        local addr
        addr="$(scontrol show node "$1" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)"
        getent ahostsv4 "${addr:-$1}" | awk '{print $1; exit}'
    fi
}
head_ip="$(node_ip "$head_node")"
[[ -n "$head_ip" ]] || die "could not find the IP address of the head node $head_node"
address="$head_ip:$port"
echo "ray_job.sh: $nodes nodes ($node_list), head $head_node at $address" >&2

case "${MEMREPRO_RAY_LAUNCH:-manual}" in
symmetric)
    exec srun "${srun_args[@]}" --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1 \
        -w "$node_list" \
        "${in_image[@]}" ray symmetric-run --address "$address" --min-nodes "$nodes" \
        "${cpu_args[@]}" --num-gpus="$gpus" -- "$@"
    ;;
manual) ;;
*) die "MEMREPRO_RAY_LAUNCH must be symmetric or manual, got '${MEMREPRO_RAY_LAUNCH}'" ;;
esac

# manual: every port from a block above the GCS port, so jobs with distinct MEMREPRO_RAY_PORT
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
declare -A ray_pid # node -> pid of the srun step running `ray start --block` there

stop_ray() {
    local node deadline=$((SECONDS + ${MEMREPRO_RAY_STOP_WAIT:-60}))
    for node in "${!ray_pid[@]}"; do
        kill -TERM "${ray_pid[$node]}" 2>/dev/null || true # srun kills its step
    done
    for node in "${!ray_pid[@]}"; do
        while kill -0 "${ray_pid[$node]}" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 1
        done
        kill -KILL "${ray_pid[$node]}" 2>/dev/null || true
    done
}
trap stop_ray EXIT
trap 'exit 143' TERM INT

start_ray() { # start_ray NODE ARGS...: `ray start --block` as a background step on NODE
    local node=$1
    shift
    srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$node" \
        "${in_image[@]}" ray start "$@" "${port_args[@]}" "${cpu_args[@]}" --num-gpus="$gpus" --block &
    ray_pid[$node]=$!
}

dead_ray_node() { # print a node whose Ray step has exited
    local node
    for node in "${!ray_pid[@]}"; do
        kill -0 "${ray_pid[$node]}" 2>/dev/null || {
            echo "$node"
            return 0
        }
    done
    return 1
}

ray_died() { # ray_died NODE WHEN: say that Ray exited on NODE, exit 1
    local status=0
    wait "${ray_pid[$1]}" || status=$?
    echo "ray_job.sh: Ray on $1 exited (status $status) $2; its log is above" >&2
    exit 1
}

wait_until() { # wait_until WHAT COMMAND...: poll COMMAND until it succeeds, Ray alive meanwhile
    local what=$1 limit="${MEMREPRO_RAY_WAIT:-300}" node
    local deadline=$((SECONDS + limit))
    shift
    until "$@" >/dev/null 2>&1; do
        if node=$(dead_ray_node); then ray_died "$node" "while waiting for $what"; fi
        ((SECONDS < deadline)) || die "gave up waiting for $what after ${limit}s (MEMREPRO_RAY_WAIT)"
        sleep 2
    done
}

alive_nodes_at_least() {
    RAY_ADDRESS="$address" "${in_image[@]}" python -c "import ray, sys; ray.init(logging_level='ERROR')
sys.exit(sum(n['Alive'] for n in ray.nodes()) < $1)"
}

start_ray "$head_node" --head --node-ip-address="$head_ip" --port="$port" --include-dashboard=false
wait_until "the Ray head on $head_node at $address" "${in_image[@]}" ray health-check --address "$address"
for node in "${job_nodes[@]:1}"; do
    ip="$(node_ip "$node")"
    [[ -n "$ip" ]] || die "could not find the IP address of node $node"
    start_ray "$node" --address="$address" --node-ip-address="$ip"
done
wait_until "all $nodes Ray nodes (can every node reach $address?)" alive_nodes_at_least "$nodes"
echo "ray_job.sh: Ray is up on $nodes nodes, running on $head_node: $*" >&2

srun "${srun_args[@]}" --nodes=1 --ntasks=1 -w "$head_node" env RAY_ADDRESS="$address" "${in_image[@]}" "$@" &
command_pid=$!
while kill -0 "$command_pid" 2>/dev/null; do
    wait -n "$command_pid" "${ray_pid[@]}" || true
    if node=$(dead_ray_node); then
        kill -TERM "$command_pid" 2>/dev/null || true
        wait "$command_pid" || true
        ray_died "$node" "while the command was running"
    fi
done
status=0
wait "$command_pid" || status=$?
((status == 0)) || echo "ray_job.sh: the command exited with status $status on $head_node" >&2
exit "$status"
