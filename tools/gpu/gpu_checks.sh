#!/usr/bin/env bash
# The GPU checks, in stages that each end within their own time limit (at
# most 7 minutes; one call of the workplace's device tool lasts at most 10).
# docs/gpu.md, section 8: the calls to make, what each stage prints and
# what to do when one fails.
#
#   tools/gpu/gpu_checks.sh STAGE [ARG]
#
#   unpack DEBS     the bundle's .deb files (bundle_debs.sh) into $TANDEM_BUNDLE
#   configure       CMake into build-gpu/: nvcc, NCCL, a python3 with numpy,
#                   warnings reported rather than fatal (TANDEM_WERROR=OFF)
#   build           build-gpu/ with every core
#   prepare DEBS    unpack and configure unless done on this machine, build
#   twins           every CUDA op against its CPU twin        (ctest -L gpu_twins)
#   memcheck        the twins under compute-sanitizer's memcheck
#   racecheck       the twins under compute-sanitizer's racecheck
#   reference       the forward pass against NumPy            (ctest -L gpu_reference)
#   graphs          step graphs and NCCL                      (ctest -L 'gpu_graphs|gpu_nccl')
#   engine          the speculative engine on the GPU         (ctest -L gpu_engine)
#   server N        part N of 3 of the server suite on the GPU (ctest -L gpu_server)
#   bench_forward, bench_steps, bench_batching   one GPU benchmark each
#   bench_steps_untiled  bench_steps on the untiled batch-invariant matmul
#   bench_serve     speculation on vs off through the server on the GPU
#   summary [DIR..] every stage's verdict, and what the GPU's numbers were
#                   compared with (DIRs: logs fetched from several calls)
#   all [SECONDS]   after prepare: every stage above in one call, the GPU's
#                   numbers first, bench_serve with the time left, summary;
#                   then $OUT holds verdicts.txt, summary.txt and the whole
#                   logs folder as logs.tgz (a call hands back 8 files).
#                   SECONDS sets TANDEM_DEADLINE where it is not set.
#
# Each stage writes STAGE.log and its verdict, one line, into verdicts.txt
# in build-gpu/logs (kept while the machine is), copies both into $OUT
# where the device tool set it, and prints the verdict last. Without a
# device each stage still runs up to where one is needed. TANDEM_BUNDLE
# defaults to /tmp/tandem-debs; TANDEM_DEADLINE, when set, is the time
# (seconds since the epoch) by which every stage must have ended.
set -uo pipefail  # not -e: a stage records its own failure

stage=${1:-}
repo=$(cd "$(dirname "$0")/../.." && pwd)
self=$repo/tools/gpu/gpu_checks.sh
bundle=${TANDEM_BUNDLE:-/tmp/tandem-debs}
build=${TANDEM_GPU_BUILD:-$repo/build-gpu}  # another folder only for the stages' own test
logs=$build/logs
mkdir -p "$logs"
cd "$repo" || exit 1
# The lent machines run commands as root; mpirun refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI 4.1 starts even ranks on this host through ssh or rsh, and
# aborts before any rank runs where there is neither (the GPU image):
# the isolated launcher starts them here, which is all a one-host job needs.
command -v ssh >/dev/null || command -v rsh >/dev/null || export OMPI_MCA_plm=isolated
PATH=$PATH:/usr/local/cuda/bin
started=$SECONDS

summarize() { python3 "$repo/tools/gpu/summarize.py" "$@"; }

# record NAME VERDICT: keeps the stage's verdict (one line per stage, the
# latest), hands its files back, prints it; the exit status says whether
# the stage passed (or found no device to run on).
record() {
  local name=$1 verdict="$2 [$((SECONDS - started)) s]"
  { grep -v "^$name:" "$logs/verdicts.txt" 2>/dev/null; echo "$verdict"; } >"$logs/verdicts.new"
  mv "$logs/verdicts.new" "$logs/verdicts.txt"
  if [[ -n ${OUT:-} ]]; then
    cp "$logs/verdicts.txt" "$OUT/"
    [[ -f $logs/$name.log ]] && cp "$logs/$name.log" "$OUT/"
  fi
  echo "$verdict"
  [[ $verdict =~ ^$name:\ (OK|PASS|NO\ DEVICE|NO\ TOOL) ]]
}

