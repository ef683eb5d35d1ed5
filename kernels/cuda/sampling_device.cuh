// Device helpers the sampling kernels share (standardize.cu, argmax.cu,
// sample.cu, verify.cu): the block size, the value order of
// kernels/cpu/sampling.cpp and block-wide reductions. Internal to
// kernels/cuda/; nvcc only.
//
// Every sampling kernel runs one thread block per row (or per verification
// block): rows are few (γ+1 per session) and long (V up to ~256k), and a
// block can keep a row's bookkeeping in shared memory and synchronize cheaply.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

namespace tandem::cuda::sampling {

inline constexpr int kThreads = 512;  // threads per block in every sampling kernel

using BlockReduceF64 = cub::BlockReduce<double, kThreads>;
using BlockReduceF32 = cub::BlockReduce<float, kThreads>;
using BlockReduceI32 = cub::BlockReduce<int, kThreads>;
using BlockReduceU64 = cub::BlockReduce<unsigned long long, kThreads>;

// ---- value order ---------------------------------------------------------------
// kernels/cpu/sampling.cpp ranks values through the same monotone map:
// float -> uint32 with a < b iff bits(a) < bits(b), NaN ranked as -inf and -0
// as +0, so equal ranks are exactly the float ties.

__device__ inline uint32_t ordered_bits(float x) {
  if (isnan(x)) x = -INFINITY;
  if (x == 0.0f) x = 0.0f;
  const uint32_t b = __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ inline float from_ordered_bits(uint32_t b) {
  return __uint_as_float((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}

// (value, index) in one integer whose maximum is the largest value with ties
// to the lowest index: the low word is ~index.
__device__ inline unsigned long long argmax_key(float x, int index) {
  return (static_cast<unsigned long long>(ordered_bits(x)) << 32) | ~static_cast<uint32_t>(index);
}
__device__ inline int argmax_key_index(unsigned long long key) {
  return static_cast<int>(~static_cast<uint32_t>(key));
}

// ---- block-wide results ----------------------------------------------------------

// CUB's reductions leave their result in thread 0 only: this hands it to every
// thread. The second barrier lets `slot` be reused at once; the first also
// makes every thread's earlier global writes visible to the whole block.
template <typename T>
__device__ inline T share(T value, T& slot) {
  if (threadIdx.x == 0) slot = value;
  __syncthreads();
  const T shared = slot;
  __syncthreads();
  return shared;
}

// Shared memory for one row's reductions; reused, one reduction at a time.
struct ReduceStorage {
  union {
    BlockReduceF64::TempStorage f64;
    BlockReduceF32::TempStorage f32;
    BlockReduceI32::TempStorage i32;
    BlockReduceU64::TempStorage u64;
  } temp;
  double f64_slot;
  float f32_slot;
  int i32_slot;
  unsigned long long u64_slot;
};

// Deterministic: CUB reduces in a fixed order for a fixed block size, so a
// row gives the same bits on every run (the replay contract depends on it).
__device__ inline double block_sum(double value, ReduceStorage& s) {
  return share(BlockReduceF64(s.temp.f64).Sum(value), s.f64_slot);
}
__device__ inline float block_max(float value, ReduceStorage& s) {
  return share(BlockReduceF32(s.temp.f32).Reduce(value, ::cuda::maximum<>{}), s.f32_slot);
}
__device__ inline int block_max(int value, ReduceStorage& s) {
  return share(BlockReduceI32(s.temp.i32).Reduce(value, ::cuda::maximum<>{}), s.i32_slot);
}
__device__ inline int block_min(int value, ReduceStorage& s) {
  return share(BlockReduceI32(s.temp.i32).Reduce(value, ::cuda::minimum<>{}), s.i32_slot);
}
__device__ inline unsigned long long block_max(unsigned long long value, ReduceStorage& s) {
  return share(BlockReduceU64(s.temp.u64).Reduce(value, ::cuda::maximum<>{}), s.u64_slot);
}

// argmax of row x (V), cpu::argmax's definition: ties to the lowest index,
// NaN ranked as -inf, so a row with nothing above -inf gives 0. Every thread
// has read its share of the row before any thread returns, so the caller may
// overwrite the row afterwards (in-place standardization).
__device__ inline int block_argmax(const float* x, int V, ReduceStorage& s) {
  unsigned long long best = 0;  // below every real key
  for (int i = threadIdx.x; i < V; i += kThreads) {
    const unsigned long long key = argmax_key(x[i], i);
    best = key > best ? key : best;
  }
  return argmax_key_index(block_max(best, s));
}

}  // namespace tandem::cuda::sampling
