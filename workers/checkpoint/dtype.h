// Element types of checkpoint tensors and their conversion to f32.
//
// Safetensors names a tensor's element type with a string ("BF16"). Tandem
// computes in f32 and converts F32, F16 and BF16 on load; every other type
// the format defines is recognised (so a file holding one still validates)
// but refused when read. The conversion also finds the first value that is
// not finite (NaN, +inf, -inf), block by block while each converted block is
// still in cache, so that a checkpoint can be refused for holding one
// without reading it twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/dtype.h"  // Dtype, f16_to_f32, bf16_to_f32

namespace tandem {

// The convertible type named by a safetensors dtype string, if any.
std::optional<Dtype> convertible_dtype(std::string_view safetensors_name);

// Bytes per element of a dtype the safetensors format defines ("I8" → 1,
// "F64" → 8); 0 for names it does not define or sub-byte types (F4, F6_*).
size_t safetensors_dtype_size(std::string_view safetensors_name);

// Converts count little-endian elements at src (any alignment) into dst, all
// of them, faithfully (NaN stays NaN, inf stays inf). Returns the position of
// the first element that is not finite, or count when every one is.
[[nodiscard]] size_t convert_to_f32(Dtype dtype, const std::byte* src, size_t count, float* dst);

}  // namespace tandem
