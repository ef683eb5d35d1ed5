#!/bin/bash
# run_loadtest.sh and run_loadtest_chat.sh against the four-process MPI job of
# configs/cluster-cpu.yaml: concurrent streams, completions and chat (single
# turns and conversations), both variants, every token accounted for. Each
# script starts its own job, in a folder of its own under WORK_DIR.
# usage: run_loadtest_cluster.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
here=$(dirname "$0")
export TANDEM_CONFIG=configs/cluster-cpu.yaml TANDEM_RANKS=4
"$here/run_loadtest.sh" "$tandem" "$source" "$work/completions"
"$here/run_loadtest_chat.sh" "$tandem" "$source" "$work/chat"
