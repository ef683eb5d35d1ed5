# Sourced by the scripts that compare a job's outputs with one process's
# (tests/cluster/run_cluster_outputs.sh on one machine,
# tests/cluster/multihost/run_multihost_outputs.sh across testbed hosts).
# They run from the repository root and set $work, the folder for configs,
# logs and snapshots; the single process's answers are $work/single.jsonl.
#
#   placement NAME DRAFT_RANK TARGET_RANKS [PIPELINE]
#                         $work/NAME.yaml: configs/cluster-cpu.yaml with that
#                         placement (and speculation.pipeline, when given)
#   compare NAME          NAME's answers must be exactly the single process's
#   require_steps_of_shape NAME SHAPE
#                         the /metrics text on stdin counts steps of SHAPE
#                         (ahead, pingpong): the job really pipelined

placement() {
  sed -e "s/^  draft_rank: .*/  draft_rank: $2/" \
      -e "s/^  target_ranks: .*/  target_ranks: [$3]/" \
      -e "s/^  target_devices: .*/  target_devices: []/" \
      -e "s/^  pipeline: .*/  pipeline: ${4:-auto}/" \
      -e "s/^  ahead_min_hit_rate: .*/  ahead_min_hit_rate: 0/" \
      configs/cluster-cpu.yaml >"$work/$1.yaml"
}

compare() {
  if ! diff "$work/single.jsonl" "$work/$1.jsonl"; then
    echo "$1 gave other outputs than one process (diff above)"
    exit 1
  fi
  echo "$1: $(wc -l <"$work/$1.jsonl") completions identical to one process"
}

require_steps_of_shape() {
  local steps
  steps=$(sed -n "s/^tandem_pipeline_steps_total{shape=\"$2\"} //p")
  echo "$1: ${steps:-no} steps of shape $2"
  [ "${steps%.*}" -gt 0 ] 2>/dev/null || { echo "$1: no $2 steps"; exit 1; }
}
