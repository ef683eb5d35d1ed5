#!/bin/bash
# A multihost test that goes wrong, for run_testbed_cleanup.sh (ctest does
# not run it alone): the testbed up, configs/cluster-cpu.yaml's job across
# four hosts (its processes recorded in WORK/NAME.processes), then
#   fail: exit 1, as a failing check would (testbed_job.sh's trap must take
#         everything down);
#   hang: WORK/NAME.ready, then wait (at most 2 minutes) for SIGKILL, which
#         no trap outlives: the next `testbed.sh up` or `down` must clean up.
# usage: failing_testbed_job.sh TANDEM_BINARY SOURCE_DIR WORK_DIR fail|hang NAME
set -euo pipefail
tandem=$1 source=$2 work=$3 mode=$4 name=$5
cd "$source"
source tests/support/testbed_job.sh
source tests/support/testbed_leftovers.sh

testbed_up 4
testbed_hostfile "$work/$name.hosts" 1 1 1 1
start_testbed_job "$tandem" configs/cluster-cpu.yaml "$work/$name.hosts" 4 "$work/$name.log"
testbed_record_processes "$work/$name.processes" "$pid"  # and mpirun's launcher, here
case $mode in
  fail)
    echo "$name: failing on purpose with the job running"
    exit 1 ;;
  hang)
    touch "$work/$name.ready"
    for _ in $(seq 1 600); do sleep 0.2; done
    echo "$name: not killed within 2 minutes"
    exit 2 ;;
esac
