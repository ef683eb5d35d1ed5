// matmul: y (T, N) = x (T, Kin) · w (N, Kin)ᵀ + bias, batch-invariant.
//
// Every output element is computed by the same sequence of operations
// whatever T is and wherever its row sits in the batch: sixteen lane-wise
// partial sums over k in increasing order (one SIMD vector), then one fixed
// reduction tree. So a session's logits do not depend on who shares its
// batch, a γ+1-token verification step reproduces single-token decoding bit
// for bit, and greedy speculative output can equal plain greedy output
// exactly. (A BLAS sgemm picks different blockings, and so different
// roundings, for different T.)
//
// Speed: a register tile of up to 6 rows of x by 4 rows of w keeps 24 vector
// accumulators; each thread owns a contiguous range of w's rows, so decode
// (T = 1) streams w exactly once, which is all a memory-bound step can do.
// This file is compiled with -ffp-contract=fast so that acc += x * w is one
// fused multiply-add; the choice is per build, so invariance is unaffected.
#include <cstring>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

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

// y[t][n] for t < TT, n < NN: x (TT rows, stride Kin), w (NN rows, stride
// Kin), y (TT rows, stride N).
template <int TT, int NN>
void tile(const float* x, const float* w, int Kin, int N, float* y) {
  Vec acc[TT][NN] = {};
  int k = 0;
  for (; k + kLanes <= Kin; k += kLanes) {
    Vec xv[TT], wv[NN];
    for (int t = 0; t < TT; ++t) xv[t] = load(x + static_cast<size_t>(t) * Kin + k);
    for (int n = 0; n < NN; ++n) wv[n] = load(w + static_cast<size_t>(n) * Kin + k);
    for (int t = 0; t < TT; ++t)
      for (int n = 0; n < NN; ++n) acc[t][n] += xv[t] * wv[n];
  }
  if (k < Kin) {
    Vec xv[TT], wv[NN];
    for (int t = 0; t < TT; ++t) xv[t] = load_tail(x + static_cast<size_t>(t) * Kin + k, Kin - k);
    for (int n = 0; n < NN; ++n) wv[n] = load_tail(w + static_cast<size_t>(n) * Kin + k, Kin - k);
    for (int t = 0; t < TT; ++t)
      for (int n = 0; n < NN; ++n) acc[t][n] += xv[t] * wv[n];
  }
  for (int t = 0; t < TT; ++t)
    for (int n = 0; n < NN; ++n) y[static_cast<size_t>(t) * N + n] = reduce(acc[t][n]);
}

// All T rows of x against NN rows of w, six rows of x at a time.
template <int NN>
void row_block(const float* x, const float* w, int T, int Kin, int N, float* y) {
  int t = 0;
  for (; t + 6 <= T; t += 6) tile<6, NN>(x + static_cast<size_t>(t) * Kin, w, Kin, N, y + static_cast<size_t>(t) * N);
  const float* xt = x + static_cast<size_t>(t) * Kin;
  float* yt = y + static_cast<size_t>(t) * N;
  switch (T - t) {
    case 5: tile<5, NN>(xt, w, Kin, N, yt); break;
    case 4: tile<4, NN>(xt, w, Kin, N, yt); break;
    case 3: tile<3, NN>(xt, w, Kin, N, yt); break;
    case 2: tile<2, NN>(xt, w, Kin, N, yt); break;
    case 1: tile<1, NN>(xt, w, Kin, N, yt); break;
    default: break;
  }
}

}  // namespace

void matmul(const float* x, const float* w, const float* bias, int T, int Kin, int N, float* y) {
  const int blocks = (N + 3) / 4;  // groups of four rows of w
  const bool parallel = static_cast<long>(T) * Kin * N >= kParallelWork;
  parallel_for(blocks, parallel, [&](int64_t b) {
    const int n = static_cast<int>(b) * 4;
    const float* wb = w + static_cast<size_t>(n) * Kin;
    switch (N - n >= 4 ? 4 : N - n) {
      case 4: row_block<4>(x, wb, T, Kin, N, y + n); break;
      case 3: row_block<3>(x, wb, T, Kin, N, y + n); break;
      case 2: row_block<2>(x, wb, T, Kin, N, y + n); break;
      default: row_block<1>(x, wb, T, Kin, N, y + n); break;
    }
  });
  if (bias) {
    for (int t = 0; t < T; ++t) {
      float* row = y + static_cast<size_t>(t) * N;
      for (int n = 0; n < N; ++n) row[n] += bias[n];
    }
  }
}

}  // namespace tandem::cpu
