#!/bin/bash
# A host's link taken down mid-stream (`ip link set eth0 down` on $TB-h4,
# target shard 1): the requests in flight end within the step timeout (the
# plain one 503, the stream an error event), naming rank 3 and its host;
# mpirun then ends by itself, non-zero, its log naming them too, and no
# process is left on any host, the unreachable one included.
# usage: run_link_down.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "$0")/fault_job.sh"
started=$(now)
fault_job_start "$@"
fault_requests ip -n "$TB-h4" link set eth0 down
python3 tests/cluster/multihost/check_fault_report.py "$work/report.json" \
  $((STEP_TIMEOUT + ANSWER_MARGIN)) "$LOST"
await_job_end 45
await_no_processes 20
take_testbed_down
echo "link down: passed in $(seconds_since "$started") s"
