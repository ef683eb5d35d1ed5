#!/usr/bin/env bash
# Issue 7's GPU checks in stages, each short enough for one call of a GPU
# machine lent for minutes (docs/gpu.md, "A session on a lent GPU machine"):
#
#   tools/gpu/gpu_checks.sh unpack DEBS   the bundle's .deb files (bundle_debs.sh) into $TANDEM_BUNDLE
#   tools/gpu/gpu_checks.sh build         configure with nvcc and NCCL, build into build-gpu/
#   tools/gpu/gpu_checks.sh tests         the GPU tests (ctest -R '[Cc]uda|nccl|StepGraphs')
#   tools/gpu/gpu_checks.sh bench         the GPU benchmarks of docs/benchmarks.md
#
# Each stage writes its whole log into $LOGS (default: $OUT, where the
# device tool sets it, else build-gpu/logs) and prints the part worth
# reading. TANDEM_BUNDLE defaults to /tmp/tandem-debs.
set -euo pipefail

stage=${1:-}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${TANDEM_BUNDLE:-/tmp/tandem-debs}
build=$repo/build-gpu
logs=${LOGS:-${OUT:-$build/logs}}
mkdir -p "$logs"
cd "$repo"
# The lent machines run commands as root; mpirun refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

use_bundle() {
  [[ -f $bundle/env.sh ]] || { echo "no bundle at $bundle: run the unpack stage first" >&2; exit 1; }
  # shellcheck source=/dev/null
  source "$bundle/env.sh"
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

case $stage in
  unpack)
    tools/gpu/unpack_debs.sh "${2:?usage: $0 unpack DEBS}" "$bundle"
    ;;
  build)
    use_bundle
    PATH=$PATH:/usr/local/cuda/bin
    nccl=$(nccl_prefix)
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
      ${nccl:+-DNCCL_ROOT="$nccl"} >"$logs/configure.log" 2>&1 ||
      { tail -n 40 "$logs/configure.log"; exit 1; }
    grep 'Tandem:' "$logs/configure.log"
    cmake --build "$build" -j "$(nproc)" >"$logs/build.log" 2>&1 ||
      { grep -E 'error|Error' "$logs/build.log" | head -n 40; exit 1; }
    echo "built into $build"
    ;;
  tests)
    use_bundle
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    set -o pipefail
    ctest --test-dir "$build" -R '[Cc]uda|nccl|StepGraphs' --output-on-failure 2>&1 |
      tee "$logs/gpu_tests.log" | grep -E 'Test +#|tests passed|tests failed|Skipped|Failed' || true
    ;;
  bench)
    use_bundle
    target=configs/shapes/llama-3-8b.json draft=configs/shapes/llama-3-draft-0.5b.json
    "$build/tandem" bench forward --backend cuda --dummy "$target" 2>&1 | tee "$logs/bench_forward.txt"
    "$build/tandem" bench steps --backend cuda --dummy "$target" --dummy-draft "$draft" 2>&1 |
      tee "$logs/bench_steps.txt"
    "$build/tandem" bench batching --backend cuda --dummy "$target" --dummy-draft "$draft" \
      --batches 1,8,32 2>&1 | tee "$logs/bench_batching.txt"
    ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
