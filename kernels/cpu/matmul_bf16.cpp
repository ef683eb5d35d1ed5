// matmul with narrow weights: y (T, N) = x (T, Kin) · w (N, Kin)ᵀ + bias,
// w in bf16 or f16, x, y and the sums in f32. Batch-invariant by the f32
// kernel's contract (matmul.cpp, matmul_lanes.h): sixteen lane-wise partial
// sums over k in increasing order by fused multiply-adds, then the fixed
// reduction tree.
//
// Why: decoding at batch 1 is bound by the weight bytes streamed per step,
// and two-byte weights halve them. Widening is exact (bf16 is the top half
// of an f32: a 16-bit left shift; F16C's vcvtph2ps converts f16 exactly), so
// each output element is, bit for bit, what the f32 kernel computes on the
// widened weights: the narrow path changes the bytes read, not the math.
// Without AVX-512 there is no bf16 dot instruction, so the shift (integer
// unpack) comes before an ordinary f32 fused multiply-add.
//
// Speed: up to matmul_stream::kMaxRows rows take the streaming path
// (matmul_stream.h), each 8 weights widened into the Half they multiply.
// More rows take the packed path (matmul_packed.cpp), which widens six w
// rows at a time into a small scratch: prefill is bound by arithmetic, not
// by the widening.
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/matmul_stream.h"
#include "kernels/cpu/ops.h"
#include "kernels/dtype.h"

namespace tandem::cpu {
namespace {

using namespace matmul_lanes;

// Eight bf16 weights → f32: zero-extend each to 32 bits, shift left 16.
struct Bf16 {
  using Element = uint16_t;
  static Half widen8(const uint16_t* p) {
#if defined(__AVX2__)
    __m128i bits;
    std::memcpy(&bits, p, sizeof(bits));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
#else
    using Narrow = uint16_t __attribute__((vector_size(8 * sizeof(uint16_t))));
    using Wide = uint32_t __attribute__((vector_size(8 * sizeof(uint32_t))));
    Narrow bits;
    std::memcpy(&bits, p, sizeof(bits));
    const Wide wide = __builtin_convertvector(bits, Wide) << 16;
    Half v;
    std::memcpy(&v, &wide, sizeof(v));
    return v;
#endif
  }
  static float widen1(uint16_t bits) { return bf16_to_f32(bits); }
};

// Eight f16 weights → f32: F16C's exact conversion where the build has it,
// else the exact scalar one (kernels/dtype.h).
struct F16 {
  using Element = uint16_t;
  static Half widen8(const uint16_t* p) {
#if defined(__F16C__)
    __m128i bits;
    std::memcpy(&bits, p, sizeof(bits));
    return _mm256_cvtph_ps(bits);
#else
    float values[8];
    for (int i = 0; i < 8; ++i) values[i] = f16_to_f32(p[i]);
    return load_half(values);
#endif
  }
  static float widen1(uint16_t bits) { return f16_to_f32(bits); }
};

// `count` consecutive weights → f32, for the packed path's scratch.
template <class Format>
void widen_row(const uint16_t* src, int count, float* dst) {
  int i = 0;
  for (; i + 8 <= count; i += 8) {
    const Half v = Format::widen8(src + i);
    std::memcpy(dst + i, &v, sizeof(v));
  }
  for (; i < count; ++i) dst[i] = Format::widen1(src[i]);
}

template <class Format>
void matmul_narrow(const float* x, const uint16_t* w, const float* bias, int T, int Kin,
                   std::span<const MatmulOutput> outputs) {
  matmul_stream::matmul_rows<Format>(x, w, WeightRows{nullptr, w, &widen_row<Format>}, bias, T, Kin, outputs);
}

}  // namespace

void matmul_bf16(const float* x, const uint16_t* w, const float* bias, int T, int Kin,
                 std::span<const MatmulOutput> outputs) {
  matmul_narrow<Bf16>(x, w, bias, T, Kin, outputs);
}

void matmul_f16(const float* x, const uint16_t* w, const float* bias, int T, int Kin,
                std::span<const MatmulOutput> outputs) {
  matmul_narrow<F16>(x, w, bias, T, Kin, outputs);
}

}  // namespace tandem::cpu
