#!/bin/bash
# Slurm on the testbed (tools/cluster/testbed.sh): a cluster whose nodes
# are the testbed's hosts, for the tests that launch `tandem serve` with
# srun or sbatch (docs/cluster.md, "Slurm").
#
#   tools/cluster/testbed_daemons.sh start   # munged, slurmctld, one slurmd per host
#   tools/cluster/testbed_daemons.sh stop    # every daemon start started (safe when none runs)
#   tools/cluster/testbed_daemons.sh conf    # the slurm.conf path, for SLURM_CONF
#
# `start` needs a testbed that is up; it first stops whatever an earlier
# start left, writes everything under the testbed's state directory
# (/run/NAME-testbed/slurm) and waits until every host is an idle node.
# Nothing in /etc is read or written: Debian's packages leave a munge key
# and users there, but the daemons here use a key of their own, the
# configuration written here (slurmctld -f, slurmd -f, SLURM_CONF for the
# commands) and run as root.
#
#   munged     one, in the machine's own namespaces; every host reaches it
#              through its socket's path (a Unix socket is a file, not a
#              network address, so the network namespaces do not matter)
#   slurmctld  inside the first host ($TB-h1), port 6817
#   slurmd     one inside each host, NodeName = the host's name, NodeAddr =
#              its address, port 6818
# The ports are Slurm's own: each host has a network stack of its own, so
# testbeds of different names never share a port. Clients (srun, sbatch,
# squeue, sinfo, scontrol, scancel) must run inside a host too, with
# SLURM_CONF set to `conf`'s path: they reach slurmctld on 10.213.0.11.
#
# Without systemd or cgroups: processes are tracked by their parents
# (proctrack/linuxproc) and tasks are not bound (task/none). Slurm's pmix
# plugin keeps its sockets in TmpFS, which must differ per node since the
# hosts share one file system (else the second node fails: "File exists").
#
# Every daemon started here carries TANDEM_TESTBED_DAEMON=NAME in its
# environment: `stop` finds them by it, even when `start` failed halfway,
# and kills them, with the slurmstepd (and slurmscriptd) they started inside
# the hosts and every process below those, the jobs' included: SIGTERM,
# then SIGKILL 3 s later.
set -euo pipefail

NAME=${TANDEM_TESTBED_NAME:-tandem}
[[ "$NAME" =~ ^[a-z][a-z0-9]{0,11}$ ]] || { echo "testbed_daemons: TANDEM_TESTBED_NAME must be 1-12 of a-z0-9, starting with a letter" >&2; exit 1; }
STATE=/run/$NAME-testbed           # as in testbed.sh
DIR=$STATE/slurm
CONF=$DIR/slurm.conf
SOCKET=$DIR/munge.socket
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MARK=TANDEM_TESTBED_DAEMON

die() { echo "testbed_daemons: $*" >&2; exit 1; }

# The processes whose environment holds MARK=NAME: the daemons.
marked_pids() {
  grep -lxz "$MARK=$NAME" /proc/[0-9]*/environ 2>/dev/null | awk -F/ -v self=$$ '$3 != self {print $3}' || true
}

# The daemons, the helpers they start inside the hosts (slurmstepd for each
# step, slurmctld's slurmscriptd: slurmd hands them a clean environment,
# without the mark) and every process below those (the jobs' own), living
# ones only.
daemon_pids() {
  local roots ns pid
  roots=$(marked_pids)
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-h[0-9]+$" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
      case "$(cat /proc/$pid/comm 2>/dev/null)" in slurmstepd | slurmscriptd) roots="$roots $pid" ;; esac
    done
  done
  [ -n "${roots// /}" ] || return 0
  ps -eo pid=,ppid=,stat= | awk -v roots="$roots" -v self=$$ '
    $3 !~ /^Z/ { parent[$1] = $2 }
    END {
      n = split(roots, r, " ")
      for (i = 1; i <= n; i++) if (r[i] in parent) keep[r[i]] = 1
      for (grew = 1; grew;) {
        grew = 0
        for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
      }
      for (p in keep) if (p != self) print p
    }'
}

# The PIDs given that are still running (zombies are done).
running() {
  local pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] || echo "$pid"
  done
}

