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

namespace tandem {

// The element types Tandem converts to f32.
enum class Dtype { f32, f16, bf16 };

// The convertible type named by a safetensors dtype string, if any.
std::optional<Dtype> convertible_dtype(std::string_view safetensors_name);

// Bytes per element of a dtype the safetensors format defines ("I8" → 1,
// "F64" → 8); 0 for names it does not define or sub-byte types (F4, F6_*).
size_t safetensors_dtype_size(std::string_view safetensors_name);

size_t dtype_size(Dtype dtype);
const char* dtype_name(Dtype dtype);  // the safetensors spelling

// IEEE 754 binary16 → f32, exact for every input: subnormals, ±inf and NaN
// (its payload kept) included.
float f16_to_f32(uint16_t bits);
// bfloat16 is the top half of an f32, so the conversion is exact.
float bf16_to_f32(uint16_t bits);

// Converts count little-endian elements at src (any alignment) into dst.
void convert_to_f32(Dtype dtype, const std::byte* src, size_t count, float* dst);

}  // namespace tandem
