// Paged causal attention over a ragged batch on the GPU: the twin of
// kernels/cpu/attention.cpp. Device pointers throughout; queued on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::cuda {

// The ragged batch's slices (kernels/backend.h SequenceSlice) as device
// arrays. Slice b owns token rows token_offset[b] .. + token_count[b]; new
// token j of it sits at absolute position context_length[b] -
// token_count[b] + j and sees positions 0..itself. Its block table is
// block_tables[block_table_start[b] ..], one physical block per logical one.
struct AttentionBatch {
  const int32_t* token_slice = nullptr;        // (T) slice of each token row
  const int32_t* token_offset = nullptr;       // (B)
  const int32_t* token_count = nullptr;        // (B)
  const int32_t* context_length = nullptr;     // (B)
  const int32_t* block_table_start = nullptr;  // (B)
  const int32_t* block_tables = nullptr;       // (Σ blocks)
  int sequences = 0;                           // B
  int tokens = 0;                              // T
};

// out (T, H*D) = softmax(q kᵀ * scale) v per token and query head, GQA (query
// head h reads KV head h / (H/K)), over the paged cache k_cache, v_cache
// (num_blocks, block_size, K, D). Scores, softmax and sums in f32.
// Needs D <= 256 and H % K == 0 (Error(internal) otherwise); T == 0 launches
// nothing. Design notes at the top of attention.cu.
void attention(const float* q, const AttentionBatch& batch, int H, int K, int D,
               const float* k_cache, const float* v_cache, int block_size, float scale,
               float* out, cudaStream_t stream);

}  // namespace tandem::cuda
