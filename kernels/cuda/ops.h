// Launchers of the CUDA model ops, one .cu file each (the twins of
// kernels/cpu/ops.h). Every pointer is device memory, every launch is queued
// on `stream` and returns at once. Shapes use the glossary of
// kernels/backend.h. C++17 and raw pointers only: nvcc compiles these files.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace tandem::cuda {

// embedding.cu: out (T, C) = table rows at ids (T); a negative id gives zeros.
// table (rows, C) in f32, bf16 or f16.
void embedding(const int32_t* ids, int T, WeightView table, int C, float* out,
               cudaStream_t stream);

// rmsnorm.cu: out (T, C) = x / sqrt(mean(x^2) + eps) * weight (C); may alias x.
void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out,
             cudaStream_t stream);
// rmsnorm.cu: x (T, C) += y, then out = rmsnorm(x): one kernel, x read once;
// out may alias y.
void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                 float* out, cudaStream_t stream);

// rope.cu: rotate-half rotary embedding of x (T, heads, D) in place, row t at
// positions[t]; inv_freq (D/2).
void rope(float* x, const int32_t* positions, int T, int heads, int D, const float* inv_freq,
          cudaStream_t stream);

// kv_write.cu: k, v (T, width) into the cache rows slots[t] of k_cache,
// v_cache (slots, width); width = K*D.
void kv_write(const float* k, const float* v, const int32_t* slots, int T, int width,
              float* k_cache, float* v_cache, cudaStream_t stream);

// swiglu.cu: out (T, I) = silu(gate) * up, gate_up (T, 2I) = [gate | up].
void swiglu(const float* gate_up, int T, int I, float* out, cudaStream_t stream);

// elementwise.cu: x (n) += y (n).
void add(float* x, const float* y, size_t n, cudaStream_t stream);
// elementwise.cu: y (T, N) += bias (N) on every row.
void add_bias(float* y, const float* bias, int T, int N, cudaStream_t stream);
// elementwise.cu: out (n) = x (n) rounded to nearest even in dtype (bf16 or
// f16); the GEMM input cast.
void to_narrow(const float* x, size_t n, Dtype dtype, void* out, cudaStream_t stream);

// moe.cu: out (T, C) = sum over k of weights[t, k] * expert_rows at row
// row_of_choice[t, k] (both (T, top_k)), summed in k order.
void moe_combine(const float* expert_rows, const int32_t* row_of_choice, const float* weights,
                 int T, int top_k, int C, float* out, cudaStream_t stream);

// skinny_matmul.cu: y (T, N) = x (T, K) · w (N, K)ᵀ with each element
// summed in an order that depends on K only (batch-invariant); reads w once
// per 16 rows, so the backend uses it up to kMaxInvariantRows rows and
// cuBLAS above (unless Backend::set_batch_invariant(true)).
inline constexpr int kMaxInvariantRows = 64;
void skinny_matmul(const float* x, WeightView w, int T, int K, int N, float* y,
                   cudaStream_t stream);
// skinny_matmul_tiled.cu: the same result bit for bit, several columns per
// warp and x shared through shared memory. The backend runs it where it
// fits (K % 8 == 0, x and w 16-byte aligned) and pays, unless
// Backend::set_tiled_skinny_matmul(false) keeps skinny_matmul everywhere.
inline bool skinny_matmul_tiled_fits(const float* x, WeightView w, int K) {
  return K % 8 == 0 && reinterpret_cast<uintptr_t>(w.data) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(x) % 16 == 0;
}
// Where it pays, as measured on an H200: an 8B model's matmuls, 1,024
// columns wide and up, ran 1.5-2x as fast on it at 1 to 64 rows. Narrower
// ones get fewer than 256 one-warp blocks from its four columns a warp, a
// quarter of skinny_matmul's warps: the tiny pair (32 to 688 wide, but
// its 4,096-token heads) decoded 7% faster with it at one row, but served
// 20-27% fewer tokens/s at concurrency 8 and 16.
inline constexpr int kTiledMinColumns = 1024;
constexpr bool skinny_matmul_tiled_pays(int T, int N) { return T == 1 || N >= kTiledMinColumns; }
void skinny_matmul_tiled(const float* x, WeightView w, int T, int K, int N, float* y,
                         cudaStream_t stream);

}  // namespace tandem::cuda
