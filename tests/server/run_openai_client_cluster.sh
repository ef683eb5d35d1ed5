#!/bin/bash
# The openai npm client test (run_openai_client.sh) against the four-process
# MPI job of configs/cluster-cpu.yaml: coordinator, draft rank, TP-2 target.
TANDEM_CONFIG=configs/cluster-cpu.yaml TANDEM_RANKS=4 exec "$(dirname "$0")/run_openai_client.sh" "$@"
