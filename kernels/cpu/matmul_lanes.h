// The arithmetic every path of the CPU matmul shares (kernels/cpu/matmul.cpp
// states the contract): sixteen lane-wise partial sums over k, each one a
// chain of fused multiply-adds in increasing k, then one fixed reduction
// tree. Only what a path must agree on bit for bit lives here, and the
// 8 x 8 transpose the packed path uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "kernels/backend.h"

#ifdef __FMA__
#include <immintrin.h>
#endif

namespace tandem::cpu::matmul_lanes {

constexpr int kLanes = 16;
using Half = float __attribute__((vector_size(8 * sizeof(float))));  // lanes 0-7 or 8-15
using Quarter = float __attribute__((vector_size(4 * sizeof(float))));

inline Half load_half(const float* p) {
  Half v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline Half splat(float v) { return Half{v, v, v, v, v, v, v, v}; }

// acc + a * b, rounded once where the machine has fused multiply-add (and
// twice on every path alike where it has not). Spelled out rather than left
// to -ffp-contract, which GCC applies to some expressions and not others.
inline Half multiply_add(Half acc, Half a, Half b) {
#ifdef __FMA__
  return _mm256_fmadd_ps(a, b, acc);
#else
  return acc + a * b;
#endif
}

// A value the compiler must hold in a register: left alone, GCC folds a
// load into each multiply-add that uses it and reloads it for the next,
// more loads than the load ports sustain. An empty asm: the bits are
// unchanged.
inline Half in_register(Half v) {
#ifdef __AVX__  // where a Half fits one register
  asm("" : "+x"(v));
#endif
  return v;
}

// The fixed reduction tree over lanes 0-7 (low) and 8-15 (high): halves,
// then quarters, then pairs.
inline float reduce(Half low, Half high) {
  const Half h = low + high;
  const Quarter q = __builtin_shufflevector(h, h, 0, 1, 2, 3) +
                    __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// out[l][r] = in[r][l]: the textbook 8 x 8 transpose in three rounds of
// shuffles (pairs, quads, then 128-bit halves).
inline void transpose8(const Half (&in)[8], Half (&out)[8]) {
  Half t[8], q[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = __builtin_shufflevector(in[2 * i], in[2 * i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * i + 1] = __builtin_shufflevector(in[2 * i], in[2 * i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      // rows 4i..4i+3 of columns (j: 0, 1 | 4, 5) and (j: 2, 3 | 6, 7)
      q[4 * i + 2 * j] = __builtin_shufflevector(t[4 * i + j], t[4 * i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      q[4 * i + 2 * j + 1] = __builtin_shufflevector(t[4 * i + j], t[4 * i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int l = 0; l < 4; ++l) {
    out[l] = __builtin_shufflevector(q[l], q[l + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    out[l + 4] = __builtin_shufflevector(q[l], q[l + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

}  // namespace tandem::cpu::matmul_lanes

namespace tandem::cpu {

// w's rows for the packed path: f32 in place, or narrow (bf16, f16) with
// the exact widening of `count` consecutive weights to f32.
struct WeightRows {
  const float* f32;
  const uint16_t* narrow;
  void (*widen)(const uint16_t* src, int count, float* dst);

  // The same matrix from its element `offset` on (a row range's start).
  WeightRows rows_from(size_t offset) const {
    return {f32 ? f32 + offset : nullptr, narrow ? narrow + offset : nullptr, widen};
  }
};

// matmul_packed.cpp: y (T, N) = x · wᵀ through panels packed for the cache,
// for the many-row (prefill) calls; the same bits as the streaming path.
void matmul_packed(const float* x, const float* w, int T, int Kin, int N, float* y);
void matmul_packed(const float* x, const WeightRows& w, int T, int Kin, int N, float* y);
// The consecutive row ranges of w into their own outputs (the fused qkv),
// x packed once and every range's panels in one parallel section.
void matmul_packed(const float* x, const WeightRows& w, int T, int Kin, std::span<const MatmulOutput> outputs);

}  // namespace tandem::cpu
