// Conversion of checkpoint element types to f32 (see dtype.h).
#include "workers/checkpoint/dtype.h"

#include <bit>
#include <cstring>
#include <utility>

namespace tandem {

// Checkpoint bytes are little-endian and are read in place from the mmap.
static_assert(std::endian::native == std::endian::little,
              "checkpoint loading assumes a little-endian host");

std::optional<Dtype> convertible_dtype(std::string_view name) {
  if (name == "F32") return Dtype::f32;
  if (name == "F16") return Dtype::f16;
  if (name == "BF16") return Dtype::bf16;
  return std::nullopt;
}

size_t safetensors_dtype_size(std::string_view name) {
  static const std::pair<std::string_view, size_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},      {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2},     {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"F64", 8}, {"I64", 8},     {"U64", 8},
  };
  for (const auto& [dtype, size] : kSizes) {
    if (dtype == name) return size;
  }
  return 0;
}

size_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32: return 4;
    case Dtype::f16: return 2;
    case Dtype::bf16: return 2;
  }
  return 0;
}

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32: return "F32";
    case Dtype::f16: return "F16";
    case Dtype::bf16: return "BF16";
  }
  return "?";
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1fu) {
    // inf (mantissa 0) or NaN: all-ones f32 exponent, payload shifted up.
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    // Normal: rebias the exponent from 15 to 127.
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal, mantissa * 2^-24: shift until the implicit bit appears; every
    // f16 subnormal is a normal f32.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_f32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

void convert_to_f32(Dtype dtype, const std::byte* src, size_t count, float* dst) {
  if (count == 0) return;  // empty tensors may come with null pointers
  switch (dtype) {
    case Dtype::f32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case Dtype::f16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);  // the mmap gives no alignment guarantee
        dst[i] = f16_to_f32(h);
      }
      return;
    case Dtype::bf16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
  }
}

}  // namespace tandem
