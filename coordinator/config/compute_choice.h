// choose_compute: the rules for the compute backend and the weights' dtype,
// written once for both ways of choosing them: a deployment's
// placement.backend / placement.weight_dtype, and the --backend /
// --weight-dtype flags of `tandem generate` and `tandem-bench`. Which words
// are valid, and that cuda needs a build with nvcc. Both backends take bf16,
// fp16 and fp32; auto (the default) is decided when the checkpoints are
// known (coordinator/models/weight_dtype.h).
#pragma once

#include <optional>
#include <string>

#include "kernels/backend.h"
#include "kernels/dtype.h"

namespace tandem {

struct ComputeChoice {
  BackendKind backend = BackendKind::cpu;
  std::optional<Dtype> weight_dtype;  // unset: auto
};

// What is wrong, and with which of the two words (the caller says where it
// was written: "FILE:LINE: placement.backend" or "--backend").
struct ComputeProblem {
  enum class Field { backend, weight_dtype };
  Field field = Field::backend;
  std::string message;  // "must be cpu or cuda, got \"tpu\""
};

struct ComputeResult {
  ComputeChoice choice;
  std::optional<ComputeProblem> problem;  // set: choice is meaningless
};

// backend: "cpu" or "cuda". weight_dtype: "auto", "bf16", "fp16" or "fp32";
// nullopt means auto.
ComputeResult choose_compute(const std::string& backend,
                             const std::optional<std::string>& weight_dtype);

}  // namespace tandem
