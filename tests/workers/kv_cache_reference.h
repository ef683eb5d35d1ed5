// A reference model of PagedKvCache's prefix-caching block accounting,
// written from the contract (kv_cache.h, kv_block_pool.h), for the property
// test (kv_cache_property_test.cpp). It knows nothing of hashes,
// generations or stand-in chains: a cached content is a key (salt, the
// whole token prefix up to the block's end), reachable or not, and each
// block records what each of its positions physically holds (the tokens
// its K/V were computed from, and the writer's salt), so that a hit can be
// checked against what is really there.
//
// The model asserts (gtest) when the cache may not do something: write a
// shared block, take a referenced block, take a cached block while a free
// one exists, or evict out of LRU order.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "workers/kv_cache.h"

namespace tandem::testing {

class KvCacheReference {
 public:
  // A cached content: the salt and every token from position 0 to the end
  // of the block.
  using Key = std::pair<uint64_t, std::vector<int32_t>>;
  struct Slot {  // what one position's K/V were computed from
    bool written = false;
    uint64_t salt = 0;
    std::vector<int32_t> context;  // tokens [0, position]
  };
  struct Block {
    std::set<SequenceId> owners;
    bool indexed = false;  // the pool keeps a content for it (reachable or not)
    std::vector<Slot> slots;
  };
  struct Sequence {
    uint64_t salt = 0;
    std::vector<int32_t> tokens;  // the positions written: its length is tokens.size()
    std::vector<int32_t> blocks;
  };

  // How often the run reached each case (a run that never does proves little).
  struct Coverage {
    int evicted = 0;      // cached content forgotten to make room
    int unpublished = 0;  // a published block truncated into by its only holder
    int stood_in = 0;     // published content some other block already held
    int stale = 0;        // an unreachable content re-recorded at publish
  };
  const Coverage& coverage() const { return coverage_; }

  KvCacheReference(int num_blocks, int block_size, int max_evictable)
      : block_size_(block_size),
        max_evictable_(max_evictable),
        blocks_(static_cast<size_t>(num_blocks)) {
    for (Block& b : blocks_) b.slots.resize(static_cast<size_t>(block_size));
  }

  int block_size() const { return block_size_; }
  const Block& block(int32_t b) const { return blocks_[static_cast<size_t>(b)]; }
  const std::map<Key, int32_t>& keys() const { return keys_; }
  const std::list<int32_t>& lru() const { return lru_; }
  std::map<SequenceId, Sequence>& sequences() { return sequences_; }
  Sequence& seq(SequenceId id) { return sequences_.at(id); }

  int free_count() const {
    return static_cast<int>(std::count_if(blocks_.begin(), blocks_.end(), [](const Block& b) {
      return b.owners.empty() && !b.indexed;
    }));
  }
  int available() const { return free_count() + static_cast<int>(lru_.size()); }
  int owned_count() const {
    return static_cast<int>(std::count_if(blocks_.begin(), blocks_.end(),
                                          [](const Block& b) { return !b.owners.empty(); }));
  }
  int indexed_count() const {
    return static_cast<int>(
        std::count_if(blocks_.begin(), blocks_.end(), [](const Block& b) { return b.indexed; }));
  }

  // The blocks a lookup of `tokens` under `salt` must find: the reachable
  // keys of its whole blocks, from the first, within max_tokens.
  std::vector<int32_t> expected_match(const std::vector<int32_t>& tokens, uint64_t salt,
                                      int max_tokens) const {
    std::vector<int32_t> found;
    const size_t limit = static_cast<size_t>(std::clamp(
        std::min(max_tokens, static_cast<int>(tokens.size())), 0, static_cast<int>(tokens.size())));
    const size_t bs = static_cast<size_t>(block_size_);
    for (size_t end = bs; end <= limit; end += bs) {
      auto it = keys_.find({salt, std::vector<int32_t>(tokens.begin(), tokens.begin() + end)});
      if (it == keys_.end()) break;
      found.push_back(it->second);
    }
    return found;
  }

  // True when block b's positions hold exactly the K/V of `tokens`' block
  // `index` computed under `salt`.
  bool holds(int32_t b, const std::vector<int32_t>& tokens, size_t index, uint64_t salt) const {
    const size_t bs = static_cast<size_t>(block_size_);
    if (tokens.size() < (index + 1) * bs) return false;
    for (size_t o = 0; o < bs; ++o) {
      const Slot& s = block(b).slots[o];
      const size_t p = index * bs + o;
      if (!s.written || s.salt != salt ||
          s.context != std::vector<int32_t>(tokens.begin(), tokens.begin() + p + 1))
        return false;
    }
    return true;
  }

  void create(SequenceId id, uint64_t salt) { sequences_[id] = Sequence{salt, {}, {}}; }

  // A new sequence attached these blocks, holding these tokens.
  void attach(SequenceId id, const std::vector<int32_t>& blocks,
              const std::vector<int32_t>& tokens) {
    Sequence& s = seq(id);
    for (int32_t b : blocks) add_owner(id, b);
    s.blocks = blocks;
    s.tokens = tokens;
  }

