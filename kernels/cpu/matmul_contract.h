// The batch-invariance contract of the CPU matmuls (matmul.cpp, f32
// weights; matmul_bf16.cpp, bf16 and f16 weights): every output element is
// sixteen lane-wise partial sums over k in increasing order, the last
// Kin % 16 terms zero-padded, then the one reduction tree below. A kernel
// that keeps it gives each element the same bits whatever T is, and the
// narrow-weight kernel gives the f32 kernel's bits on widened weights
// (tests/kernels/matmul_bf16_test.cpp checks both).
//
// matmul.cpp keeps its own copy of these lines for now (it is being
// rewritten); the test above pins the two copies to the same results.
#pragma once

#include <cstring>

namespace tandem::cpu::matmul_contract {

constexpr int kLanes = 16;
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
using Half = float __attribute__((vector_size(8 * sizeof(float))));
using Quarter = float __attribute__((vector_size(4 * sizeof(float))));

// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The last Kin % 16 elements, zero-padded: adds exact zeros to the lanes.
inline Vec load_tail(const float* p, int count) {
  float padded[kLanes] = {};
  std::memcpy(padded, p, sizeof(float) * static_cast<size_t>(count));
  return load(padded);
}

// The fixed reduction tree: halves, then quarters, then pairs.
inline float reduce(Vec v) {
  const Half h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Quarter q = __builtin_shufflevector(h, h, 0, 1, 2, 3) +
                    __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

}  // namespace tandem::cpu::matmul_contract
