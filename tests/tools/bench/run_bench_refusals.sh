#!/bin/bash
# `tandem-bench` refuses, before loading anything, a flag that cannot apply:
# --untiled-skinny-matmul (a CUDA kernel) with the CPU backend. The error
# names the flag and the exit status is not 0.
# usage: run_bench_refusals.sh TANDEM_BENCH SOURCE_DIR
set -uo pipefail
bench=$1 source=$2
cd "$source"
fail() { echo "FAIL: $1"; exit 1; }

for suite in forward steps; do
  output=$("$bench" "$suite" --model models/tiny/target --untiled-skinny-matmul 2>&1)
  status=$?
  echo "$output"
  [ $status -ne 0 ] || fail "$suite accepted --untiled-skinny-matmul on the CPU backend"
  grep -q -- "--untiled-skinny-matmul needs --backend cuda" <<< "$output" ||
    fail "$suite's error does not name the flag"
done
echo "bench refusals: OK"
