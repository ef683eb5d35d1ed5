// PagedKvCache: every layer's keys and values in fixed-size blocks, with a
// block table per sequence (the vLLM layout).
//
// A sequence's length is the number of positions whose K/V are cached.
// Rejected draft tokens are removed by truncate(): the length shrinks and
// whole blocks past it return to the pool; nothing is copied.
//
// Prefix caching (enable_prefix_caching): a sequence's full blocks of
// committed tokens are published (publish) under their content (the
// tokens, after exactly their prefix, under a salt: kv_block_pool.h), and
// a new sequence starts after the longest published prefix of its tokens
// (attach_prefix), sharing those blocks. Shared blocks are never written:
// a sequence only writes positions from its length on, its length never
// goes below a shared block's end (truncate stops at the block boundary
// instead, and the caller feeds those tokens again), and a published block
// its own sequence truncates into is unpublished first. Released blocks
// keep their content, evictable least recently released first.
// A tensor-parallel rank's cache holds only its own KV heads
// (workers/tensor_parallel.h), so its memory scales with 1/tp.
// Not thread-safe: one engine thread owns a cache.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernels/backend.h"
#include "workers/kv_block_pool.h"
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
  void release(SequenceId seq);  // gives back all its blocks

  // Makes room for `length` positions. Returns false, changing nothing, when
  // the pool cannot cover it (the scheduler then preempts someone).
  bool reserve(SequenceId seq, int length);
  // Keeps positions [0, length) and gives back blocks past them.
  // length <= current. With prefix caching the sequence may keep fewer: a
  // block it shares is kept whole or not at all, so the length stops at
  // that block's start (read length() after).
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
  // Blocks a reservation may take: free ones and evictable cached ones.
  int free_blocks() const { return pool_.available(); }
  int used_blocks() const { return pool_.referenced(); }  // held by sequences
  bool contains(SequenceId seq) const { return sequences_.count(seq) > 0; }
  PagedKvView layer(int index);

  // --- Prefix caching -------------------------------------------------
  // Off until enabled. max_evictable: cached blocks kept when no sequence
  // holds them (beyond it the least recently released are forgotten).
  void enable_prefix_caching(int max_evictable);
  bool prefix_caching() const { return prefix_caching_; }
  struct PrefixMatch {
    int tokens = 0;     // positions covered (whole blocks)
    int blocks = 0;
    int evictable = 0;  // of those, blocks nobody holds now (attaching takes them from the pool)
  };
  // The longest published prefix of `tokens` under `salt`, at most
  // max_tokens long. Changes nothing.
  PrefixMatch match_prefix(std::span<const int32_t> tokens, uint64_t salt, int max_tokens) const;
  // Starts an empty sequence on that prefix: it shares the blocks and its
  // length is the match's. Counts the query (tokens.size()) and the hit.
  // Returns the positions attached.
  int attach_prefix(SequenceId seq, std::span<const int32_t> tokens, uint64_t salt,
                    int max_tokens);
  // Publishes the sequence's full blocks within [0, min(length, tokens.size()))
  // as holding `tokens` (its committed tokens from position 0) under `salt`.
  // Idempotent; blocks it attached or published before are skipped. A
  // sequence keeps the salt it was first attached or published with.
  void publish(SequenceId seq, std::span<const int32_t> tokens, uint64_t salt);
  int cached_blocks() const { return pool_.cached(); }
  int evictable_blocks() const { return pool_.evictable(); }
  // Tokens looked up by attach_prefix, and of those found cached.
  const PrefixCacheCounters& prefix_counters() const { return counters_; }
  const KvBlockPool& pool() const { return pool_; }

  // --- A mirror driven by another cache ------------------------------
  // For a tensor-parallel rank whose blocks the coordinator's cache chose:
  // the sequence's table keeps its first `keep` blocks and continues with
  // `appended` (block numbers of the driving cache, which has the same
  // num_blocks). The pool is not consulted: a cache is either driven or
  // allocating, never both.
  void adopt_blocks(SequenceId seq, int keep, std::span<const int32_t> appended);

 private:
  struct Sequence {
    int length = 0;
    std::vector<int32_t> blocks;
    // Prefix caching: blocks [0, chain.size()) are published (or attached);
    // chain[i] is the pool block standing for block i's content (its own,
    // or the one that held that content first).
    std::vector<int32_t> chain;
    std::vector<uint32_t> chain_generation;  // chain[i]'s generation when it stood in
    std::vector<uint64_t> chain_hash;        // block i's chain hash
    uint64_t salt = 0;
    bool salted = false;  // salt is set: by the first attach_prefix or publish
  };
  const Sequence& get(SequenceId seq) const;
  Sequence& get(SequenceId seq);
  // Drops the chain from the first stand-in whose content was evicted.
  void check_chain(Sequence& s) const;
  // The cached blocks holding the longest prefix of `tokens` (at most
  // max_tokens) under `salt`, from the first, with their chain hashes.
  struct FoundBlock {
    int32_t block;
    uint64_t hash;
  };
  std::vector<FoundBlock> find_prefix(std::span<const int32_t> tokens, uint64_t salt,
                                      int max_tokens) const;
  void give_back_past(Sequence& s, size_t keep);  // blocks [keep, end) back to the pool

  int num_blocks_;
  int block_size_;
  int kv_heads_;
  int head_dim_;
  std::vector<Buffer> keys_;    // one per layer
  std::vector<Buffer> values_;  // one per layer
  KvBlockPool pool_;
  bool prefix_caching_ = false;
  bool driven_ = false;  // adopt_blocks was used: the pool is not
  PrefixCacheCounters counters_;
  std::unordered_map<SequenceId, Sequence> sequences_;
  SequenceId next_id_ = 1;
};

}  // namespace tandem
