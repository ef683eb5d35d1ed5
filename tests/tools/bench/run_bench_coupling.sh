#!/bin/bash
# `tandem-bench coupling` on the tiny pair, cut to one temperature, γ 2 and
# a few short sessions (a few seconds): it prints its bound line and its
# table, and what the table checks for free holds: no position's exact
# Gumbel agreement is below the guaranteed (1 - TV)/(1 + TV), the Gumbel
# race on the bench's own p rows gives every plain token (its rows and
# noise keys are the engine's), and every output under the Gumbel coupling
# is the plain seeded output.
# usage: run_bench_coupling.sh TANDEM_BENCH SOURCE_DIR
set -euo pipefail
bench=$1 source=$2
cd "$source"
sessions=3
output=$("$bench" coupling --threads 1 --model models/tiny/target --draft models/tiny/draft \
  --temperatures 1 --gammas 2 --no-auto --sessions $sessions --max-tokens 12 --repeats 1)
echo "$output"
fail() { echo "FAIL: $1"; exit 1; }

bound=$(grep -E '^T 1\.0, along the [0-9]+ positions' <<< "$output") || fail "no bound line"
positions=$(echo "$bound" | sed -E 's/.*along the ([0-9]+) positions.*/\1/')
[ "$positions" -eq $((sessions * 12)) ] || fail "expected $((sessions * 12)) positions, got $positions"
grep -q 'positions below the bound: 0;' <<< "$bound" || fail "a position below the bound"
grep -q "gives: $positions/$positions;" <<< "$bound" || fail "the race on p missed plain tokens"

grep -q '^| T | gamma | alpha rejection | alpha gumbel |' <<< "$output" || fail "no table header"
row=$(grep -E '^\| 1\.0 \| 2 \|' <<< "$output") || fail "no row for T 1.0, gamma 2"
# 13 columns; the last is "= plain" under the Gumbel coupling.
IFS='|' read -r -a cells <<< "$row"
[ "${#cells[@]}" -eq 14 ] || fail "expected 13 columns in: $row"
for column in 3 4 5 6; do  # the rates and bounds are probabilities
  awk -v x="${cells[$column]}" 'BEGIN { exit !(x + 0 >= 0 && x + 0 <= 1 && x ~ /[0-9]/) }' ||
    fail "column $column is not a rate: ${cells[$column]}"
done
[ "$(echo "${cells[13]}" | tr -d ' ')" = "$sessions/$sessions" ] ||
  fail "gumbel outputs differ from plain: ${cells[13]}"
echo "bench coupling: OK"
