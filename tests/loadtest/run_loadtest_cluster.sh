#!/bin/bash
# run_loadtest.sh against the four-process MPI job of configs/cluster-cpu.yaml:
# concurrent streams, both variants, every token accounted for.
TANDEM_CONFIG=configs/cluster-cpu.yaml TANDEM_RANKS=4 exec "$(dirname "$0")/run_loadtest.sh" "$@"
