#!/bin/bash
# Outputs do not depend on the placement: the same requests (greedy with
# every drafter, seeded sampling with top-p and top-k), 8 at a time, give
# exactly the same text from one process as from MPI jobs whose target is
# tensor-parallel over 1, 2 and 4 ranks with the draft on its own rank.
# usage: run_cluster_outputs.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"

snapshot() {  # snapshot NAME: serve, record every answer, stop with SIGTERM to rank 0
  local log="$work/$1.log"
  start_tandem_server "$tandem" "$log"
  python3 "$source/tests/cluster/completions_snapshot.py" "$port" >"$work/$1.jsonl"
  if [ -n "${TANDEM_RANKS:-}" ]; then kill -TERM "$(rank_pid 0)"; else kill -TERM $pid; fi
  local status=0
  wait $pid || status=$?
  trap - EXIT
  [ $status -eq 0 ] || { cat "$log"; echo "$1: exited $status after SIGTERM"; exit 1; }
}

# A placement for TP degree N: coordinator 0, draft 1, target on 2..N+1.
placement() {
  local ranks
  ranks=$(seq -s ', ' 2 $(($1 + 1)))
  sed -e "s/^  target_ranks: .*/  target_ranks: [$ranks]/" \
      -e "s/^  target_devices: .*/  target_devices: []/" \
      configs/cluster-cpu.yaml >"$work/tp$1.yaml"
}

unset TANDEM_CONFIG TANDEM_RANKS
snapshot single
for tp in 1 2 4; do
  placement $tp
  TANDEM_CONFIG="$work/tp$tp.yaml" TANDEM_RANKS=$((tp + 2)) snapshot "tp$tp"
  # The job really had tp shards: the last one reported ready.
  grep -q "rank $((tp + 1)) (target shard $((tp - 1)) of $tp) ready" "$work/tp$tp.log"
  if ! diff "$work/single.jsonl" "$work/tp$tp.jsonl"; then
    echo "TP $tp gave other outputs than one process (diff above)"
    exit 1
  fi
  echo "TP $tp: $(wc -l <"$work/tp$tp.jsonl") completions identical to one process"
done
