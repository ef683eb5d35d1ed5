// Device helpers the CUDA model ops share: loading a weight element of any
// dtype as f32, and fixed-order reductions.
//
// Reductions here always combine the same values in the same order for a
// given row length, whatever else is in the batch: that keeps every op
// batch-invariant, so a session's numbers do not depend on its neighbours
// and a γ+1-token verification reproduces single-token decoding bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/dtype.h"

namespace tandem::cuda {

inline constexpr int kWarp = 32;

__device__ __forceinline__ float load_as_float(const float* p) { return *p; }
__device__ __forceinline__ float load_as_float(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ float load_as_float(const __half* p) { return __half2float(*p); }

// Sum over the warp by a butterfly: every lane ends with the same total.
template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Max over the warp by a butterfly: every lane ends with the same maximum.
__device__ __forceinline__ float warp_max(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024):
// warps reduce, then warp 0 reduces the warp totals. Every thread gets the
// total. `scratch` holds 32 values in shared memory.
template <typename T>
__device__ T block_sum(T value, T* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  value = warp_sum(value);
  __syncthreads();  // scratch may still be read from a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  // Only warp 0 reads the warp totals: another warp reading scratch[0]
  // while thread 0 overwrites it would be a (harmless, but real) race.
  if (warp == 0) {
    const T total = warp_sum(lane < warps ? scratch[lane] : T(0));
    if (lane == 0) scratch[0] = total;
  }
  __syncthreads();
  return scratch[0];
}

}  // namespace tandem::cuda
