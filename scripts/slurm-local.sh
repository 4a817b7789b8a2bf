#!/usr/bin/env bash
# slurm-local.sh - a private Slurm cluster (one node, or a few) on this
# machine, to try deploy/slurm/probs.sbatch (tests/test_slurm.sh uses it).
#
#   scripts/slurm-local.sh start DIR [NODES]  # as root; prints the SLURM_CONF to export
#   scripts/slurm-local.sh stop DIR           # stops what `start DIR` started
#   scripts/slurm-local.sh status DIR         # exit 0 if its controller answers
#
# Everything of the cluster lives in DIR: slurm.conf, the state and spool
# directories, pid and log files. Its controller and node daemons listen on
# free ports of 127.0.0.1, so it runs beside a system Slurm (if any) without
# touching /etc/slurm; commands reach it with SLURM_CONF=DIR/slurm.conf.
# With NODES = 1 (the default) the node is this host, named as it, with all
# its CPUs; with NODES > 1 there are that many node daemons on this host,
# pbnode1..NODES (names that do not resolve: they have a NodeAddr, as on
# clusters whose node names are not host names), sharing the CPUs. One
# partition, "probs". Authentication is munge's: its daemon is started if
# none answers (and stopped again by `stop`). Process tracking by parent pid
# and no task plugin: no cgroups needed. Needs Debian's slurm-wlm
# (slurmctld, slurmd, slurm-client, munge).
set -uo pipefail

PROG=slurm-local.sh

die() {
  echo "$PROG: $*" >&2
  exit 1
}
say() { echo "$PROG: $*" >&2; }

usage() {
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
}

# free_port [EXCEPT...]: a TCP port of 127.0.0.1 that nothing listens on,
# below Linux's ephemeral range (so no outgoing connection holds it).
free_port() {
  local p i e
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    for e in "$@"; do [ "$p" = "$e" ] && continue 2; done
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# alive PIDFILE: the process named in PIDFILE is running.
alive() {
  local pid
  [ -r "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null)
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

# stop_pidfile PIDFILE NAME: SIGTERM, then SIGKILL after 10 s.
stop_pidfile() {
  local pid i
  alive "$1" || { rm -f "$1"; return 0; }
  pid=$(cat "$1")
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$1"; return 0; }
    sleep 0.25
  done
  say "$2 (pid $pid) did not stop on SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null
  rm -f "$1"
}

munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

start() {
  local dir=$1 nodes=${2:-1}
  [[ "$nodes" =~ ^[1-9]$ ]] || die "NODES='$nodes': expected 1..9"
  [ "$(id -u)" -eq 0 ] || die "needs root (the daemons run as root here)"
  local b
  for b in slurmctld slurmd sbatch sinfo munge munged; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
      die "$b is missing: install Debian's slurm-wlm (apt-get install slurm-wlm)"
  done
  mkdir -p "$dir" || die "cannot create $dir"
  dir=$(cd "$dir" && pwd) || die "cannot enter $dir"
  local conf="$dir/slurm.conf"
  export SLURM_CONF="$conf"
  if alive "$dir/slurmctld.pid"; then
    say "already running in $dir"
    echo "export SLURM_CONF=$conf"
    return 0
  fi

  # munge: the system's daemon if one answers, else ours.
  if ! munge_ok; then
    [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing (create it: mungekey, or dd 1024 random bytes; owner munge, mode 0400)"
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null
    runuser -u munge -- /usr/sbin/munged --force ||
      die "cannot start munged (see /var/log/munge/munged.log)"
    cp /run/munge/munged.pid "$dir/munged.pid" 2>/dev/null
    local i
    for ((i = 0; i < 40; i++)); do munge_ok && break; sleep 0.25; done
    munge_ok || die "munged does not answer"
  fi

  local host ctl_port cpus mem i port ports=() names=() node_lines=""
  host=$(hostname -s) || die "no host name"
  ctl_port=$(free_port) || die "no free port"
  cpus=$(nproc)
  cpus=$((cpus / nodes > 0 ? cpus / nodes : 1))
  mem=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
  [ "$mem" -gt 4096 ] && mem=$((mem - 2048))
  mem=$((mem / nodes))
  for ((i = 1; i <= nodes; i++)); do
    port=$(free_port "$ctl_port" "${ports[@]}") || die "no free port"
    ports+=("$port")
    if [ "$nodes" -eq 1 ]; then
      names+=("$host")
    else
      names+=("pbnode$i")
    fi
    node_lines+="NodeName=${names[-1]} NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
  done
  mkdir -p "$dir/state" || die "cannot create $dir/state"
  cat >"$conf" <<EOF
# A one-node Slurm made by scripts/slurm-local.sh; use: export SLURM_CONF=$conf
ClusterName=probs$$
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=30
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
${node_lines}PartitionName=probs Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP
EOF
  slurmctld -f "$conf" -i || die "slurmctld did not start (see $dir/slurmctld.log)"
  local n
  for n in "${names[@]}"; do
    slurmd -f "$conf" -N "$n" || die "slurmd of node $n did not start (see $dir/slurmd-$n.log)"
  done
  local up=0
  for ((i = 0; i < 120; i++)); do
    up=$(sinfo -h -N -o %T 2>/dev/null | grep -c -E '^(idle|mix|alloc)')
    [ "$up" -ge "$nodes" ] && break
    sleep 0.5
  done
  [ "$up" -ge "$nodes" ] ||
    die "$up of $nodes node(s) up (see $dir/slurmctld.log and $dir/slurmd-*.log)"
  say "Slurm up: node(s) ${names[*]} ($cpus CPUs each) on this host, controller on 127.0.0.1:$ctl_port"
  echo "export SLURM_CONF=$conf"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd) || return 1
  local conf="$dir/slurm.conf"
  if [ -r "$conf" ] && alive "$dir/slurmctld.pid"; then
    SLURM_CONF=$conf scancel --full --quiet --partition=probs 2>/dev/null
  fi
  local f
  for f in "$dir"/slurmd-*.pid; do
    [ -e "$f" ] && stop_pidfile "$f" slurmd
  done
  stop_pidfile "$dir/slurmctld.pid" slurmctld
  # Job steps the node daemon left behind (slurmstepd of this cluster).
  local p
  for p in $(pgrep -x slurmstepd 2>/dev/null); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$conf"; then
      kill -KILL "$p" 2>/dev/null
    fi
  done
  [ -e "$dir/munged.pid" ] && stop_pidfile "$dir/munged.pid" munged
  return 0
}

[ $# -ge 2 ] || { usage >&2; exit 2; }
case "$1" in
  start) [ $# -le 3 ] || { usage >&2; exit 2; }; start "$2" "${3:-1}" ;;
  stop) stop "$2" ;;
  status) SLURM_CONF="$2/slurm.conf" sinfo -h >/dev/null 2>&1 ;;
  *) usage >&2; exit 2 ;;
esac
