#include "workers/kv_block_pool.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/error.h"

namespace tandem {
namespace {

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t block_hash(uint64_t parent, uint64_t salt, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ mix(salt + 0x5A17ull));
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h == 0 ? 1 : h;  // 0 is "no parent"
}

uint64_t cache_salt_hash(std::span<const char> salt) {
  if (salt.empty()) return 0;
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a, then mixed
  for (char c : salt) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  const uint64_t out = mix(h ^ salt.size());
  return out == 0 ? 1 : out;
}

KvBlockPool::KvBlockPool(int num_blocks, int block_size)
    : block_size_(block_size),
      max_evictable_(std::numeric_limits<int>::max()),
      blocks_(static_cast<size_t>(num_blocks)) {
  // Hand out low block numbers first: deterministic, and easy to read in tests.
  for (int b = num_blocks - 1; b >= 0; --b) free_list_.push_back(b);
}

int32_t KvBlockPool::take() {
  int32_t b;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
  } else {
    require(!lru_.empty(), ErrorKind::internal, "KV block pool: no block to take");
    b = lru_.front();
    lru_.pop_front();
    forget(b);
  }
  blocks_[static_cast<size_t>(b)].refs = 1;
  return b;
}

void KvBlockPool::ref(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  require(b.refs > 0 || b.cached, ErrorKind::internal,
          "KV block " + std::to_string(block) + " is free; it cannot gain an owner");
  if (b.refs == 0) lru_.erase(b.lru);
  ++b.refs;
}

void KvBlockPool::unref(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  require(b.refs > 0, ErrorKind::internal,
          "KV block " + std::to_string(block) + " released more often than taken");
  if (--b.refs > 0) return;
  if (b.cached) {
    b.lru = lru_.insert(lru_.end(), block);
    trim();
  } else {
    free_list_.push_back(block);
  }
}

int32_t KvBlockPool::find(uint64_t hash, uint64_t salt, Parent parent,
                          std::span<const int32_t> tokens) const {
  auto [first, last] = index_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const Block& b = blocks_[static_cast<size_t>(it->second)];
    if (b.salt == salt && b.parent.block == parent.block &&
        b.parent.generation == parent.generation &&
        std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end()))
      return it->second;
  }
  return -1;
}

int32_t KvBlockPool::cache(int32_t block, uint64_t hash, uint64_t salt, Parent parent,
                           std::span<const int32_t> tokens) {
  Block& b = blocks_[static_cast<size_t>(block)];
  require(b.refs > 0 && static_cast<int>(tokens.size()) == block_size_, ErrorKind::internal,
          "KV block " + std::to_string(block) + " cached while free or not full");
  if (b.cached) {
    if (b.hash == hash && b.salt == salt && b.parent.block == parent.block &&
        b.parent.generation == parent.generation &&
        std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end()))
      return block;
    // Recorded under a parent since evicted (its owner published it after a
    // stand-in that is gone): unreachable there, so record it anew.
    forget(block);
  }
  if (const int32_t held = find(hash, salt, parent, tokens); held >= 0) return held;
  b.cached = true;
  b.hash = hash;
  b.salt = salt;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  index_.emplace(hash, block);
  return block;
}

void KvBlockPool::uncache(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  require(b.refs == 1, ErrorKind::internal,
          "KV block " + std::to_string(block) + " is shared; its content cannot change");
  if (b.cached) forget(block);
}

void KvBlockPool::forget(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  auto [first, last] = index_.equal_range(b.hash);
  for (auto it = first; it != last; ++it) {
    if (it->second != block) continue;
    index_.erase(it);
    break;
  }
  b.cached = false;
  b.tokens.clear();
  ++b.generation;  // a child cached under the old content no longer matches
}

void KvBlockPool::limit_evictable(int max_evictable) {
  require(max_evictable >= 0, ErrorKind::invalid_argument,
          "the prefix cache's block limit must be >= 0, got " + std::to_string(max_evictable));
  max_evictable_ = max_evictable;
  trim();
}

void KvBlockPool::trim() {
  while (static_cast<int>(lru_.size()) > max_evictable_) {
    const int32_t b = lru_.front();
    lru_.pop_front();
    forget(b);
    free_list_.push_back(b);
  }
}

}  // namespace tandem
