#include "coordinator/models/weight_dtype.h"

#include "workers/checkpoint/checkpoint_reader.h"

namespace tandem {

WeightDtypeChoice choose_weight_dtype(BackendKind kind, std::optional<Dtype> asked,
                                      std::span<const std::filesystem::path> checkpoints) {
  if (asked) return {*asked, "placement.weight_dtype"};
  const Dtype fallback = kind == BackendKind::cuda ? Dtype::bf16 : Dtype::f32;
  const std::string fallback_why = std::string("auto: the ") +
                                   (kind == BackendKind::cuda ? "cuda" : "cpu") + " backend's default";
  std::optional<Dtype> shared;
  for (const std::filesystem::path& dir : checkpoints) {
    const std::optional<Dtype> stored = CheckpointReader(dir).matrix_dtype();
    if (!stored || *stored == Dtype::f32 || (shared && shared != stored)) {
      return {fallback, fallback_why + " (the checkpoints do not share one 16-bit dtype)"};
    }
    shared = stored;
  }
  if (!shared) return {fallback, fallback_why + " (no checkpoint)"};
  return {*shared, "auto: as the checkpoints store them"};
}

std::string describe(const WeightDtypeChoice& choice) {
  return std::string(dtype_name(choice.dtype)) + " in memory (" + choice.why + ")";
}

}  // namespace tandem
