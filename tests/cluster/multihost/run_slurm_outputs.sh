#!/bin/bash
# `tandem serve` launched by Slurm across four hosts gives exactly the
# outputs of one process. Slurm runs on a testbed of four hosts
# (tools/cluster/testbed_daemons.sh: munged, slurmctld, a slurmd per host);
# configs/examples/tandem.sbatch, submitted with sbatch, runs
# configs/cluster-cpu.yaml's placement with srun --mpi=pmix, one task per
# node: the coordinator on the first host, the draft on the second, the
# target tensor-parallel over the third and fourth. Checked:
#   - every rank runs on its own host, rank 0 on the first; the ranks form
#     one MPI job of four (Tandem recognised Slurm's PMIx environment),
#     not four lone servers;
#   - the completions (greedy with every drafter, seeded sampling) are
#     the single process's, byte for byte;
#   - scancel --signal=TERM ends the job gracefully within 60 s: it leaves
#     the queue COMPLETED with exit code 0;
#   - taking the testbed down leaves no daemon, namespace or state behind.
# usage: run_slurm_outputs.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"

source "$source/tests/support/testbed_job.sh"
testbed_up 4
slurm_up

# Open MPI between the hosts: TCP over eth0 only, ranks yield when idle
# (four ranks share two cores). sbatch passes these to the job.
export OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_mpi_yield_when_idle=1
export TANDEM_BINARY=$tandem TANDEM_CONFIG=$source/configs/cluster-cpu.yaml
start_slurm_job "$work/slurm.log" configs/examples/tandem.sbatch --host 127.0.0.1 --port 0
echo "job $job ready on port $port"

hosts=""
for rank in 0 1 2 3; do
  host=$(job_rank_host $rank) || { cat "$work/slurm.log"; echo "no process of rank $rank"; exit 1; }
  grep -qz '^PMIX_RANK=' "/proc/$(job_rank_pid $rank)/environ" ||
    { echo "rank $rank has no PMIx environment"; exit 1; }
  echo "rank $rank on $host"
  hosts="$hosts $host"
done
[ "$(echo $hosts | tr ' ' '\n' | sort -u | wc -l)" = 4 ] || { echo "ranks share hosts:$hosts"; exit 1; }
[ "$(job_rank_host 0)" = "$TB-h1" ] || { echo "rank 0 is not on the first host"; exit 1; }
# One job of four ranks: lone processes would each print "ready".
[ "$(grep -c 'tandem: ready' "$work/slurm.log")" = 1 ] || { cat "$work/slurm.log"; echo "more than one server"; exit 1; }

on_host "$TB-h1" python3 tests/cluster/completions_snapshot.py "$port" >"$work/slurm.jsonl"

started=$(date +%s.%N)
stop_slurm_job || { cat "$work/slurm.log"; exit 1; }
echo "job $job ended $(awk "BEGIN {print $(date +%s.%N) - $started}") s after scancel --signal=TERM, COMPLETED, exit 0"

# The daemons, found by the mark testbed_daemons.sh gives them: munged,
# slurmctld and four slurmd. Each must be gone after the testbed is down.
daemons=$({ grep -lxz "TANDEM_TESTBED_DAEMON=$TB" /proc/[0-9]*/environ 2>/dev/null || true; } | cut -d/ -f3)
names=$(for d in $daemons; do cat "/proc/$d/comm" 2>/dev/null || true; done | sort | uniq -c | awk '{print $2 "x" $1}' | paste -sd' ')
[ "$names" = "mungedx1 slurmctldx1 slurmdx4" ] || { echo "daemons running: $names"; exit 1; }
"$TESTBED" down
for d in $daemons; do
  if [ -r "/proc/$d/stat" ] && [ "$(awk '{print $3}' "/proc/$d/stat")" != Z ]; then
    echo "daemon left behind: $d $(cat "/proc/$d/comm")"; exit 1
  fi
done
left=$(grep -lxz "TANDEM_TESTBED_DAEMON=$TB" /proc/[0-9]*/environ 2>/dev/null || true)
[ -z "$left" ] || { echo "daemons left behind: $left"; exit 1; }
left=$(ip netns list | awk '{print $1}' | grep -E "^$TB-" || true)
[ -z "$left" ] || { echo "namespaces left behind: $left"; exit 1; }
[ ! -e "/run/$TB-testbed" ] || { echo "/run/$TB-testbed left behind"; exit 1; }
echo "nothing left behind"

# The reference, once the testbed is gone (a machine that cannot have one
# skips the test before this): one process, configs/local.yaml
# (cluster-cpu.yaml differs only in placement).
source "$source/tests/support/start_tandem_server.sh"
TANDEM_CONFIG=configs/local.yaml
start_tandem_server "$tandem" "$work/single.log"
python3 tests/cluster/completions_snapshot.py "$port" >"$work/single.jsonl"
stop_tandem_server
trap - EXIT
if ! diff "$work/single.jsonl" "$work/slurm.jsonl"; then
  echo "the Slurm job gave other outputs than one process (diff above)"
  exit 1
fi
echo "slurm: $(wc -l <"$work/slurm.jsonl") completions identical to one process"
