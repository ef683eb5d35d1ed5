#!/bin/bash
# Pipelined drafting against lockstep drafting, side by side in one run,
# through the HTTP server of an MPI job with the draft and the target on
# ranks of their own: coordinator (rank 0), draft (rank 1), target (rank 2),
# one compute thread each (configs/cluster-cpu.yaml with that placement).
# For each load point `tandem-loadtest` runs two variants against the same
# job, one after the other, with the same prompts:
#   pipelined  the deployment's speculation.pipeline (MODE)
#   lockstep   "speculation": {"pipeline": false}: draft, then verify
# and prints vLLM's result block plus the server's pipelining figures (steps
# pipelined, draft and target busy fractions, draft-ahead hit rate).
# Run from the repository root after `make build`. DRAFT=DIR drafts with
# another checkpoint (DRAFT=models/tiny/target: a draft as costly as the
# target that is always right).
# usage: [DRAFT=DIR] tools/loadtest/pipeline_benchmark.sh [MODE=auto] [CONCURRENCY=1,16] [GAMMA=4] [JSON_OUT]
set -euo pipefail
mode=${1:-auto} concurrency=${2:-1,16} gamma=${3:-4} json=${4:-}
source tests/support/start_tandem_server.sh
# Three single-threaded ranks on the machine's cores, placed by the OS: a
# bound rank would share its core with another while a core sits idle.
export OMPI_MCA_hwloc_base_binding_policy=none

work=$(mktemp -d)
sed -e "s/^  draft_rank: .*/  draft_rank: 1/" \
    -e "s/^  target_ranks: .*/  target_ranks: [2]/" \
    -e "s/^  target_devices: .*/  target_devices: []/" \
    -e "s/^  pipeline: .*/  pipeline: $mode/" \
    configs/cluster-cpu.yaml >"$work/pipeline.yaml"
if [ -n "${DRAFT:-}" ]; then
  sed -i -e "s|^    path: models/tiny/draft .*|    path: $DRAFT|" \
         -e "s|^    tokenizer: models/tiny/draft .*|    tokenizer: $DRAFT|" "$work/pipeline.yaml"
fi
TANDEM_CONFIG="$work/pipeline.yaml" TANDEM_RANKS=3 start_tandem_server build/tandem "$work/serve.log"

speculation="\"speculation\": {\"gamma\": $gamma"
build/tandem-loadtest --url "http://127.0.0.1:$port/v1/completions" --concurrency "$concurrency" \
  --requests 48 --input-words 32 --output-tokens 64 --seed 1 \
  --body '{"ignore_eos": true, "temperature": 0}' \
  --variants "{\"pipelined\": {$speculation}}, \"lockstep\": {$speculation, \"pipeline\": false}}}" \
  ${json:+--json "$json"}

stop_gracefully
wait $pid || true
trap - EXIT
rm -rf "$work"
