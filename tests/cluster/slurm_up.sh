#!/usr/bin/env bash
# A single-node SLURM cluster from Debian's packages, for tests/cluster (issue 15): munge,
# MariaDB + slurmdbd (the SLURM executor plugin reads job states with sacct), slurmctld, slurmd.
# Run as root on a disposable machine; idempotent. `slurm_up.sh down` stops what it started.
set -euo pipefail
STATE=${MEMRL_SLURM_STATE:-/var/lib/memrl-slurm}
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))

stop() {
  for daemon in slurmd slurmctld slurmdbd mariadb; do
    [ -f "$STATE/$daemon.pid" ] && kill "$(cat "$STATE/$daemon.pid")" 2>/dev/null || true
    rm -f "$STATE/$daemon.pid"
  done
  pkill -x munged 2>/dev/null || true
  rm -f /run/munge/munge.socket.2
}
if [ "${1:-up}" = down ]; then stop; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "slurm_up.sh: needs root" >&2; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v mariadbd >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm slurmdbd munge mariadb-server \
    >/dev/null
fi
mkdir -p "$STATE"/{mysql,spool/ctld,spool/d,log} /run/munge /etc/slurm

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

cat > /etc/slurm/slurm.conf <<CONF
ClusterName=memrl
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
ReturnToService=2
MinJobAge=300
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=cpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
alive "$STATE/slurmdbd.pid" || slurmdbd
wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll the command until it succeeds
  local seconds=$1 what=$2; shift 2
  for _ in $(seq $((seconds * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "slurm_up.sh: $what did not come up in ${seconds}s (logs: $STATE/log)" >&2; exit 1
}
wait_for 60 slurmdbd sacctmgr -n list cluster
listed() { [ -n "$(sacctmgr -n -P list "$@")" ]; }  # whether an accounting entity exists
listed cluster memrl format=Cluster || sacctmgr -i add cluster memrl >/dev/null
# the account the test profile submits with, and root in it
listed account memrl format=Account || sacctmgr -i add account memrl cluster=memrl >/dev/null
listed assoc user=root account=memrl format=User || sacctmgr -i add user root account=memrl >/dev/null
alive "$STATE/slurmctld.pid" || slurmctld
alive "$STATE/slurmd.pid" || slurmd
wait_for 60 "an idle node" sh -c "sinfo -h -o %T | grep -q idle"
sinfo -h -o "%P %D %T %c %m"
