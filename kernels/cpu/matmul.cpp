// matmul: y (T, N) = x (T, Kin) · w (N, Kin)ᵀ + bias, batch-invariant.
//
// Every output element is computed by the same sequence of operations
// whatever T is and wherever its row sits in the batch: sixteen lane-wise
// partial sums (lane l adds x[t][k] w[n][k] for k = l, l + 16, ... in
// increasing k, by fused multiply-adds), then one fixed reduction tree
// (matmul_lanes.h). So a session's logits do not depend on who shares its
// batch, a γ+1-token verification step reproduces single-token decoding bit
// for bit, and greedy speculative output can equal plain greedy output
// exactly. (A BLAS sgemm picks different blockings, and so different
// roundings, for different T.)
//
// Speed: one row (decode) streams w exactly once, which is all a
// memory-bound step can do: each thread owns a contiguous range of w's rows
// and walks six of them at a time, x's 16 lanes held in two registers, one
// multiply-add per 8 floats of w loaded. Two rows or more take the packed
// path (matmul_packed.cpp), which reorders the same operations for the
// cache and the register file.
//
// Each step is one fused multiply-add where the build's target has them
// (matmul_lanes.h); the choice is per build, so invariance is unaffected.
#include <algorithm>

#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

using namespace matmul_lanes;

// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;
constexpr int kRowsPerBlock = 6;  // w rows walked together: 12 accumulators
// How far ahead of its loads a w row is prefetched, in floats: the hardware
// prefetcher follows six streams per thread less readily than one.
constexpr int kPrefetchAhead = 256;

// y[n] for n < NN from one row of x and NN rows of w (stride Kin).
template <int NN>
void row_tile(const float* x, const float* w, int Kin, float* y) {
  Half acc[NN][2];
#pragma GCC unroll 8
  for (int n = 0; n < NN; ++n) acc[n][0] = acc[n][1] = Half{};
  int k = 0;
  for (; k + kLanes <= Kin; k += kLanes) {
    const Half low = in_register(load_half(x + k)), high = in_register(load_half(x + k + 8));
#pragma GCC unroll 8
    for (int n = 0; n < NN; ++n) {
      const float* row = w + static_cast<size_t>(n) * Kin + k;
      __builtin_prefetch(row + kPrefetchAhead);
      acc[n][0] = multiply_add(acc[n][0], low, load_half(row));
      acc[n][1] = multiply_add(acc[n][1], high, load_half(row + 8));
    }
  }
  if (k < Kin) {
    float xt[kLanes] = {}, wt[kLanes] = {};
    std::copy(x + k, x + Kin, xt);
#pragma GCC unroll 8
    for (int n = 0; n < NN; ++n) {
      const float* row = w + static_cast<size_t>(n) * Kin;
      std::copy(row + k, row + Kin, wt);
      acc[n][0] = multiply_add(acc[n][0], load_half(xt), load_half(wt));
      acc[n][1] = multiply_add(acc[n][1], load_half(xt + 8), load_half(wt + 8));
    }
  }
#pragma GCC unroll 8
  for (int n = 0; n < NN; ++n) y[n] = reduce(acc[n][0], acc[n][1]);
}

void matmul_row(const float* x, const float* w, int Kin, int N, float* y) {
  const int blocks = (N + kRowsPerBlock - 1) / kRowsPerBlock;
  const bool parallel = static_cast<long>(Kin) * N >= kParallelWork;
  parallel_for(blocks, parallel, [&](int64_t b) {
    const int n = static_cast<int>(b) * kRowsPerBlock;
    const float* wb = w + static_cast<size_t>(n) * Kin;
    switch (std::min(kRowsPerBlock, N - n)) {
      case 6: row_tile<6>(x, wb, Kin, y + n); break;
      case 5: row_tile<5>(x, wb, Kin, y + n); break;
      case 4: row_tile<4>(x, wb, Kin, y + n); break;
      case 3: row_tile<3>(x, wb, Kin, y + n); break;
      case 2: row_tile<2>(x, wb, Kin, y + n); break;
      default: row_tile<1>(x, wb, Kin, y + n); break;
    }
  });
}

}  // namespace

void matmul(const float* x, const float* w, const float* bias, int T, int Kin, int N, float* y) {
  if (T == 1) {
    matmul_row(x, w, Kin, N, y);
  } else if (T > 1) {
    matmul_packed(x, w, T, Kin, N, y);
  }
  if (bias) {
    for (int t = 0; t < T; ++t) {
      float* row = y + static_cast<size_t>(t) * N;
      for (int n = 0; n < N; ++n) row[n] += bias[n];
    }
  }
}

}  // namespace tandem::cpu
