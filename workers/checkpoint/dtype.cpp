// Conversion of checkpoint element types to f32 (see dtype.h).
#include "workers/checkpoint/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

namespace tandem {
namespace {

// Elements converted per block: the block's f32 output (16 KiB) is still in
// L1 when it is checked, so the check costs no second trip to memory.
constexpr size_t kBlock = 4096;

void convert_block(Dtype dtype, const std::byte* src, size_t count, float* dst) {
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

// Whether any of n floats is NaN or +-inf (all-ones exponent). Branch-free
// and call-free, so the compiler vectorizes it. (Testing the stored bits
// inside the conversion loops was slower: the calls to f16_to_f32 and
// bf16_to_f32 there force the running flag through memory.)
bool any_non_finite(const float* values, size_t n) {
  uint32_t special = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    special |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return special != 0;
}

}  // namespace

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

size_t convert_to_f32(Dtype dtype, const std::byte* src, size_t count, float* dst) {
  const size_t elem = dtype_size(dtype);
  size_t first_non_finite = count;
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t n = std::min(kBlock, count - begin);
    convert_block(dtype, src + begin * elem, n, dst + begin);
    if (first_non_finite == count && any_non_finite(dst + begin, n)) {
      // Rare (a corrupt checkpoint): find which one, in the block just written.
      const float* block = dst + begin;
      const float* bad = std::find_if(block, block + n, [](float v) { return !std::isfinite(v); });
      first_non_finite = begin + static_cast<size_t>(bad - block);
    }
  }
  return first_non_finite;
}

}  // namespace tandem
