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
