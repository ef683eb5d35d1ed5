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
  // Weights in the backend's natural dtype unless asked otherwise: f32 on the
  // CPU (the reference; bf16 or fp16 halve the bytes a decode step streams),
  // bf16 on the GPU.
  const bool gpu = result.choice.backend == BackendKind::cuda;
  const std::string dtype = weight_dtype.value_or(gpu ? "bf16" : "fp32");
  const std::optional<Dtype> parsed = parse_weight_dtype(dtype);
  if (!parsed) return fail(Field::weight_dtype, "must be bf16, fp16 or fp32, got \"" + dtype + "\"");
  result.choice.weight_dtype = *parsed;
  return result;
}

}  // namespace tandem
