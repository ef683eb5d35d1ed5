// PagedKvCache: every layer's keys and values in fixed-size blocks, with a
// block table per sequence (the vLLM layout).
//
// A sequence's length is the number of positions whose K/V are cached.
// Rejected draft tokens are removed by truncate(): the length shrinks and
// whole blocks past it return to the free list; nothing is copied.
// A tensor-parallel rank's cache holds only its own KV heads
// (workers/tensor_parallel.h), so its memory scales with 1/tp.
// Not thread-safe: one engine thread owns a cache.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernels/backend.h"
#include "workers/model_config.h"
#include "workers/tensor_parallel.h"

namespace tandem {

using SequenceId = int64_t;

class PagedKvCache {
 public:
  // Storage per layer: k, v (num_blocks, block_size, K, D), K the shard's
  // local KV heads (all of them when unsplit).
  // Storage::none keeps the block accounting only: the coordinator of a job
  // whose target runs on other ranks admits, reserves and truncates on it,
  // and the ranks' own caches replay that (TargetStepRunner); layer() is
  // then an error.
  enum class Storage { allocate, none };
  PagedKvCache(const ModelConfig& config, int num_blocks, int block_size, Backend& backend,
               const TensorShard& shard = {}, Storage storage = Storage::allocate);

  SequenceId create_sequence();
  void release(SequenceId seq);  // frees all its blocks

  // Makes room for `length` positions. Returns false, changing nothing, when
  // the free list cannot cover it (the scheduler then preempts someone).
  bool reserve(SequenceId seq, int length);
  // Keeps positions [0, length) and frees blocks past them. length <= current.
  void truncate(SequenceId seq, int length);
  // Records that positions up to `length` now hold K/V (the forward pass's
  // commit after writing them). length <= reserved capacity.
  void set_length(SequenceId seq, int length);

  int length(SequenceId seq) const;
  int capacity(SequenceId seq) const;  // reserved positions
  std::span<const int32_t> block_table(SequenceId seq) const;
  int32_t slot(SequenceId seq, int position) const;  // block * block_size + offset

  int block_size() const { return block_size_; }
  int kv_heads() const { return kv_heads_; }  // local K
  int num_blocks() const { return num_blocks_; }
  int free_blocks() const { return static_cast<int>(free_list_.size()); }
  int used_blocks() const { return num_blocks_ - free_blocks(); }
  bool contains(SequenceId seq) const { return sequences_.count(seq) > 0; }
  PagedKvView layer(int index);

 private:
  struct Sequence {
    int length = 0;
    std::vector<int32_t> blocks;
  };
  const Sequence& get(SequenceId seq) const;
  Sequence& get(SequenceId seq);

  int num_blocks_;
  int block_size_;
  int kv_heads_;
  int head_dim_;
  std::vector<Buffer> keys_;    // one per layer
  std::vector<Buffer> values_;  // one per layer
  std::vector<int32_t> free_list_;  // a stack: the most recently freed block is reused first
  std::unordered_map<SequenceId, Sequence> sequences_;
  SequenceId next_id_ = 1;
};

}  // namespace tandem
