#!/bin/bash
# `tandem generate --coupling`: with a seed, the gumbel coupling (auto's
# choice) prints the same text whatever drafts: the draft model at γ 1, 4
# and auto, the n-gram drafter, and no drafter at all. Rejection (Algorithm
# 1) with the draft model may differ from plain decoding; it is not asserted
# either way. A bad --coupling, and gumbel with --lenience below 1, exit 1
# naming the flag.
# usage: run_generate_coupling.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2
cd "$source"
run() {
  timeout 120 "$tandem" generate --model models/tiny/target --prompt "The history of the city" \
    --max-tokens 24 --temperature 1.0 --top-p 0.9 --seed 11 "$@"
}
plain=$(run --coupling gumbel)
[ -n "$plain" ] || { echo "no text from plain decoding"; exit 1; }
for flags in "--draft models/tiny/draft --gamma 1" "--draft models/tiny/draft --gamma 4" \
             "--draft models/tiny/draft --gamma auto" "--ngram --gamma 3"; do
  # shellcheck disable=SC2086
  got=$(run $flags)  # auto: gumbel, since the CLI always has a seed
  [ "$got" == "$plain" ] || { echo "$flags: '$got' differs from plain '$plain'"; exit 1; }
done
expect_refused() {
  local pattern=$1 status=0 output
  shift
  output=$(run "$@" 2>&1) || status=$?
  [ "$status" -ne 0 ] || { echo "$*: accepted"; exit 1; }
  grep -q -- "$pattern" <<< "$output" || { echo "$*: expected '$pattern' in: $output"; exit 1; }
}
expect_refused "--coupling wants rejection, gumbel or auto" --coupling always
expect_refused "--coupling gumbel cannot be lenient" --draft models/tiny/draft --coupling gumbel \
  --lenience 0.5
echo "generate coupling: ok"