# bounded NAME SECONDS COMMAND...: COMMAND's output into NAME.log, stopped
# after SECONDS, or sooner where TANDEM_DEADLINE (seconds since the epoch:
# when the device call will be cut off) leaves less, so that the stage
# still writes its verdict (exit status 124 then).
bounded() {
  local name=$1 seconds=$2
  shift 2
  if [[ -n ${TANDEM_DEADLINE:-} ]]; then
    local left=$((TANDEM_DEADLINE - $(date +%s) - 20))
    ((left < seconds)) && seconds=$left
  fi
  if ((seconds <= 0)); then
    echo "not started: no time left before TANDEM_DEADLINE" >>"$logs/$name.log"  # summarize.py's NOT_STARTED
    return 124
  fi
  timeout --kill-after=10 "$seconds" "$@" >>"$logs/$name.log" 2>&1
}

# A verdict from an exit status: OK, TIMEOUT or FAIL with a detail.
plain_verdict() {
  local name=$1 status=$2 detail=$3
  case $status in
    0) echo "$name: OK, $detail" ;;
    124 | 137) echo "$name: TIMEOUT, $detail" ;;
    *) echo "$name: FAIL, $detail (exit status $status; see $name.log)" ;;
  esac
}

use_bundle() {
  [[ -f $bundle/env.sh ]] || return 1
  # shellcheck source=/dev/null
  source "$bundle/env.sh"
}

need_bundle() {
  use_bundle || { record "$1" "$1: FAIL, no bundle at $bundle: run unpack (or prepare) first"; exit 1; }
}

# Whether stage NAME's latest verdict on this machine is OK.
done_here() { grep -q "^$1: OK" "$logs/verdicts.txt" 2>/dev/null; }

need_build() {
  need_bundle "$1"
  done_here build || { record "$1" "$1: FAIL, $build is not built: run prepare first"; exit 1; }
}

# A prefix holding nccl.h and libnccl.so, for CMake's NCCL_ROOT, when the
# CUDA toolkit has none: PyTorch's NCCL (the nvidia-nccl wheel) has both,
# the library under its versioned name only.
nccl_prefix() {
  local cuda_include
  cuda_include=$(dirname "$(command -v nvcc)")/../include
  [[ -e $cuda_include/nccl.h ]] && return 0
  local wheel
  wheel=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null) || return 0
  local library
  library=$(find "$wheel/lib" -name 'libnccl.so*' | sort | head -n 1)
  [[ -e $wheel/include/nccl.h && -n $library ]] || return 0
  mkdir -p /tmp/tandem-nccl/lib
  ln -sfn "$wheel/include" /tmp/tandem-nccl/include
  ln -sf "$library" /tmp/tandem-nccl/lib/libnccl.so
  ln -sf "$library" "/tmp/tandem-nccl/lib/$(basename "$library")"
  echo /tmp/tandem-nccl
}

# The device, at the top of a test stage's log.
device_line() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  else
    echo "no nvidia-smi on this machine"
  fi
}

# ctest_stage NAME SECONDS CTEST_ARGS...: the selected GPU tests, one at a
# time (each test has its own timeout: a hung kernel fails one test).
ctest_stage() {
  local name=$1 seconds=$2
  shift 2
  need_build "$name"
  device_line >"$logs/$name.log"
  bounded "$name" "$seconds" ctest --test-dir "$build" --output-on-failure --no-tests=error "$@"
  local status=$?
  grep -E '^ *[0-9]+/[0-9]+ Test .*(\*\*\*|Not Run)' "$logs/$name.log"
  record "$name" "$(summarize ctest-verdict "$name" "$logs/$name.log" "$status")"
}

