#!/bin/bash
# Prefix caching on against off, side by side in one run, through `tandem
# serve` with the dummy 24M benchmark body and its 3M draft at a 4096-token
# context (configs/examples/dummy-bench-chat.yaml; speculation on). Two
# workloads, each at every concurrency given:
#   multi-turn-chat       conversations of 4-8 turns, each turn resending the
#                         whole history (the server's own replies included)
#   shared-system-prompt  one ~1,000-token system prompt before short, varied
#                         user questions
# Two servers run side by side, caching on and off
# (`scheduler.prefix_caching`), and each (workload, concurrency) runs against
# one then the other, back to back, with the same file: on a shared machine
# the pair sees the same load. Each point's file has its own seed, so no
# point finds another's prompts cached: every run starts cold. Every request
# is greedy and generates exactly max_tokens (ignore_eos), so on and off do
# the same work; the text is noise (random weights), the timings are real.
# Requests draft a fixed GAMMA tokens a step (default 4): the dummy draft's
# acceptance is ~0, so with γ auto the engine soon stops drafting and the
# draft's cache would see almost no prompt; GAMMA=auto measures the
# deployment as it is.
# Prints each run's result block, then the table
# (tools/loadtest/prefix_cache_table.py): TTFT p50/p99 and output
# throughput with on/off ratios, and the cached share of prompt tokens
# (usage) and the server's hit rates (/metrics).
# Bounded: a chat run sends max(CHAT_TURNS, 6 x users) turns (at 8 users,
# about one whole conversation each), a shared-prompt run
# max(SHARED_REQUESTS, 3 x users) requests, and each stops at RUN_SECONDS if
# not done (its unfinished requests then count as failed, the table shows
# them and exits 1); loopback only. RESULTS_DIR keeps each run's --json and
# the servers' logs. Run from the repository root after `make build`.
# usage: tools/loadtest/prefix_cache_benchmark.sh [CONCURRENCY=1,8] [RESULTS_DIR]
#   environment: CHAT_TURNS=36 SHARED_REQUESTS=16 MAX_TOKENS=32 GAMMA=4 RUN_SECONDS=150
set -euo pipefail
concurrency=${1:-1,8} results=${2:-}
chat_turns=${CHAT_TURNS:-36} shared_requests=${SHARED_REQUESTS:-16}
max_tokens=${MAX_TOKENS:-32} run_seconds=${RUN_SECONDS:-150} gamma=${GAMMA:-4}
body='{"temperature": 0}'
[ "$gamma" = auto ] || body="{\"temperature\": 0, \"speculation\": {\"gamma\": $gamma}}"
source tests/support/start_tandem_server.sh

work=$(mktemp -d)
results=${results:-$work/results}
mkdir -p "$results"
for caching in on off; do
  flag=$([ $caching = on ] && echo true || echo false)
  sed "s/^scheduler:\$/scheduler:\n  prefix_caching: $flag/" configs/examples/dummy-bench-chat.yaml \
    >"$work/deploy-$caching.yaml"
  grep -q "prefix_caching: $flag" "$work/deploy-$caching.yaml"
done

# Requests per run at c users: at least a few per user.
chat_turns_at() { echo $((chat_turns > 6 * $1 ? chat_turns : 6 * $1)); }
shared_requests_at() { echo $((shared_requests > 3 * $1 ? shared_requests : 3 * $1)); }
# Enough conversations that no user runs out before the turns do.
for c in ${concurrency//,/ }; do
  python3 tools/loadtest/prefix_workloads.py chat --conversations $(($(chat_turns_at $c) / 4 + c)) \
    --max-tokens "$max_tokens" --seed $((100 + c)) >"$work/multi-turn-chat.c$c.jsonl"
  python3 tools/loadtest/prefix_workloads.py system-prompt --requests "$(shared_requests_at $c)" \
    --max-tokens "$max_tokens" --seed $((200 + c)) >"$work/shared-system-prompt.c$c.jsonl"
done

# Both servers; an idle one waits without computing.
declare -A ports pids
for caching in on off; do
  TANDEM_CONFIG="$work/deploy-$caching.yaml" start_tandem_server build/tandem "$results/serve-$caching.log"
  ports[$caching]=$port pids[$caching]=$pid
done
stop_both() {
  for caching in on off; do pid=${pids[$caching]}; stop_tandem_server; done
}
trap stop_both EXIT

# run_point WORKLOAD CONCURRENCY REQUESTS CACHING: one run against that server.
run_point() {
  local workload=$1 c=$2 requests=$3 caching=$4
  timeout $((run_seconds + 60)) build/tandem-loadtest --url "http://127.0.0.1:${ports[$caching]}" \
    --endpoint chat --conversations "$work/$workload.c$c.jsonl" --concurrency "$c" \
    --requests "$requests" --duration "$run_seconds" --ignore-eos --body "$body" \
    --variants "{\"$workload, cache $caching\": {}}" --json "$results/$workload.c$c.$caching.json" \
    --allow-errors --quiet
}

started=$SECONDS
files=()
for c in ${concurrency//,/ }; do
  for caching in on off; do
    run_point multi-turn-chat "$c" "$(chat_turns_at $c)" $caching
    files+=("$results/multi-turn-chat.c$c.$caching.json")
  done
done
for c in ${concurrency//,/ }; do
  for caching in on off; do
    run_point shared-system-prompt "$c" "$(shared_requests_at $c)" $caching
    files+=("$results/shared-system-prompt.c$c.$caching.json")
  done
done
echo "prefix caching on vs off: runs took $((SECONDS - started)) s; concurrency $concurrency;" \
  "chat turns per run max($chat_turns, 6 x users), shared-prompt requests max($shared_requests, 3 x users);" \
  "max_tokens $max_tokens; gamma $gamma"
stop_both
trap - EXIT
python3 tools/loadtest/prefix_cache_table.py "${files[@]}"
rm -rf "$work"
