// KvBlockPool: the KV cache's blocks as a resource: which are free, which
// are referenced (and by how many sequences), and which hold a known
// content that a later sequence may reuse (prefix caching).
//
// A block's content is "these block_size tokens, right after exactly this
// prefix, under this salt". It is identified by a chain hash (block_hash:
// the parent block's hash, the salt and the tokens) and checked exactly on
// lookup: the parent block's number and generation, the salt and every
// token must match, so two prefixes never share a block by a hash
// collision. A block's generation grows each time it is given a new
// content, so a child whose parent was evicted can never be found under a
// new parent that happens to reuse the number.
//
// Cached blocks that no sequence references are evictable, least recently
// released first; they count as available, since take() evicts one when the
// free list is empty. max_evictable caps how many are kept (the rest return
// to the free list at once).
// Not thread-safe: the KV cache that owns it is owned by one thread.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace tandem {

// The chain hash of a block holding `tokens` after the block hashed
// `parent` (0 for the first block), under `salt` (0: no salt).
uint64_t block_hash(uint64_t parent, uint64_t salt, std::span<const int32_t> tokens);
// A per-request cache_salt string as the salt blocks are keyed by (0 for "").
uint64_t cache_salt_hash(std::span<const char> salt);

// vLLM's prefix cache counters: tokens looked up, and of those found cached.
struct PrefixCacheCounters {
  uint64_t queries = 0;
  uint64_t hits = 0;
};

class KvBlockPool {
 public:
  KvBlockPool(int num_blocks, int block_size);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks take() can hand out: the free ones and the evictable cached ones.
  int available() const { return static_cast<int>(free_list_.size() + lru_.size()); }
  int evictable() const { return static_cast<int>(lru_.size()); }
  int referenced() const { return num_blocks() - available(); }
  int cached() const { return static_cast<int>(index_.size()); }  // indexed blocks, referenced or not

  // A block for a new owner (refs 1, no content): the most recently freed
  // one, or when none is free the least recently released cached one, whose
  // content is forgotten. Precondition: available() > 0.
  int32_t take();
  // One more owner of a block (a cached block found by find(); it leaves the
  // evictable list).
  void ref(int32_t block);
  // One owner fewer; at none, a cached block becomes evictable (most
  // recently released), any other is free.
  void unref(int32_t block);
  int refs(int32_t block) const { return blocks_[static_cast<size_t>(block)].refs; }

  // What a block's content is checked against besides its tokens.
  struct Parent {
    int32_t block = -1;       // the parent block (-1: the first block of a sequence)
    uint32_t generation = 0;  // its generation when the child was cached
  };
  // The cached block holding `tokens` after `parent` under `salt`, or -1.
  int32_t find(uint64_t hash, uint64_t salt, Parent parent, std::span<const int32_t> tokens) const;
  // Records that `block` (referenced) holds this content. Returns the block
  // that stands for the content: `block` itself, or the block that already
  // held it (then `block` stays an uncached private copy). A block still
  // recorded under another content (a parent since forgotten: unreachable)
  // is recorded anew.
  int32_t cache(int32_t block, uint64_t hash, uint64_t salt, Parent parent,
                std::span<const int32_t> tokens);
  // Forgets a referenced block's content (its owner is about to overwrite it).
  void uncache(int32_t block);
  bool is_cached(int32_t block) const { return blocks_[static_cast<size_t>(block)].cached; }
  uint32_t generation(int32_t block) const {
    return blocks_[static_cast<size_t>(block)].generation;
  }
  uint64_t hash(int32_t block) const { return blocks_[static_cast<size_t>(block)].hash; }
  // A cached block's content, for audits (tests compare its K/V with a
  // fresh prefill of its whole prefix).
  std::span<const int32_t> tokens(int32_t block) const {
    return blocks_[static_cast<size_t>(block)].tokens;
  }
  Parent parent(int32_t block) const { return blocks_[static_cast<size_t>(block)].parent; }

  // At most this many evictable blocks are kept (default: all of them).
  void limit_evictable(int max_evictable);

 private:
  struct Block {
    int refs = 0;
    bool cached = false;
    uint32_t generation = 0;
    uint64_t hash = 0;
    uint64_t salt = 0;
    Parent parent;
    std::vector<int32_t> tokens;
    std::list<int32_t>::iterator lru;  // valid while evictable
  };
  void forget(int32_t block);  // drops a cached block's content from the index
  void trim();                 // evicts down to max_evictable_

  int block_size_;
  int max_evictable_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_list_;  // a stack: the most recently freed block is reused first
  std::list<int32_t> lru_;          // evictable cached blocks, least recently released first
  std::unordered_multimap<uint64_t, int32_t> index_;  // hash → cached blocks
};

}  // namespace tandem
