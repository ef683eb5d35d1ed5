// Paged causal attention on the GPU: the twin of kernels/cpu/attention.cpp.
//
// Parallelization: one thread block of 128 threads per (token row, KV head,
// chunk of up to 8 query heads of that KV head's GQA group). Decode and
// verification are bound by reading the KV cache, so a block serves a whole
// group: each K/V element is read from global memory once per group rather
// than once per query head. Rows stay independent because each has its own
// causal end (last visible position).
//
// A block walks the row's visible positions in tiles of keys staged through
// shared memory (4096 floats each for K and V, whatever the context length)
// and folds every tile into an online softmax: per head a running max m, a
// running sum l = Σ exp(s - m) and an accumulator Σ exp(s - m) v, rescaled by
// exp(m_old - m_new) whenever the max grows. Any context length thus runs in
// fixed shared memory, and no exp ever sees a positive argument. Per tile:
//   1. all threads copy the tile's K and V rows (float4 loads where aligned);
//   2. warps take (head, key) pairs, lanes split D, a shuffle sums the dot;
//   3. one warp per head turns scores into weights and updates (m, l);
//   4. each thread owns fixed (head, d) output elements and adds weights · V.
// Everything is f32, as in the CPU reference.
//
// Deliberately not done (performance only, not correctness): a long prefill
// re-reads its prefix once per row (from L2) where a query-tiled
// FlashAttention kernel would share it, and a small decode batch uses few
// SMs where a split-KV pass would spread one row's keys over several blocks.
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"

namespace tandem::cuda {
namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kHeadsPerBlock = 8;  // query heads of one GQA group in a block
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kHeadsPerWarp = kHeadsPerBlock / kWarps;  // softmax step 3
constexpr int kTileFloats = 4096;                       // one K or V tile: 16 KiB
constexpr int kMaxTileKeys = 64;                        // step 3: two keys per lane
// Step 4: the (head, d) elements a thread owns, at most 8 * 256 / 128.
constexpr int kAccPerThread = kHeadsPerBlock * kMaxHeadDim / kThreads;

static_assert(kHeadsPerBlock % kWarps == 0, "each warp owns the same number of heads");
static_assert(kMaxTileKeys <= 64, "the softmax step gives each lane at most two keys");
static_assert(kTileFloats / kMaxHeadDim >= 1, "a tile holds at least one key of any D");

// The (D) row of kv_head at an absolute position, found through the block
// table. 64-bit offsets: a layer's cache may exceed 2^31 floats.
__device__ const float* cache_row(const float* cache, const int32_t* table, int position,
                                  int block_size, int K, int kv_head, int D) {
  const int64_t slot =
      static_cast<int64_t>(table[position / block_size]) * block_size + position % block_size;
  return cache + (slot * K + kv_head) * D;
}

// tile (count, D) = rows of kv_head at positions start .. start + count - 1.
// Consecutive threads read consecutive elements of a row: coalesced.
__device__ void load_tile(const float* __restrict__ cache, const int32_t* __restrict__ table,
                          int start, int count, int block_size, int K, int kv_head, int D,
                          bool vectorized, float* tile) {
  if (vectorized) {  // D % 4 == 0 and 16-byte aligned rows (checked by the launcher)
    const int row_vectors = D / 4;
    for (int i = threadIdx.x; i < count * row_vectors; i += kThreads) {
      const float* row =
          cache_row(cache, table, start + i / row_vectors, block_size, K, kv_head, D);
      reinterpret_cast<float4*>(tile)[i] = reinterpret_cast<const float4*>(row)[i % row_vectors];
    }
  } else {
    for (int i = threadIdx.x; i < count * D; i += kThreads)
      tile[i] = cache_row(cache, table, start + i / D, block_size, K, kv_head, D)[i % D];
  }
}

// grid (T, K * chunks of the group), block kThreads.
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const float* __restrict__ q, AttentionBatch batch, int H, int K, int D,
                     const float* __restrict__ k_cache, const float* __restrict__ v_cache,
                     int block_size, float scale, bool vectorized, float* __restrict__ out) {
  __shared__ float q_s[kHeadsPerBlock * kMaxHeadDim];  // (heads, D)
  __shared__ __align__(16) float k_s[kTileFloats];     // (count, D)
  __shared__ __align__(16) float v_s[kTileFloats];     // (count, D)
  __shared__ float p_s[kHeadsPerBlock * kMaxTileKeys];  // (heads, tile keys): scores, then weights
  __shared__ float alpha_s[kHeadsPerBlock];  // this tile's rescale of each head's accumulator
  __shared__ float l_s[kHeadsPerBlock];      // final denominators

  // Which query heads: group `chunk` of KV head kv_head's group [kv_head * group, + group).
  const int group = H / K;
  const int chunks = (group + kHeadsPerBlock - 1) / kHeadsPerBlock;
  const int kv_head = static_cast<int>(blockIdx.y) / chunks;
  const int first_head = kv_head * group + (static_cast<int>(blockIdx.y) % chunks) * kHeadsPerBlock;
  const int heads = min(kHeadsPerBlock, (kv_head + 1) * group - first_head);

  // Which positions: 0 .. last, the row's own absolute position.
  const int row = static_cast<int>(blockIdx.x);
  const int slice = batch.token_slice[row];
  const int last = batch.context_length[slice] - batch.token_count[slice] +
                   (row - batch.token_offset[slice]);
  const int32_t* table = batch.block_tables + batch.block_table_start[slice];
  const int tile_keys = min(kMaxTileKeys, kTileFloats / D);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;

  // This block's query heads are adjacent in the row: one (heads * D) span.
  const size_t row_offset = (static_cast<size_t>(row) * H + first_head) * D;
  for (int i = threadIdx.x; i < heads * D; i += kThreads) q_s[i] = q[row_offset + i];

  // Softmax state of the heads warp + k * kWarps, identical in every lane.
  float m[kHeadsPerWarp], l[kHeadsPerWarp];
  for (int k = 0; k < kHeadsPerWarp; ++k) {
    m[k] = -INFINITY;
    l[k] = 0.0f;
  }
  float acc[kAccPerThread];  // element threadIdx.x + r * kThreads of (heads, D)
  for (int r = 0; r < kAccPerThread; ++r) acc[r] = 0.0f;

  // Every tile holds at least one visible key, so m is finite after the first.
  for (int start = 0; start <= last; start += tile_keys) {
    const int count = min(tile_keys, last + 1 - start);

    // 1. K and V rows of the tile. (The barrier also publishes q_s the first time.)
    load_tile(k_cache, table, start, count, block_size, K, kv_head, D, vectorized, k_s);
    load_tile(v_cache, table, start, count, block_size, K, kv_head, D, vectorized, v_s);
    __syncthreads();

    // 2. Scores: one warp per (head, key) dot product, lanes split D.
    for (int pair = warp; pair < heads * count; pair += kWarps) {
      const int g = pair / count, j = pair % count;
      float dot = 0.0f;
      for (int d = lane; d < D; d += 32) dot += q_s[g * D + d] * k_s[j * D + d];
      dot = warp_sum(dot);
      if (lane == 0) p_s[g * kMaxTileKeys + j] = dot * scale;
    }
    __syncthreads();

    // 3. Online softmax: one warp per head, each lane two keys of the tile.
#pragma unroll
    for (int k = 0; k < kHeadsPerWarp; ++k) {
      const int g = warp + k * kWarps;
      if (g < heads) {  // warp-uniform
        float* p = p_s + g * kMaxTileKeys;
        const bool has0 = lane < count, has1 = lane + 32 < count;
        const float s0 = has0 ? p[lane] : -INFINITY;
        const float s1 = has1 ? p[lane + 32] : -INFINITY;
        const float m_new = fmaxf(m[k], warp_max(fmaxf(s0, s1)));
        const float e0 = has0 ? expf(s0 - m_new) : 0.0f;
        const float e1 = has1 ? expf(s1 - m_new) : 0.0f;
        if (has0) p[lane] = e0;
        if (has1) p[lane + 32] = e1;
        const float alpha = expf(m[k] - m_new);  // 0 on the first tile (m = -inf)
        l[k] = l[k] * alpha + warp_sum(e0 + e1);
        m[k] = m_new;
        if (lane == 0) alpha_s[g] = alpha;
      }
    }
    __syncthreads();

    // 4. acc = acc * alpha + weights · V for the elements this thread owns.
#pragma unroll
    for (int r = 0; r < kAccPerThread; ++r) {
      const int e = static_cast<int>(threadIdx.x) + r * kThreads;
      if (e < heads * D) {
        const int g = e / D, d = e % D;
        const float* p = p_s + g * kMaxTileKeys;
        float sum = 0.0f;
        for (int j = 0; j < count; ++j) sum += p[j] * v_s[j * D + d];
        acc[r] = acc[r] * alpha_s[g] + sum;
      }
    }
    __syncthreads();  // the next tile overwrites k_s, v_s, p_s, alpha_s
  }

  if (lane == 0) {
    for (int k = 0; k < kHeadsPerWarp; ++k)
      if (warp + k * kWarps < heads) l_s[warp + k * kWarps] = l[k];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kAccPerThread; ++r) {
    const int e = static_cast<int>(threadIdx.x) + r * kThreads;
    if (e < heads * D) out[row_offset + e] = acc[r] / l_s[e / D];
  }
}

}  // namespace

