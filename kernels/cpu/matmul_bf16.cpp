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
// Speed: one row (decode) is matmul.cpp's streaming walk (six w rows at a
// time, x's 16 lanes in two registers, prefetch ahead), each 16 weights
// widened into the two Halves it multiplies. Two rows or more take the
// packed path (matmul_packed.cpp), which widens six w rows at a time into a
// small scratch: prefill is bound by arithmetic, not by the widening.
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace tandem::cpu {
namespace {

using namespace matmul_lanes;

// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;
constexpr int kRowsPerBlock = 6;  // w rows walked together: 12 accumulators
// How far ahead of its loads a w row is prefetched, in weights: the same
// 1 KiB ahead as matmul.cpp's 256 floats.
constexpr int kPrefetchAhead = 512;

// Eight bf16 weights → f32: zero-extend each to 32 bits, shift left 16.
struct Bf16 {
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

// y[n] for n < NN from one row of x and NN rows of w (stride Kin): the
// operations of matmul.cpp's row_tile, in its order.
template <class Format, int NN>
void row_tile(const float* x, const uint16_t* w, int Kin, float* y) {
  Half acc[NN][2];
#pragma GCC unroll 8
  for (int n = 0; n < NN; ++n) acc[n][0] = acc[n][1] = Half{};
  int k = 0;
  for (; k + kLanes <= Kin; k += kLanes) {
    const Half low = in_register(load_half(x + k)), high = in_register(load_half(x + k + 8));
#pragma GCC unroll 8
    for (int n = 0; n < NN; ++n) {
      const uint16_t* row = w + static_cast<size_t>(n) * Kin + k;
      // One prefetch per 64-byte line: every other step.
      if ((k & kLanes) == 0) __builtin_prefetch(row + kPrefetchAhead);
      acc[n][0] = multiply_add(acc[n][0], low, Format::widen8(row));
      acc[n][1] = multiply_add(acc[n][1], high, Format::widen8(row + 8));
    }
  }
  if (k < Kin) {
    // The last Kin % 16 weights, zero-padded (a zero bit pattern is +0 in
    // both formats): the same exact zeros the f32 kernel adds.
    float xt[kLanes] = {};
    std::copy(x + k, x + Kin, xt);
#pragma GCC unroll 8
    for (int n = 0; n < NN; ++n) {
      uint16_t wt[kLanes] = {};
      const uint16_t* row = w + static_cast<size_t>(n) * Kin;
      std::copy(row + k, row + Kin, wt);
      acc[n][0] = multiply_add(acc[n][0], load_half(xt), Format::widen8(wt));
      acc[n][1] = multiply_add(acc[n][1], load_half(xt + 8), Format::widen8(wt + 8));
    }
  }
#pragma GCC unroll 8
  for (int n = 0; n < NN; ++n) y[n] = reduce(acc[n][0], acc[n][1]);
}

template <class Format>
void matmul_row(const float* x, const uint16_t* w, int Kin, int N, float* y) {
  const int blocks = (N + kRowsPerBlock - 1) / kRowsPerBlock;
  const bool parallel = static_cast<long>(Kin) * N >= kParallelWork;
  parallel_for(blocks, parallel, [&](int64_t b) {
    const int n = static_cast<int>(b) * kRowsPerBlock;
    const uint16_t* wb = w + static_cast<size_t>(n) * Kin;
    switch (std::min(kRowsPerBlock, N - n)) {
      case 6: row_tile<Format, 6>(x, wb, Kin, y + n); break;
      case 5: row_tile<Format, 5>(x, wb, Kin, y + n); break;
      case 4: row_tile<Format, 4>(x, wb, Kin, y + n); break;
      case 3: row_tile<Format, 3>(x, wb, Kin, y + n); break;
      case 2: row_tile<Format, 2>(x, wb, Kin, y + n); break;
      default: row_tile<Format, 1>(x, wb, Kin, y + n); break;
    }
  });
}

template <class Format>
void matmul_narrow(const float* x, const uint16_t* w, const float* bias, int T, int Kin, int N,
                   float* y) {
  if (T == 1) {
    matmul_row<Format>(x, w, Kin, N, y);
  } else if (T > 1) {
    matmul_packed(x, WeightRows{nullptr, w, &widen_row<Format>}, T, Kin, N, y);
  }
  if (bias) {
    for (int t = 0; t < T; ++t) {
      float* row = y + static_cast<size_t>(t) * N;
      for (int n = 0; n < N; ++n) row[n] += bias[n];
    }
  }
}

}  // namespace

void matmul_bf16(const float* x, const uint16_t* w, const float* bias, int T, int Kin, int N,
                 float* y) {
  matmul_narrow<Bf16>(x, w, bias, T, Kin, N, y);
}

void matmul_f16(const float* x, const uint16_t* w, const float* bias, int T, int Kin, int N,
                float* y) {
  matmul_narrow<F16>(x, w, bias, T, Kin, N, y);
}

}  // namespace tandem::cpu