stop() {
  # Once a slurmstepd is gone, what ran below it no longer descends from a
  # daemon: every PID seen at any pass stays on the list.
  local pids
  pids=$(daemon_pids)
  if [ -n "$pids" ]; then
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 30); do
      pids=$(running $(echo "$pids" $(daemon_pids) | tr ' ' '\n' | sort -u))
      [ -z "$pids" ] && break
      kill -TERM $pids 2>/dev/null || true
      sleep 0.1
    done
    if [ -n "$pids" ]; then kill -KILL $pids 2>/dev/null || true; sleep 0.2; fi
  fi
  pids=$(running $pids $(daemon_pids))
  [ -z "$pids" ] || die "still running after SIGKILL: $pids"
  rm -rf "$DIR"
}

write_conf() {  # write_conf CONTROLLER_HOST
  local controller=$1 host address
  address=$(awk -v h="$controller" '$1 == h {print $2}' "$STATE/hosts")
  cat >"$CONF" <<EOF
# Written by tools/cluster/testbed_daemons.sh for testbed $NAME.
ClusterName=$NAME
SlurmctldHost=$controller($address)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
TmpFS=$DIR/tmp/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=pmix
# A node that registers comes back into service; the CPUs below are taken
# as written, whatever the machine has (the hosts share its cores).
ReturnToService=2
SlurmdParameters=config_overrides
# A plain scancel's SIGKILL follows its SIGTERM after this many seconds.
KillWait=10
PlugStackConfig=$DIR/plugstack.conf
MailProg=/bin/true
EOF
  : >"$DIR/plugstack.conf"   # none: /etc/slurm's is not ours
  while read -r host address; do
    echo "NodeName=$host NodeAddr=$address CPUs=2 State=UNKNOWN" >>"$CONF"
  done <"$STATE/hosts"
  echo "PartitionName=testbed Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
}

on_host() { "$HERE/testbed_exec.sh" "$@"; }

show_logs() {
  local log
  for log in "$DIR"/log/*; do
    [ -e "$log" ] || continue
    echo "--- $log"; tail -n 20 "$log"
  done >&2
}

start() {
  [ -f "$STATE/hosts" ] || die "no testbed is up (tools/cluster/testbed.sh up N first)"
  for tool in munged slurmctld slurmd sinfo; do
    command -v $tool >/dev/null || die "needs '$tool' (Debian: munge slurmctld slurmd slurm-client)"
  done
  stop
  local hosts first host
  hosts=$(awk '{print $1}' "$STATE/hosts")
  first=$(echo "$hosts" | head -n 1)
  mkdir -p -m 700 "$DIR"
  mkdir -p "$DIR/ctld" "$DIR/log"
  for host in $hosts; do mkdir -p "$DIR/spool/$host" "$DIR/tmp/$host"; done
  (umask 077 && head -c 1024 /dev/urandom >"$DIR/munge.key")
  write_conf "$first"
  export $MARK=$NAME SLURM_CONF=$CONF

  # --force: munged wants a socket every user can reach; only root uses
  # this one, in a directory only root may enter.
  munged --force --socket="$SOCKET" --key-file="$DIR/munge.key" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munged.seed" ||
    { show_logs; die "munged did not start"; }
  on_host "$first" slurmctld -f "$CONF" || { show_logs; die "slurmctld did not start"; }
  for host in $hosts; do
    on_host "$host" slurmd -f "$CONF" -N "$host" || { show_logs; die "slurmd on $host did not start"; }
  done

  local count idle
  count=$(echo "$hosts" | wc -l)
  for _ in $(seq 1 300); do
    idle=$(on_host "$first" sinfo -h -N -o %T 2>/dev/null | grep -cx idle || true)
    if [ "$idle" = "$count" ]; then
      echo "testbed_daemons: slurm up, $count idle nodes ($(echo $hosts))"
      return 0
    fi
    sleep 0.1
  done
  on_host "$first" sinfo -N >&2 || true
  show_logs
  die "the nodes were not all idle within 30 s"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  conf) echo "$CONF" ;;
  *) die "usage: testbed_daemons.sh start | stop | conf" ;;
esac
