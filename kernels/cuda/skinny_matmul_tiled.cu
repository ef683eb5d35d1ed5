// skinny_matmul_tiled: the same y = x · wᵀ as skinny_matmul's vector path,
// every element summed in the same order (so bit for bit the same result,
// batch-invariant alike), laid out to keep more of w's bytes in flight and
// to read x fewer times:
// - a warp computes kCols output columns at once, so every x value it
//   loads serves kCols columns (skinny_matmul: one column per warp, and x
//   read once per column);
// - the block's warps share x, staged chunk by chunk (kChunk elements of
//   up to kRowsMax rows) in shared memory, so x leaves L2 once per block;
// - a lane issues all its w loads of a chunk (kCols × kGroupsPerLane
//   16-byte loads) before it sums any of them: decoding is bound by the
//   weight bytes in flight, and skinny_matmul has one load per lane in
//   flight at a time.
// The order, as in skinny_matmul: lane l sums the 8-element groups
// g ≡ l (mod 32) of k in increasing g, each group's 8 products in order,
// then the warp's 32 partial sums meet in warp_sum's fixed butterfly. A
// chunk holds kChunk / 8 = 64 consecutive groups, lane l's being l and
// l + 32, and chunks go in increasing k, so lane l still meets its groups
// in increasing g. Needs K % 8 == 0 and 16-byte aligned x and w
// (skinny_matmul_tiled_fits, the vector path's condition). The backend
// also asks skinny_matmul_tiled_pays: where it is faster than skinny_matmul.
// The backend's default since its first GPU run (an H200): the twins found
// it equal to skinny_matmul bit for bit and to the CPU within tolerance, and
// decoding the 8B shape at batch 1 ran 1.98x as fast. `tandem-bench forward
// --backend cuda` times both side by side; --untiled-skinny-matmul (or
// Backend::set_tiled_skinny_matmul(false)) runs skinny_matmul instead.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/weight_groups.cuh"

namespace tandem::cuda {
namespace {

constexpr int kCols = 4;                            // output columns per warp
constexpr int kMaxWarpsPerBlock = 8;                // so up to 32 columns per block
constexpr int kGroupsPerLane = 2;                   // 8-element groups per lane per chunk
constexpr int kChunk = kWarp * 8 * kGroupsPerLane;  // 512 elements of k per chunk
constexpr int kMinBlocks = kTiledMinColumns / kCols;  // 256: about two per SM on an H100 or H200

template <typename W, int kRowsMax>
__global__ void __launch_bounds__(kMaxWarpsPerBlock* kWarp)
    skinny_tiled_kernel(const float* __restrict__ x, const W* __restrict__ w, int T, int K, int N,
                        float* __restrict__ y) {
  __shared__ __align__(16) float x_tile[kRowsMax][kChunk];
  const int lane = threadIdx.x % kWarp;
  const int n0 = (blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp) * kCols;
  // Every warp takes part in staging and in the barriers, even one whose
  // columns are all past N.
  for (int t0 = 0; t0 < T; t0 += kRowsMax) {
    const int rows = T - t0 < kRowsMax ? T - t0 : kRowsMax;
    float acc[kRowsMax][kCols];
#pragma unroll
    for (int r = 0; r < kRowsMax; ++r)
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[r][c] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kChunk) {
      const int width = K - k0 < kChunk ? K - k0 : kChunk;  // a multiple of 8
      // w first: its loads are in flight while x is staged.
      float wk[kGroupsPerLane][kCols][8];
#pragma unroll
      for (int j = 0; j < kGroupsPerLane; ++j) {
        const int k = (lane + j * kWarp) * 8;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          if (k < width && n0 + c < N) {
            load8(w + static_cast<size_t>(n0 + c) * K + k0 + k, wk[j][c]);
          } else {
#pragma unroll
            for (int i = 0; i < 8; ++i) wk[j][c][i] = 0.0f;
          }
        }
      }
      __syncthreads();  // every warp is done with the last chunk's x
      const int quads = width / 4;
      for (int i = threadIdx.x; i < rows * quads; i += blockDim.x) {
        const int r = i / quads, q = i % quads;
        reinterpret_cast<float4*>(x_tile[r])[q] =
            reinterpret_cast<const float4*>(x + static_cast<size_t>(t0 + r) * K + k0)[q];
      }
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kGroupsPerLane; ++j) {
        const int k = (lane + j * kWarp) * 8;
        if (k >= width) break;  // the same for every later j
#pragma unroll
        for (int r = 0; r < kRowsMax; ++r) {
          if (r < rows) {
            float xk[8];
            load8(&x_tile[r][k], xk);
#pragma unroll
            for (int c = 0; c < kCols; ++c)
#pragma unroll
              for (int i = 0; i < 8; ++i) acc[r][c] += xk[i] * wk[j][c][i];
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsMax; ++r) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float total = warp_sum(acc[r][c]);
        if (r < rows && lane == 0 && n0 + c < N)
          y[static_cast<size_t>(t0 + r) * N + n0 + c] = total;
      }
    }
  }
}

template <typename W>
void launch(const float* x, const void* w, int T, int K, int N, float* y, cudaStream_t stream) {
  // Fewer warps per block where N is small (the k and v projections, a
  // small draft), so that the grid still covers every SM: at T = 1 the
  // bytes in flight, not x's reuse, set the speed. The sums do not depend
  // on it.
  int warps = kMaxWarpsPerBlock;
  while (warps > 1 && (N + warps * kCols - 1) / (warps * kCols) < kMinBlocks) warps /= 2;
  const int blocks = (N + warps * kCols - 1) / (warps * kCols);
  const int threads = warps * kWarp;
  const W* weights = static_cast<const W*>(w);
  // Rows per pass over w: as few as the step has, so that a decode step
  // (T = 1) keeps few registers and a small tile; the sums do not depend on it.
  if (T == 1) {
    skinny_tiled_kernel<W, 1><<<blocks, threads, 0, stream>>>(x, weights, T, K, N, y);
  } else if (T <= 4) {
    skinny_tiled_kernel<W, 4><<<blocks, threads, 0, stream>>>(x, weights, T, K, N, y);
  } else if (T <= 8) {
    // A verification step of γ = 4 to 7 at batch 1: the 16-row tile's 196
    // registers and 32 KiB would leave half as many warps on each SM.
    skinny_tiled_kernel<W, 8><<<blocks, threads, 0, stream>>>(x, weights, T, K, N, y);
  } else {
    skinny_tiled_kernel<W, 16><<<blocks, threads, 0, stream>>>(x, weights, T, K, N, y);
  }
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void skinny_matmul_tiled(const float* x, WeightView w, int T, int K, int N, float* y,
                         cudaStream_t stream) {
  if (T == 0 || N == 0) return;
  switch (w.dtype) {
    case Dtype::f32: return launch<float>(x, w.data, T, K, N, y, stream);
    case Dtype::bf16: return launch<__nv_bfloat16>(x, w.data, T, K, N, y, stream);
    case Dtype::f16: return launch<__half>(x, w.data, T, K, N, y, stream);
  }
}

}  // namespace tandem::cuda
