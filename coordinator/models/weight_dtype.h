// placement.weight_dtype auto (the default): weight matrices kept in the
// dtype their checkpoints store them in, when that is a 16-bit one.
//
// A bf16 or fp16 checkpoint widened to f32 in memory holds the same values
// in twice the bytes, and the matmuls compute exactly what they compute on
// the 16-bit weights (each weight is widened exactly before the same f32
// multiply-adds: kernels/cpu/matmul_bf16.cpp), so keeping the stored dtype
// changes no output bit and halves what each decode step streams from
// memory. Every model on one backend must agree, since the backend has one
// weight dtype; otherwise, and for dummy weights (no checkpoint), the
// backend's own default: f32 on the CPU, bf16 on CUDA.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "kernels/backend.h"
#include "kernels/dtype.h"

namespace tandem {

struct WeightDtypeChoice {
  Dtype dtype = Dtype::f32;
  std::string why;  // for the log: "as the checkpoints store them", "asked", ...
};

// The dtype a backend of `kind` holding the models of `checkpoints` (their
// directories; dummy models left out) stores weights in: `asked` when set,
// else as above.
WeightDtypeChoice choose_weight_dtype(BackendKind kind, std::optional<Dtype> asked,
                                      std::span<const std::filesystem::path> checkpoints);

// The choice for the log: "BF16 in memory (auto: as the checkpoints store them)".
std::string describe(const WeightDtypeChoice& choice);

}  // namespace tandem