void attention(const float* q, const AttentionBatch& batch, int H, int K, int D,
               const float* k_cache, const float* v_cache, int block_size, float scale,
               float* out, cudaStream_t stream) {
  if (batch.tokens == 0) return;  // nothing to do, and a grid of 0 blocks is a launch error
  if (D < 1 || D > kMaxHeadDim || K < 1 || H < K || H % K != 0 || block_size < 1) {
    // The model loader rejects such shapes; reaching here is a bug in the caller.
    char shape[160];
    std::snprintf(shape, sizeof(shape),
                  "unsupported shape H=%d K=%d D=%d block_size=%d (needs D <= %d, H %% K == 0)",
                  H, K, D, block_size, kMaxHeadDim);
    fail("CUDA attention", shape, "tandem::cuda::attention", __FILE__, __LINE__);
  }
  const int group = H / K;
  const int chunks = (group + kHeadsPerBlock - 1) / kHeadsPerBlock;
  // float4 loads need every cache row on a 16-byte boundary: D % 4 == 0 and
  // 16-byte aligned bases (cudaMalloc gives 256; a sub-buffer might not).
  const bool vectorized = D % 4 == 0 && reinterpret_cast<uintptr_t>(k_cache) % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(v_cache) % 16 == 0;
  const dim3 grid(static_cast<unsigned>(batch.tokens), static_cast<unsigned>(K * chunks));
  attention_kernel<<<grid, kThreads, 0, stream>>>(q, batch, H, K, D, k_cache, v_cache,
                                                  block_size, scale, vectorized, out);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
