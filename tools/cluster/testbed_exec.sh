#!/bin/bash
# testbed_exec.sh HOST CMD...: runs CMD inside a testbed host (its network
# and UTS namespaces; tools/cluster/testbed.sh made them), in place of ssh.
# It is also Open MPI's launch agent for the testbed (plm_rsh_agent): mpirun
# calls it as `testbed_exec.sh HOST orted ARGS...`, the way it would call
# ssh, and the orted it starts lives on HOST. Like ssh, the words of CMD are
# joined with spaces and run by the host's shell, so quote for that shell
# (Open MPI's arguments come quoted for it).
set -euo pipefail
STATE=/run/${TANDEM_TESTBED_NAME:-tandem}-testbed  # as in testbed.sh
host=${1:?usage: testbed_exec.sh HOST CMD...}
shift
[ -e "$STATE/uts/$host" ] || { echo "testbed_exec: no testbed host '$host'" >&2; exit 255; }
[ $# -gt 0 ] || { echo "testbed_exec: no command for $host" >&2; exit 255; }
exec nsenter --net=/run/netns/"$host" --uts="$STATE/uts/$host" -- /bin/sh -c "$*"
