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
// Speed: up to matmul_stream::kMaxRows rows (decode, verification of a
// draft block, a few sessions together) stream w exactly once, which is all
// a memory-bound step can do (matmul_stream.h). More rows take the packed
// path (matmul_packed.cpp), which reorders the same operations for the
// cache and the register file.
//
// Each step is one fused multiply-add where the build's target has them
// (matmul_lanes.h); the choice is per build, so invariance is unaffected.
#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/matmul_stream.h"
#include "kernels/cpu/ops.h"

namespace tandem::cpu {

void matmul(const float* x, const float* w, const float* bias, int T, int Kin,
            std::span<const MatmulOutput> outputs) {
  matmul_stream::matmul_rows<matmul_stream::F32Weights>(x, w, WeightRows{w, nullptr, nullptr}, bias, T, Kin,
                                                        outputs);
}

}  // namespace tandem::cpu