  // The cache took block b for sequence id (reserve).
  void take(SequenceId id, int32_t b) {
    Block& blk = blocks_[static_cast<size_t>(b)];
    EXPECT_TRUE(blk.owners.empty()) << "took block " << b << ", which sequences still hold";
    if (free_count() > 0) {
      EXPECT_FALSE(blk.indexed) << "evicted cached block " << b << " while free blocks remain";
    } else {
      EXPECT_TRUE(!lru_.empty() && lru_.front() == b)
          << "evicted block " << b << " but the least recently released is "
          << (lru_.empty() ? -1 : lru_.front());
    }
    if (blk.indexed) {
      lru_.remove(b);
      unindex(b);
      ++coverage_.evicted;
    }
    blk.owners = {id};
    seq(id).blocks.push_back(b);
  }

  // Sequence id writes positions [length, length + tokens.size()).
  void write(SequenceId id, const std::vector<int32_t>& tokens) {
    Sequence& s = seq(id);
    for (int32_t t : tokens) {
      const size_t p = s.tokens.size();
      const int32_t b = s.blocks.at(p / static_cast<size_t>(block_size_));
      Block& blk = blocks_[static_cast<size_t>(b)];
      EXPECT_EQ(blk.owners, std::set<SequenceId>{id})
          << "sequence " << id << " writes position " << p << " in block " << b
          << ", which another sequence holds";
      s.tokens.push_back(t);
      blk.slots[p % static_cast<size_t>(block_size_)] = Slot{true, s.salt, s.tokens};
    }
  }

  // publish(id, tokens): full blocks within min(length, tokens) become
  // reachable (the sequence's own block, unless the content already was).
  void publish(SequenceId id, const std::vector<int32_t>& tokens) {
    Sequence& s = seq(id);
    const size_t bs = static_cast<size_t>(block_size_);
    const size_t full = std::min(s.tokens.size(), tokens.size()) / bs;
    for (size_t i = 0; i < full; ++i) {
      Key key{s.salt, std::vector<int32_t>(tokens.begin(), tokens.begin() + (i + 1) * bs)};
      const int32_t b = s.blocks[i];
      auto it = keys_.find(key);
      if (it != keys_.end()) {
        // Reachable already; an unreachable content still recorded for b is stale.
        if (it->second == b) continue;
        ++coverage_.stood_in;
        if (blocks_[static_cast<size_t>(b)].indexed) {
          unindex(b);
          ++coverage_.stale;
        }
        continue;
      }
      EXPECT_TRUE(holds(b, tokens, i, s.salt)) << "published block " << b << " does not hold it";
      if (blocks_[static_cast<size_t>(b)].indexed) {  // an unreachable old content
        unindex(b);
        ++coverage_.stale;
      }
      keys_.emplace(std::move(key), b);
      blocks_[static_cast<size_t>(b)].indexed = true;
    }
  }

  // truncate(id, length): returns the length the sequence must keep.
  int truncate(SequenceId id, int length) {
    Sequence& s = seq(id);
    const int bs = block_size_;
    if (length % bs != 0) {
      const int32_t b = s.blocks[static_cast<size_t>(length / bs)];
      if (block(b).owners.size() > 1) {
        length = length / bs * bs;  // a shared block is kept whole or not at all
      } else if (block(b).indexed) {
        unindex(b);  // it will be written again
        ++coverage_.unpublished;
      }
    }
    s.tokens.resize(static_cast<size_t>(length));
    give_back(id, static_cast<size_t>((length + bs - 1) / bs));
    return length;
  }

  void release(SequenceId id) {
    give_back(id, 0);
    sequences_.erase(id);
  }

 private:
  void add_owner(SequenceId id, int32_t b) {
    Block& blk = blocks_[static_cast<size_t>(b)];
    if (blk.owners.empty()) lru_.remove(b);
    blk.owners.insert(id);
  }
  // The tail first: a prefix's last blocks are evicted before its first.
  void give_back(SequenceId id, size_t keep) {
    Sequence& s = seq(id);
    while (s.blocks.size() > keep) {
      Block& blk = blocks_[static_cast<size_t>(s.blocks.back())];
      blk.owners.erase(id);
      if (blk.owners.empty() && blk.indexed) {
        lru_.push_back(s.blocks.back());
        while (static_cast<int>(lru_.size()) > max_evictable_) {
          const int32_t oldest = lru_.front();
          lru_.pop_front();
          unindex(oldest);
          ++coverage_.evicted;
        }
      }
      s.blocks.pop_back();
    }
  }
  // Block b's content is forgotten: its key and every key extending it
  // (their blocks hang off it) are unreachable from now on.
  void unindex(int32_t b) {
    blocks_[static_cast<size_t>(b)].indexed = false;
    auto rep =
        std::find_if(keys_.begin(), keys_.end(), [b](const auto& kv) { return kv.second == b; });
    if (rep == keys_.end()) return;
    const Key gone = rep->first;
    for (auto it = keys_.begin(); it != keys_.end();) {
      const bool extends =
          it->first.first == gone.first && it->first.second.size() >= gone.second.size() &&
          std::equal(gone.second.begin(), gone.second.end(), it->first.second.begin());
      it = extends ? keys_.erase(it) : std::next(it);
    }
  }

  int block_size_;
  int max_evictable_;
  std::vector<Block> blocks_;
  std::list<int32_t> lru_;       // unreferenced indexed blocks, least recently released first
  std::map<Key, int32_t> keys_;  // reachable cached content → the block holding it
  std::map<SequenceId, Sequence> sequences_;
  Coverage coverage_;
};

}  // namespace tandem::testing