# sanitizer_stage NAME TOOL: the twins binary under compute-sanitizer.
sanitizer_stage() {
  local name=$1 tool=$2
  need_build "$name"
  device_line >"$logs/$name.log"
  local status=127
  if command -v compute-sanitizer >/dev/null; then
    # GTEST_FILTER in the environment narrows the cases, if this runs out of time.
    bounded "$name" 420 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$build/tests/kernels/kernels_cuda_tests"
    status=$?
  else
    echo "compute-sanitizer: not found" >>"$logs/$name.log"
  fi
  grep -E 'ERROR SUMMARY|\[  FAILED  \]|\[==========\]' "$logs/$name.log"
  record "$name" "$(summarize sanitizer-verdict "$name" "$logs/$name.log" "$status")"
}

# bench_stage NAME SUITE ARGS...: one benchmark, its output printed whole.
bench_stage() {
  local name=$1
  shift
  need_build "$name"
  device_line >"$logs/$name.log"
  echo "\$ tandem-bench $*" >>"$logs/$name.log"
  bounded "$name" 420 "$build/tandem-bench" "$@"
  local status=$?
  cat "$logs/$name.log"
  if grep -q 'this process sees 0 CUDA device' "$logs/$name.log"; then
    record "$name" "$name: NO DEVICE, the benchmark needs one"
  elif [[ $status -eq 0 ]]; then
    record "$name" "$name: OK, its numbers are in $name.log"
  else
    record "$name" "$(plain_verdict "$name" "$status" "$(tail -n 1 "$logs/$name.log")")"
  fi
}

# The port a server started with --port 0 says it listens on (empty until it has).
server_port() {
  sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$1" | head -n 1
}

# 0 once the server logging to $1 says it is ready (its models loaded), 1
# while it loads, 2 once its process (pid $2) has ended.
server_ready() {
  local log=$1 pid=$2
  kill -0 "$pid" 2>/dev/null || return 2
  grep -q 'tandem: ready' "$log" && [[ -n $(server_port "$log") ]]
}

# serve_stage NAME: the embedded default deployment (the tiny pair) with
# backend: cuda on a free port, and tandem-loadtest's on and off variants in
# alternating rounds at concurrency 1, 8 and 16: the verdict gives on / off
# (output tokens per second) per load point, the geometric mean of 4 rounds
# and its 95% interval. TANDEM_SERVE_BACKEND=cpu and TANDEM_SERVE_REQUESTS
# (128) are for the stage's own test, on a machine without a GPU.
serve_stage() {
  local name=$1 backend=${TANDEM_SERVE_BACKEND:-cuda} requests=${TANDEM_SERVE_REQUESTS:-128}
  need_build "$name"
  device_line >"$logs/$name.log"
  local config=$build/$name.yaml server_log=$logs/$name.server.log
  sed "s/^\(  backend:\) cpu /\1 $backend /" configs/local.yaml >"$config"
  : >"$server_log"
  "$build/tandem" serve --config "$config" --port 0 >"$server_log" 2>&1 &
  local server=$! state=1 waited=0
  while ((waited < 1200)); do  # tenths of a second
    server_ready "$server_log" "$server"
    state=$?
    ((state == 1)) || break
    sleep 0.1
    waited=$((waited + 1))
  done
  if ((state != 0)); then
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    cat "$server_log" >>"$logs/$name.log"
    if grep -qE 'sees 0 CUDA device|has no CUDA backend' "$server_log"; then
      record "$name" "$name: NO DEVICE, the server needs one"
    else
      record "$name" "$name: FAIL, the server was not ready after $((waited / 10)) s: $(tail -n 1 "$server_log")"
    fi
    return
  fi
  local port
  port=$(server_port "$server_log")
  echo "\$ tandem-loadtest (server: configs/local.yaml with backend: $backend)" >>"$logs/$name.log"
  bounded "$name" 300 "$build/tandem-loadtest" --url "http://127.0.0.1:$port/v1/completions" \
    --concurrency 1,8,16 --requests "$requests" --input-words 32 --output-tokens 64 --seed 1 \
    --warmups 8 --quiet --body '{"ignore_eos": true, "temperature": 0}' \
    --variants '{"spec off": {"speculation": false}, "spec on": {}}' --rounds 4 \
    --json "$logs/$name.json"
  local status=$?
  kill "$server"
  wait "$server" 2>/dev/null
  grep 'geometric mean' "$logs/$name.log"
  # "spec on / spec off, concurrency 8, ...; geometric mean 0.893 (95% interval 0.758-1.053)"
  local ratios
  ratios=$(sed -n 's/^spec on \/ spec off, \(concurrency [0-9]*\),.*geometric mean \([0-9.]*\) (95% interval \([0-9.-]*\))$/\1 \2 (\3)/p' \
    "$logs/$name.log" | paste -sd ';' | sed 's/;/, /g')
  record "$name" "$(plain_verdict "$name" "$status" \
    "spec on / off, geometric mean of 4 rounds (95% interval): ${ratios:-none}")"
}

