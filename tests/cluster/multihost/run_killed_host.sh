#!/bin/bash
# Every process of a host killed (kill -9 of everything in $TB-h4's
# namespace: target shard 1 and the orted that started it): the requests
# in flight end with 503 / an error event naming rank 3 and its host within
# the step timeout (mpirun's kill sequence signals the coordinator first and
# waits odls_base_sigkill_timeout before SIGKILL: fault_job.sh); the job
# ends non-zero with a log line naming them, and no process is left.
# usage: run_killed_host.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "$0")/fault_job.sh"
started=$(now)
fault_job_start "$@"
# A script: fault_client.py runs inside $TB-h1, through on_host's shell.
echo "kill -9 \$(ip netns pids $TB-h4)" >"$work/kill_host.sh"
fault_requests sh "$work/kill_host.sh"
python3 tests/cluster/multihost/check_fault_report.py "$work/report.json" \
  $((STEP_TIMEOUT + ANSWER_MARGIN)) "$LOST"
await_job_end 45
await_no_processes 20
take_testbed_down
echo "killed host: passed in $(seconds_since "$started") s"
