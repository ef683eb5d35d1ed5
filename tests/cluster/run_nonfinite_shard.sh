#!/bin/bash
# Weights that are not finite, under tensor parallelism: a NaN in LM-head
# rows that only target shard 1 (rank 3) reads (V 4096 over TP 2: rows
# 2048..4095) is refused by that rank while it loads. The MPI job ends with
# a non-zero exit, without hanging, and the log names the rank, the file,
# the tensor, the element and the value.
# usage: run_nonfinite_shard.sh TANDEM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
tandem=$1 source=$2 work=$3
mkdir -p "$work"
cd "$source"
source "$source/tests/support/poke_weight.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export OMPI_MCA_rmaps_base_oversubscribe=1  # more ranks than cores is fine for tests

model="$work/nan-target"
rm -rf "$model" && mkdir -p "$model"
cp models/tiny/target/*.json models/tiny/target/model.safetensors "$model/"
weights="$model/model.safetensors"
poke_bf16 "$weights" lm_head.weight $((3000 * 256 + 7)) 7fc0  # row 3000, column 7
sed -e "s|^    path: models/tiny/target .*|    path: $model|" configs/cluster-cpu.yaml >"$work/cluster.yaml"
grep -qx "    path: $model" "$work/cluster.yaml" || { echo "the target path was not replaced"; exit 1; }

log="$work/server.log"
status=0
timeout 120 mpirun -np 4 "$tandem" serve --config "$work/cluster.yaml" --port 0 \
  >"$work/deployment.yaml" 2>"$log" || status=$?
cat "$log"
[ $status -ne 124 ] || { echo "the job did not end within 120 s"; exit 1; }
[ $status -ne 0 ] || { echo "the job served a checkpoint holding a NaN"; exit 1; }
grep -qF "tandem: rank 3 (target shard 1 of 2, on host $(hostname)): $weights: tensor 'lm_head.weight' holds a non-finite value (nan) at element 768007 (row 3000, column 7); the checkpoint is corrupt" "$log"
echo "non-finite shard: refused by rank 3, job exit $status"
