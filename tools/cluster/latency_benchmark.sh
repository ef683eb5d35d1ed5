#!/bin/bash
# What link latency does to tensor parallelism and to speculation: the tiny
# pair (configs/cluster-cpu.yaml) as a 4-host job on the testbed, the
# coordinator on h1, the draft on h2, the TP-2 target on h3 and h4, one
# compute thread per rank, for each one-way delay on the links between
# hosts. The delay is the TEST-ONLY transport hold (TANDEM_TEST_LINK_DELAY_MS,
# docs/cluster.md "Link latency (test only)"): this machine's kernel has no
# `tc qdisc netem`. 0 runs with the variable unset (no hold at all).
#
# At each delay and concurrency, four variants against the same job, one
# after the other, same prompts (greedy, ignore_eos):
#   off        "speculation": false (plain decoding)
#   gamma4     a fixed gamma of 4, lockstep ("pipeline": false)
#   auto       gamma auto, lockstep
#   auto+pipe  gamma auto with the deployment's speculation.pipeline (auto)
# Each cell is one tandem-loadtest run of a fixed request count under a time
# cap, with /metrics scraped before and after it; latency_table.py turns the
# scrapes into output tokens/s, the split of a target step (compute, TP
# collectives, verification, messages) and the gamma auto chose.
#
# Run from the repository root, as root, after `make build` (tandem and
# tandem-loadtest); about 7 minutes on the 2-core CPU machine.
# usage: tools/cluster/latency_benchmark.sh [DELAYS_MS=0,0.1,1,5] [CONCURRENCY=1,8] [JSON_OUT]
#   REQUESTS_PER_STREAM (default 8): requests per cell = this x concurrency
#   OUTPUT_TOKENS (default 64), CELL_SECONDS (default 150: the cap per cell)
#   TBF_RATE (e.g. 1gbit): also a tbf rate limit on every host's eth0 (tc
#     tbf works here where netem does not), for a row with bandwidth limited
#   TANDEM_TESTBED_NAME: the testbed's name (default tandem)
set -euo pipefail
delays=${1:-0,0.1,1,5} concurrencies=${2:-1,8} json_out=${3:-}
per_stream=${REQUESTS_PER_STREAM:-8} output_tokens=${OUTPUT_TOKENS:-64}
cell_seconds=${CELL_SECONDS:-150}
source=$(pwd)
tandem=$source/build/tandem loadtest=$source/build/tandem-loadtest
[ -x "$tandem" ] && [ -x "$loadtest" ] || { echo "build tandem and tandem-loadtest first (make build)"; exit 1; }
source tests/support/testbed_job.sh
# Four single-threaded ranks placed by the OS, as in pipeline_benchmark.sh.
export OMPI_MCA_hwloc_base_binding_policy=none
# mpirun passes the delay to every rank (as -x would); ranks that disagree
# refuse to start.
export OMPI_MCA_mca_base_env_list=TANDEM_TEST_LINK_DELAY_MS

work=$(mktemp -d)
testbed_up 4
testbed_hostfile "$work/hosts" 1 1 1 1
if [ -n "${TBF_RATE:-}" ]; then
  for i in 1 2 3 4; do
    on_host "$TB-h$i" tc qdisc add dev eth0 root tbf rate "$TBF_RATE" burst 256kb latency 100ms
  done
  echo "tbf rate $TBF_RATE on every host's eth0"
fi
table="python3 $source/tools/cluster/latency_table.py"

declare -A variant_body=(
  [off]='{"speculation": false}'
  [gamma4]='{"speculation": {"gamma": 4, "pipeline": false}}'
  [auto]='{"speculation": {"gamma": "auto", "pipeline": false}}'
  [auto+pipe]='{"speculation": {"gamma": "auto"}}'
)
variants=(off gamma4 auto auto+pipe)

for delay in ${delays//,/ }; do
  if [ "$delay" = 0 ]; then unset TANDEM_TEST_LINK_DELAY_MS; else export TANDEM_TEST_LINK_DELAY_MS=$delay; fi
  start_testbed_job "$tandem" "$source/configs/cluster-cpu.yaml" "$work/hosts" 4 "$work/serve-$delay.log"
  grep "TEST-ONLY link delay" "$work/serve-$delay.log" || echo "delay $delay ms: no hold (unset)"
  url="http://127.0.0.1:$port"
  for c in ${concurrencies//,/ }; do
    for v in "${variants[@]}"; do
      cell="$work/cell_${delay}_${c}_${v}"
      on_host "$TB-h1" $table scrape "$url" "$cell.before"
      on_host "$TB-h1" timeout "$cell_seconds" "$loadtest" --url "$url/v1/completions" \
        --concurrency "$c" --requests $((per_stream * c)) --input-words 32 \
        --output-tokens "$output_tokens" --seed 1 --ignore-eos --no-metrics --quiet \
        --body "'{\"temperature\": 0}'" --variants "'{\"$v\": ${variant_body[$v]}}'" \
        --json "$cell.json" >"$cell.out" 2>&1 ||
        echo "delay $delay ms, concurrency $c, $v: tandem-loadtest failed or hit the ${cell_seconds} s cap (see $cell.out)"
      on_host "$TB-h1" $table scrape "$url" "$cell.after"
      echo "delay $delay ms, concurrency $c, $v: done"
    done
  done
  stop_testbed_job
  pid=""
done

$table table "$work" ${json_out:+--json "$json_out"}
rm -rf "$work"
