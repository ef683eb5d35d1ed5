// skinny_matmul: y (T, N) = x (T, K) · wᵀ for the few-row GEMMs of decoding
// and verification, batch-invariant.
//
// One warp owns one output column n (one row of w) and streams that row from
// HBM once per chunk of kRows token rows: decoding is bound by weight bytes,
// and this reads each weight once for up to kRows rows. Lane l accumulates
// the elements k ≡ l (mod 32) (or, on the vector path, the 8-element groups
// k/8 ≡ l (mod 32)) in increasing k, then the warp combines the 32 partial
// sums by a fixed butterfly. That order depends only on K, never on T or on
// the row's place in the batch, so a token's logits are the same whether it
// is decoded alone or verified among γ+1 (greedy speculative output equals
// greedy plain output exactly), which cuBLAS does not promise: it picks
// different kernels, and so different roundings, for different T.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/weight_groups.cuh"

namespace tandem::cuda {
namespace {

constexpr int kRows = 16;          // token rows per pass over w
constexpr int kWarpsPerBlock = 8;  // output columns per block

template <typename W, bool kVector>
__global__ void skinny_kernel(const float* x, const W* w, int T, int K, int N, float* y) {
  const int n = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
  if (n >= N) return;
  const int lane = threadIdx.x % kWarp;
  const W* w_row = w + static_cast<size_t>(n) * K;
  for (int t0 = 0; t0 < T; t0 += kRows) {
    const int rows = T - t0 < kRows ? T - t0 : kRows;
    const float* x_rows = x + static_cast<size_t>(t0) * K;
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
    if (kVector) {
      for (int k = lane * 8; k < K; k += kWarp * 8) {
        float wk[8];
        load8(w_row + k, wk);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (r < rows) {
            float xk[8];
            load8(x_rows + static_cast<size_t>(r) * K + k, xk);
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[r] += xk[i] * wk[i];
          }
        }
      }
    } else {
      for (int k = lane; k < K; k += kWarp) {
        const float wk = load_as_float(w_row + k);
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          if (r < rows) acc[r] += x_rows[static_cast<size_t>(r) * K + k] * wk;
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float total = warp_sum(acc[r]);
      if (r < rows && lane == 0) y[static_cast<size_t>(t0 + r) * N + n] = total;
    }
  }
}

template <typename W>
void launch(const float* x, const void* w, int T, int K, int N, float* y, cudaStream_t stream) {
  const int blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int threads = kWarpsPerBlock * kWarp;
  // 16-byte loads need K a multiple of 8 and aligned rows; the choice depends
  // on the shapes and the buffers only, never on T.
  const bool vector = K % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const W* weights = static_cast<const W*>(w);
  if (vector) {
    skinny_kernel<W, true><<<blocks, threads, 0, stream>>>(x, weights, T, K, N, y);
  } else {
    skinny_kernel<W, false><<<blocks, threads, 0, stream>>>(x, weights, T, K, N, y);
  }
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void skinny_matmul(const float* x, WeightView w, int T, int K, int N, float* y,
                   cudaStream_t stream) {
  if (T == 0 || N == 0) return;
  switch (w.dtype) {
    case Dtype::f32: return launch<float>(x, w.data, T, K, N, y, stream);
    case Dtype::bf16: return launch<__nv_bfloat16>(x, w.data, T, K, N, y, stream);
    case Dtype::f16: return launch<__half>(x, w.data, T, K, N, y, stream);
  }
}

}  // namespace tandem::cuda
