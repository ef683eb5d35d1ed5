// matmul with narrow weights: y (T, N) = x (T, Kin) · w (N, Kin)ᵀ + bias,
// w in bf16 or f16, x, y and the sums in f32. Batch-invariant by the same
// contract as the f32 kernel (matmul_contract.h): sixteen lane-wise partial
// sums over k in increasing order, then the fixed reduction tree.
//
// Why: decoding at batch 1 is bound by the weight bytes streamed per step,
// and two-byte weights halve them. Widening is exact (bf16 is the top half
// of an f32: a 16-bit left shift; F16C's vcvtph2ps converts f16 exactly), so
// each output element is, bit for bit, what the f32 kernel computes on the
// widened weights: the narrow path changes the bytes read, not the math.
// Without AVX-512 there is no bf16 dot instruction, so the shift (integer
// unpack) comes before an ordinary f32 fused multiply-add.
//
// Speed: the f32 kernel's register tile (up to 6 rows of x by 4 rows of w),
// each weight vector widened once per tile and reused for every row of x;
// each thread owns a contiguous range of w's rows, so decode streams w once.
// Compiled with -ffp-contract=fast like matmul.cpp, so that acc += x * w is
// the same fused multiply-add there and here.
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/cpu/matmul_contract.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

using namespace matmul_contract;

// Sixteen bf16 weights → f32: zero-extend each to 32 bits, shift left 16.
struct Bf16 {
  static Vec widen(const uint16_t* p) {
    using Narrow = uint16_t __attribute__((vector_size(kLanes * sizeof(uint16_t))));
    using Wide = uint32_t __attribute__((vector_size(kLanes * sizeof(uint32_t))));
    Narrow bits;
    std::memcpy(&bits, p, sizeof(bits));
    const Wide wide = __builtin_convertvector(bits, Wide) << 16;
    Vec v;
    std::memcpy(&v, &wide, sizeof(v));
    return v;
  }
};

// Sixteen f16 weights → f32: F16C's exact conversion where the build has it,
// else the exact scalar one (kernels/dtype.h).
struct F16 {
  static Vec widen(const uint16_t* p) {
#if defined(__F16C__)
    __m128i low, high;
    std::memcpy(&low, p, sizeof(low));
    std::memcpy(&high, p + 8, sizeof(high));
    const Half a = _mm256_cvtph_ps(low);
    const Half b = _mm256_cvtph_ps(high);
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    float values[kLanes];
    for (int i = 0; i < kLanes; ++i) values[i] = f16_to_f32(p[i]);
    return load(values);
#endif
  }
};

// The last Kin % 16 weights, zero-padded (a zero bit pattern is +0 in both
// formats): the same exact zeros the f32 kernel adds.
template <class Format>
Vec widen_tail(const uint16_t* p, int count) {
  uint16_t padded[kLanes] = {};
  std::memcpy(padded, p, sizeof(uint16_t) * static_cast<size_t>(count));
  return Format::widen(padded);
}

// y[t][n] for t < TT, n < NN: x (TT rows, stride Kin), w (NN rows, stride
// Kin), y (TT rows, stride N).
template <class Format, int TT, int NN>
void tile(const float* x, const uint16_t* w, int Kin, int N, float* y) {
  Vec acc[TT][NN] = {};
  int k = 0;
  for (; k + kLanes <= Kin; k += kLanes) {
    Vec xv[TT], wv[NN];
    for (int n = 0; n < NN; ++n) wv[n] = Format::widen(w + static_cast<size_t>(n) * Kin + k);
    for (int t = 0; t < TT; ++t) xv[t] = load(x + static_cast<size_t>(t) * Kin + k);
    for (int t = 0; t < TT; ++t)
      for (int n = 0; n < NN; ++n) acc[t][n] += xv[t] * wv[n];
  }
  if (k < Kin) {
    Vec xv[TT], wv[NN];
    for (int n = 0; n < NN; ++n)
      wv[n] = widen_tail<Format>(w + static_cast<size_t>(n) * Kin + k, Kin - k);
    for (int t = 0; t < TT; ++t) xv[t] = load_tail(x + static_cast<size_t>(t) * Kin + k, Kin - k);
    for (int t = 0; t < TT; ++t)
      for (int n = 0; n < NN; ++n) acc[t][n] += xv[t] * wv[n];
  }
  for (int t = 0; t < TT; ++t)
    for (int n = 0; n < NN; ++n) y[static_cast<size_t>(t) * N + n] = reduce(acc[t][n]);
}

// All T rows of x against NN rows of w, six rows of x at a time.
template <class Format, int NN>
void row_block(const float* x, const uint16_t* w, int T, int Kin, int N, float* y) {
  int t = 0;
  for (; t + 6 <= T; t += 6)
    tile<Format, 6, NN>(x + static_cast<size_t>(t) * Kin, w, Kin, N, y + static_cast<size_t>(t) * N);
  const float* xt = x + static_cast<size_t>(t) * Kin;
  float* yt = y + static_cast<size_t>(t) * N;
  switch (T - t) {
    case 5: tile<Format, 5, NN>(xt, w, Kin, N, yt); break;
    case 4: tile<Format, 4, NN>(xt, w, Kin, N, yt); break;
    case 3: tile<Format, 3, NN>(xt, w, Kin, N, yt); break;
    case 2: tile<Format, 2, NN>(xt, w, Kin, N, yt); break;
    case 1: tile<Format, 1, NN>(xt, w, Kin, N, yt); break;
    default: break;
  }
}

template <class Format>
void matmul_narrow(const float* x, const uint16_t* w, const float* bias, int T, int Kin, int N,
                   float* y) {
  const int blocks = (N + 3) / 4;  // groups of four rows of w
  const bool parallel = static_cast<long>(T) * Kin * N >= kParallelWork;
  parallel_for(blocks, parallel, [&](int64_t b) {
    const int n = static_cast<int>(b) * 4;
    const uint16_t* wb = w + static_cast<size_t>(n) * Kin;
    switch (N - n >= 4 ? 4 : N - n) {
      case 4: row_block<Format, 4>(x, wb, T, Kin, N, y + n); break;
      case 3: row_block<Format, 3>(x, wb, T, Kin, N, y + n); break;
      case 2: row_block<Format, 2>(x, wb, T, Kin, N, y + n); break;
      default: row_block<Format, 1>(x, wb, T, Kin, N, y + n); break;
    }
  });
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
