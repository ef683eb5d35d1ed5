#!/bin/bash
# Outputs do not depend on the placement: the same requests (greedy with
# every drafter, seeded sampling with top-p and top-k), 8 at a time, give
# exactly the same text from one process as from MPI jobs whose target is
# tensor-parallel over 1, 2 and 4 ranks with the draft on its own rank, and
# from the two mixed placements: the draft on its own rank with the target
# in the coordinator's process, and the draft in the coordinator's process
# with the target over two ranks. And pipelined drafting does not change
# them either: with the draft on its own rank drafting ahead of every block
# under verification, or drafting one ping-pong group while the target
# verifies the other (speculation.pipeline forced on), outputs are again the
# single process's, which drafts in lockstep. Every job must also end
# within a minute of SIGTERM to its rank 0.
# usage: run_cluster_outputs.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source "$source/tests/support/start_tandem_server.sh"
source "$source/tests/support/cluster_outputs.sh"  # placement, compare

snapshot() {  # snapshot NAME [SHAPE]: serve, record every answer, stop with SIGTERM to rank 0
  local log="$work/$1.log"
  start_tandem_server "$tandem" "$log"
  python3 "$source/tests/cluster/completions_snapshot.py" "$port" >"$work/$1.jsonl"
  if [ -n "${2:-}" ]; then  # the steps really took that shape
    curl -s "localhost:$port/metrics" | require_steps_of_shape "$1" "$2"
  fi
  stop_gracefully
  for _ in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then  # the trap kills it
    cat "$log"; echo "$1: still running 60 s after SIGTERM"; exit 1
  fi
  local status=0
  wait $pid || status=$?
  trap - EXIT
  [ $status -eq 0 ] || { cat "$log"; echo "$1: exited $status after SIGTERM"; exit 1; }
}

unset TANDEM_CONFIG TANDEM_RANKS
snapshot single
for tp in 1 2 4; do  # coordinator 0, draft 1, target on 2..tp+1
  placement "tp$tp" 1 "$(seq -s ', ' 2 $((tp + 1)))"
  TANDEM_CONFIG="$work/tp$tp.yaml" TANDEM_RANKS=$((tp + 2)) snapshot "tp$tp"
  # The job really had tp shards: the last one reported ready.
  grep -qF "rank $((tp + 1)) (target shard $((tp - 1)) of $tp, on host $(hostname)) ready" "$work/tp$tp.log"
  compare "tp$tp"
done
placement draft-apart 1 0  # q rows go from rank 1 to the coordinator's own target
TANDEM_CONFIG="$work/draft-apart.yaml" TANDEM_RANKS=2 snapshot draft-apart
compare draft-apart
placement target-apart 0 "1, 2"  # q rows go over the link from the coordinator to rank 1
TANDEM_CONFIG="$work/target-apart.yaml" TANDEM_RANKS=3 snapshot target-apart
compare target-apart
for pipeline in ahead pingpong; do  # coordinator 0, draft 1, target 2
  placement "pipelined-$pipeline" 1 2 "$pipeline"
  TANDEM_CONFIG="$work/pipelined-$pipeline.yaml" TANDEM_RANKS=3 snapshot "pipelined-$pipeline" "$pipeline"
  compare "pipelined-$pipeline"
done
# Drafting ahead with the target in the coordinator's process: rows drafted
# ahead and never needed still reach the coordinator, and the job ends.
placement pipelined-draft-apart 1 0 ahead
TANDEM_CONFIG="$work/pipelined-draft-apart.yaml" TANDEM_RANKS=2 snapshot pipelined-draft-apart ahead
compare pipelined-draft-apart