target=configs/shapes/llama-3-8b.json
draft=configs/shapes/llama-3-draft-0.5b.json

case $stage in
  unpack)
    debs=${2:?usage: $0 unpack DEBS}
    : >"$logs/unpack.log"
    bounded unpack 180 tools/gpu/unpack_debs.sh "$debs" "$bundle"
    status=$?
    record unpack "$(plain_verdict unpack "$status" "$(find "$debs" -name '*.deb' | wc -l) packages into $bundle")"
    ;;
  configure)
    need_bundle configure
    : >"$logs/configure.log"
    nvcc=$(command -v nvcc) || { record configure "configure: FAIL, no nvcc on PATH or in /usr/local/cuda/bin"; exit 1; }
    nccl=$(nccl_prefix)
    bounded configure 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_COMPILER="$nvcc" -DTANDEM_WERROR=OFF ${nccl:+-DNCCL_ROOT="$nccl"}
    status=$?
    grep 'Tandem:' "$logs/configure.log"
    cuda=$(grep -o 'CUDA backend O[NF]*' "$logs/configure.log" | tail -n 1)
    nccl_state=$(grep -o 'NCCL communicator O[NF]*' "$logs/configure.log" | tail -n 1)
    python=$(sed -n 's/.*python3 for the NumPy references: \(none has numpy (\)\?\([^)]*\))\?$/\2/p' \
      "$logs/configure.log" | tail -n 1)
    numpy=$("$python" -c 'import numpy; print("numpy", numpy.__version__)' 2>/dev/null || echo "NO numpy")
    compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
    compiler_version=$("${compiler:-c++}" --version 2>/dev/null | head -n 1)
    nvcc_version=$("$nvcc" --version | grep -o 'release [0-9.]*')
    detail="${cuda:-CUDA backend ?}, ${nccl_state:-NCCL ?}, $compiler_version, nvcc $nvcc_version, $python ($numpy)"
    if [[ $status -eq 0 && ( $cuda != "CUDA backend ON" || $nccl_state != "NCCL communicator ON" || $numpy == "NO numpy" ) ]]; then
      status=1
    fi
    record configure "$(plain_verdict configure "$status" "$detail")"
    ;;
  build)
    need_bundle build
    : >"$logs/build.log"
    # -k: one file that fails to compile still lets every other be built, so
    # that a call shows all of a new compiler's errors at once.
    bounded build 420 cmake --build "$build" -j "$(nproc)" -- -k
    status=$?
    grep -E 'error:|Error [0-9]+' "$logs/build.log" | head -n 20
    warnings=$(grep -c 'warning:' "$logs/build.log")
    record build "$(plain_verdict build "$status" "$warnings compiler warnings (not errors here; see build.log)")"
    ;;
  prepare)
    debs=${2:?usage: $0 prepare DEBS}
    { [[ -f $bundle/env.sh ]] && done_here unpack; } || "$self" unpack "$debs" || exit 1
    done_here configure || "$self" configure || exit 1
    "$self" build  # a no-op when nothing changed
    ;;
  twins) ctest_stage twins 300 -L '^gpu_twins$' ;;
  memcheck) sanitizer_stage memcheck memcheck ;;
  racecheck) sanitizer_stage racecheck racecheck ;;
  reference) ctest_stage reference 300 -L '^gpu_reference$' ;;
  graphs) ctest_stage graphs 300 -L '^gpu_(graphs|nccl)$' ;;
  engine) ctest_stage engine 300 -L '^gpu_engine$' ;;
  server)
    part=${2:?usage: $0 server N (1, 2 or 3)}
    # promtool (Debian's prometheus package) lints /metrics' text format,
    # which no backend changes: where the image lacks it, that case is left
    # to the CPU suite rather than failed here.
    command -v promtool >/dev/null || export GTEST_FILTER=-Lifecycle.MetricsPassPromtool
    ctest_stage "server_$part" 330 -L '^gpu_server$' -R "_${part}_of_3\$"
    ;;
  bench_forward) bench_stage bench_forward forward --backend cuda --dummy "$target" ;;
  bench_steps)
    bench_stage bench_steps steps --backend cuda --dummy "$target" --dummy-draft "$draft"
    ;;
  bench_steps_untiled)
    bench_stage bench_steps_untiled steps --backend cuda --dummy "$target" --dummy-draft "$draft" \
      --untiled-skinny-matmul
    ;;
  bench_batching)
    # Batching serves real prompts, so it needs checkpoints with a tokenizer:
    # the tiny pair in the repository (no 8B-shaped dummy can stand in).
    bench_stage bench_batching batching --backend cuda --model models/tiny/target \
      --draft models/tiny/draft --batches 1,8,32
    ;;
  bench_serve) serve_stage bench_serve ;;
  all)
    if [[ -z ${TANDEM_DEADLINE:-} && -n ${2:-} ]]; then
      export TANDEM_DEADLINE=$(($(date +%s) + $2))
    fi
    # The GPU's numbers against the CPU and NumPy, and the benchmarks that
    # time its kernels, before the slower sanitizers and the server; each
    # stage bounds itself by TANDEM_DEADLINE ("not started" once it has
    # passed).
    for each in twins bench_forward bench_steps bench_steps_untiled memcheck reference engine \
      graphs "server 1" "server 2" "server 3" bench_batching racecheck; do
      # shellcheck disable=SC2086  # "server 1" is a stage and its argument
      "$self" $each
    done
    # bench_serve's 3 x 4 x 2 runs of 128 requests take about 50 s on an
    # H200; with less time left, fewer requests, and none below 90 s.
    left=$((${TANDEM_DEADLINE:-$(($(date +%s) + 3600))} - $(date +%s)))
    if ((left > 90)); then
      ((left < 200)) && export TANDEM_SERVE_REQUESTS=48
      "$self" bench_serve
    else
      echo "bench_serve: not started, $left s left before TANDEM_DEADLINE"
    fi
    "$self" summary
    if [[ -n ${OUT:-} ]]; then
      rm -f "$OUT"/*.log
      tar czf "$OUT/logs.tgz" -C "$build" logs
      ls "$OUT"
    fi
    ;;
  summary)
    shift
    [[ $# -gt 0 ]] || set -- "$logs"
    summarize summary "$@" | tee "$logs/summary.txt"
    if [[ -n ${OUT:-} ]]; then cp "$logs/summary.txt" "$OUT/"; fi
    ;;
  *)
    sed -n '2,30p' "$0" >&2
    exit 2
    ;;
esac
