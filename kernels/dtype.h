// Element types, their exact conversions, and the view weight-reading ops take.
//
// Activations, the KV cache and probability rows are always f32. Weight
// matrices are stored in the backend's weight dtype (Backend::weight_dtype()):
// f32, bf16 or f16 on either backend (a deployment's placement.weight_dtype
// auto keeps a 16-bit checkpoint's own dtype, else f32 on the CPU and bf16
// on CUDA: coordinator/models/weight_dtype.h); decoding is bound by the
// weight bytes each step streams from memory. Checkpoints hold the same
// three types (workers/checkpoint/dtype.h reads them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem {

enum class Dtype { f32, f16, bf16 };

size_t dtype_size(Dtype dtype);
const char* dtype_name(Dtype dtype);  // the safetensors spelling: "F32", "F16", "BF16"
// A weight dtype as the config spells it: "bf16"/"bfloat16", "fp16"/"f16"/
// "float16", "fp32"/"f32"/"float32"; nullopt for anything else.
std::optional<Dtype> parse_weight_dtype(std::string_view name);

// IEEE 754 binary16 → f32, exact for every input: subnormals, ±inf and NaN
// (its payload kept) included.
float f16_to_f32(uint16_t bits);
// bfloat16 is the top half of an f32, so the conversion is exact.
float bf16_to_f32(uint16_t bits);
// f32 → bf16 / f16, rounding to nearest with ties to even (as PyTorch's
// .to(torch.bfloat16) and the CUDA intrinsics do); NaN stays NaN, values past
// the largest finite one become ±inf.
uint16_t f32_to_bf16(float value);
uint16_t f32_to_f16(float value);

// A read-only weight matrix or table in backend memory, with its dtype.
// Implicit from a float pointer, so f32 callers (an activation used as a
// gather table, tests) read as before.
struct WeightView {
  const void* data = nullptr;
  Dtype dtype = Dtype::f32;

  WeightView() = default;
  WeightView(const float* values) : data(values) {}  // NOLINT(google-explicit-constructor)
  WeightView(const void* values, Dtype type) : data(values), dtype(type) {}

  // The view `elements` elements further on: a row range of a stacked matrix
  // such as the fused qkv.
  WeightView offset(size_t elements) const {
    return {static_cast<const char*>(data) + elements * dtype_size(dtype), dtype};
  }
  // The f32 data, or nullptr when the weight is stored narrower.
  const float* f32() const { return dtype == Dtype::f32 ? static_cast<const float*>(data) : nullptr; }
};

}  // namespace tandem
