#!/bin/bash
# Heavy loss on a host's link: 40% of the packets $TB-h4 sends or receives
# on eth0 dropped at random (nftables `numgen random`; this kernel has no
# netem). Either TCP's retransmissions carry the requests through, slower,
# to exactly the text they give without loss, or a step stalls past the
# step timeout and they end as for a lost host (503 / error event naming
# rank 3 and its host, then the job ends and no process is left). Either
# way within bounds; which one happened is printed.
# usage: run_lossy_link.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "$0")/fault_job.sh"
started=$(now)
command -v nft >/dev/null || { echo "SKIP: needs nft (Debian: nftables)"; exit 77; }
fault_job_start "$@"
cat >"$work/loss.nft" <<'NFT'
table inet tandem_loss {
  chain out { type filter hook output priority 0; policy accept; oifname "eth0" numgen random mod 100 < 40 drop; }
  chain in { type filter hook input priority 0; policy accept; iifname "eth0" numgen random mod 100 < 40 drop; }
}
NFT
fault_requests ip netns exec "$TB-h4" nft -f "$work/loss.nft"
python3 tests/cluster/multihost/check_fault_report.py "$work/report.json" 30 "$LOST" \
  --may-complete | tee "$work/outcomes"
if grep -q 503 "$work/outcomes"; then
  await_job_end 45
  await_no_processes 20
else
  # Both completed: the job serves on; without the loss it stops cleanly.
  ip netns exec "$TB-h4" nft delete table inet tandem_loss
  stop_testbed_job
  pid=""
  await_no_processes 10
fi
take_testbed_down
echo "lossy link: passed in $(seconds_since "$started") s"
