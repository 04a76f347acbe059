#!/usr/bin/env bash
# A SLURM cluster from Debian's packages on one machine, for tests/cluster: munge,
# MariaDB + slurmdbd (the SLURM executor plugin reads job states with sacct), slurmctld on this
# host, and MEMREPRO_SLURM_NODES (2) compute nodes. Each node is a slurmd in namespaces of its own, so
# it looks like a host of its own: a network namespace with its own IP on a private bridge
# (memrepro-br, 10.213.0.0/24, this host at .1, node i at .(10+i)), its own host name (memrepro<i>),
# process table, /tmp and /dev/shm; the filesystem is otherwise shared, as a cluster's shared
# filesystem. Every node claims all of this machine's cores and 1/N of its memory, plus one
# logical GPU (a gpu GRES backed by /dev/null), so `--gpus-per-node=1` schedules.
# Run as root on a disposable machine; idempotent. `slurm_up.sh down` stops what it started.
set -euo pipefail
STATE=${MEMREPRO_SLURM_STATE:-/var/lib/memrepro-slurm}
NODES=${MEMREPRO_SLURM_NODES:-2}
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( ($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024) / NODES ))
NET=10.213.0
BRIDGE=memrepro-br

node_names() { for i in $(seq "$NODES"); do echo "memrepro$i"; done; }
stop() {
  local node
  # every process of a node (slurmd, its jobs, Ray) lives in the node's network namespace
  for node in $(ip netns list 2>/dev/null | awk '/^memrepro[0-9]+/ {print $1}'); do
    ip netns pids "$node" | xargs -r kill -9 2>/dev/null || true
    ip netns del "$node" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$STATE/nodes"  # the nodes' /tmp (Ray's session directories)
  for daemon in slurmctld slurmdbd mariadb; do
    [ -f "$STATE/$daemon.pid" ] && kill "$(cat "$STATE/$daemon.pid")" 2>/dev/null || true
    rm -f "$STATE/$daemon.pid"
  done
  pkill -x munged 2>/dev/null || true
  rm -f /run/munge/munge.socket.2
}
if [ "${1:-up}" = down ]; then stop; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "slurm_up.sh: needs root" >&2; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v mariadbd >/dev/null || ! command -v nft >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm slurmdbd munge mariadb-server iproute2 nftables \
    >/dev/null
fi
mkdir -p "$STATE"/{mysql,spool/ctld,log} /run/munge /etc/slurm

# munge: one key, one daemon
[ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
chown -R munge:munge /etc/munge /run/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
[ -S /run/munge/munge.socket.2 ] || su -s /bin/sh munge -c munged || munged --force

# MariaDB on a socket of its own, bound to 127.0.0.1
if [ ! -d "$STATE/mysql/mysql" ]; then
  mariadb-install-db --user=root --datadir="$STATE/mysql" >/dev/null
fi
if ! [ -S "$STATE/mysql.sock" ]; then
  setsid -f mariadbd --user=root --datadir="$STATE/mysql" --socket="$STATE/mysql.sock" \
    --bind-address=127.0.0.1 --port=3306 --pid-file="$STATE/mariadb.pid" \
    --log-error="$STATE/log/mariadb.log"
  for _ in $(seq 60); do [ -S "$STATE/mysql.sock" ] && break; sleep 0.5; done
fi
mariadb --socket="$STATE/mysql.sock" -uroot -e "
  CREATE DATABASE IF NOT EXISTS slurm_acct_db;
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmdbpass';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

cat > /etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=slurmdbpass
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/slurmdbd.pid
CONF
chmod 600 /etc/slurm/slurmdbd.conf

# the private network of the nodes: a bridge on this host, one veth into each node's namespace
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
fi

nodes_conf=""
for i in $(seq "$NODES"); do
  nodes_conf+="NodeName=memrepro$i NodeAddr=$NET.$((10 + i)) CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:1 State=UNKNOWN"$'\n'
done
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=memrepro
SlurmctldHost=$HOST($NET.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/spool/%n/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
ReturnToService=2
MinJobAge=300
${nodes_conf}PartitionName=cpu Nodes=memrepro[1-$NODES] Default=YES MaxTime=INFINITE State=UP
CONF
echo "NodeName=memrepro[1-$NODES] Name=gpu File=/dev/null" > /etc/slurm/gres.conf

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
alive "$STATE/slurmdbd.pid" || slurmdbd
wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll the command until it succeeds
  local seconds=$1 what=$2; shift 2
  for _ in $(seq $((seconds * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "slurm_up.sh: $what did not come up in ${seconds}s (logs: $STATE/log)" >&2; exit 1
}
wait_for 60 slurmdbd sacctmgr -n list cluster
listed() { [ -n "$(sacctmgr -n -P list "$@")" ]; }  # whether an accounting entity exists
listed cluster memrepro format=Cluster || sacctmgr -i add cluster memrepro >/dev/null
# the account the test profile submits with, and root in it
listed account memrepro format=Account || sacctmgr -i add account memrepro cluster=memrepro >/dev/null
listed assoc user=root account=memrepro format=User || sacctmgr -i add user root account=memrepro >/dev/null
alive "$STATE/slurmctld.pid" || slurmctld
# node i: a network namespace memrepro<i> holding slurmd in new UTS, PID and mount namespaces
# (host name memrepro<i>, its own /proc, a private /tmp and /dev/shm); slurmd runs in the
# foreground under a shell that reaps the namespace's orphans
start_node() {
  local node=$1 ip=$2
  ip netns add "$node"
  ip link add "v-$node" type veth peer name memrepro0 netns "$node"
  ip link set "v-$node" master "$BRIDGE" up
  ip -n "$node" addr add "$ip/24" dev memrepro0
  ip -n "$node" link set memrepro0 up
  ip -n "$node" link set lo up
  mkdir -p "$STATE/spool/$node" "$STATE/nodes/$node/tmp"
  chmod 1777 "$STATE/nodes/$node/tmp"
  setsid -f nsenter --net="/run/netns/$node" unshare --uts --pid --fork --mount-proc bash -c "
    hostname $node
    mount --bind $STATE/nodes/$node/tmp /tmp
    mount -t tmpfs tmpfs /dev/shm
    slurmd -D & wait \$!" >>"$STATE/log/node-$node.log" 2>&1 </dev/null
}
node_up() { [ -n "$(ip netns pids "$1" 2>/dev/null)" ]; }
for node in $(node_names); do
  node_up "$node" && continue
  ip netns del "$node" 2>/dev/null || true
  ip link del "v-$node" 2>/dev/null || true
  start_node "$node" "$NET.$((10 + ${node#memrepro}))"
done
# a node drained by an earlier run (its state outlives slurmctld) comes back
scontrol update nodename="memrepro[1-$NODES]" state=resume 2>/dev/null || true
wait_for 60 "$NODES idle nodes" sh -c "[ \$(sinfo -h -N -o %t | grep -cx idle) -ge $NODES ]"
sinfo -h -N -o "%N %P %T %c %m %G"
