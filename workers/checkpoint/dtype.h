// Element types of checkpoint tensors and their conversion to f32.
//
// Safetensors names a tensor's element type with a string ("BF16"). Tandem
// computes in f32 and converts F32, F16 and BF16 on load; every other type
// the format defines is recognised (so a file holding one still validates)
// but refused when read.
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

// Converts count little-endian elements at src (any alignment) into dst.
void convert_to_f32(Dtype dtype, const std::byte* src, size_t count, float* dst);

}  // namespace tandem
