#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, to try the workflow's SLURM profile (profiles/slurm/) for real
# (issue 26; tests/test_slurm.py drives it). Debian's packages; needs root.
#
#   bench/cluster/slurm_cluster.sh install   # apt-get install slurm-wlm munge (once)
#   bench/cluster/slurm_cluster.sh start     # write /etc/slurm/slurm.conf for this host, start munged, slurmctld, slurmd
#   bench/cluster/slurm_cluster.sh status    # sinfo
#   bench/cluster/slurm_cluster.sh stop      # stop the daemons this script started
#
# The node offers every CPU and 90% of the memory of this machine, no GPU (a job asking for one is
# refused by sbatch, as on a CPU partition). No slurmdbd: the executor plugin is run with
# `--slurm-status-command squeue --slurm-no-account` (MinJobAge is long enough for squeue to see
# finished jobs); on a real cluster leave both to the plugin's defaults.
set -euo pipefail

STATE=${SLURM_LOCAL_STATE:-/var/lib/slurm-local}
CONF=/etc/slurm/slurm.conf

need_root() { [ "$(id -u)" = 0 ] || { echo "run as root (apt-get and the daemons need it)" >&2; exit 1; }; }

install() {
  need_root
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return 0
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
}

write_conf() {
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  mkdir -p "$STATE/ctld" "$STATE/d" /var/log/slurm /etc/slurm
  cat >"$CONF" <<EOF
# Written by bench/cluster/slurm_cluster.sh: a one-node test cluster.
ClusterName=local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=3600
ReturnToService=2
MpiDefault=none
SchedulerParameters=sched_interval=1,bf_interval=1
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  rm -f /etc/slurm/cgroup.conf  # proctrack/linuxproc, task/none: no cgroups needed (containers often lack them)
}

start() {
  need_root
  install
  write_conf
  pgrep -x munged >/dev/null || { mkdir -p /run/munge && chown munge:munge /run/munge && su -s /bin/sh munge -c munged; }
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 30); do
    sinfo -h -o %t 2>/dev/null | grep -qx idle && { sinfo; return 0; }
    scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  echo "the node did not come up idle; see /var/log/slurm/" >&2
  sinfo >&2 || true
  exit 1
}

stop() {
  need_root
  for pidfile in "$STATE/slurmd.pid" "$STATE/slurmctld.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  status) sinfo ;;
  stop) stop ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
