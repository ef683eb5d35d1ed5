#include "coordinator/config/compute_choice.h"

namespace tandem {

ComputeResult choose_compute(const std::string& backend,
                             const std::optional<std::string>& weight_dtype) {
  using Field = ComputeProblem::Field;
  ComputeResult result;
  const auto fail = [&](Field field, std::string message) {
    result.problem = ComputeProblem{field, std::move(message)};
    return result;
  };
  if (backend == "cuda") {
    result.choice.backend = BackendKind::cuda;
    if (!cuda_backend_built()) {
      return fail(Field::backend, "is cuda, but this build of tandem has no CUDA backend (nvcc "
                                  "was not found when it was built); see docs/gpu.md");
    }
  } else if (backend != "cpu") {
    return fail(Field::backend, "must be cpu or cuda, got \"" + backend + "\"");
  }
  // Unset or auto: decided once the checkpoints are known
  // (coordinator/models/weight_dtype.h).
  if (!weight_dtype || *weight_dtype == "auto") return result;
  const std::optional<Dtype> parsed = parse_weight_dtype(*weight_dtype);
  if (!parsed) {
    return fail(Field::weight_dtype,
                "must be auto, bf16, fp16 or fp32, got \"" + *weight_dtype + "\"");
  }
  result.choice.weight_dtype = *parsed;
  return result;
}

}  // namespace tandem
