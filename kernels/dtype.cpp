#include "kernels/dtype.h"

#include <bit>
#include <cmath>

namespace tandem {

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

std::optional<Dtype> parse_weight_dtype(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return Dtype::bf16;
  if (name == "fp16" || name == "f16" || name == "float16") return Dtype::f16;
  if (name == "fp32" || name == "f32" || name == "float32") return Dtype::f32;
  return std::nullopt;
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

uint16_t f32_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // stays quiet NaN
  // Add just under half a bf16 ulp, plus one when the kept part is odd (ties
  // to even); a carry into the exponent rounds up a binade, or to inf.
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint16_t f32_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  // 65520 = 65504 + half an ulp: from there on, round to nearest gives inf.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // Below the smallest normal (2^-14): a subnormal count of 2^-24 steps.
    // Scaling by 2^24 is exact, and nearbyint rounds ties to even.
    const float steps = std::bit_cast<float>(magnitude) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(steps)));
  }
  // Normal: rebias the exponent (127 → 15), keep 10 mantissa bits and round
  // the 13 dropped ones to nearest even; a carry bumps the exponent.
  const uint32_t rebiased = magnitude - ((127u - 15u) << 23);
  const uint32_t rounding = 0xfffu + ((rebiased >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rebiased + rounding) >> 13));
}

}  // namespace tandem
