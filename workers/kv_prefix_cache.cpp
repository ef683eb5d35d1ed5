// PagedKvCache's prefix caching: matching, attaching and publishing
// prefixes (kv_cache.h says what is shared and why shared blocks are never
// written; kv_block_pool.h how a block's content is identified).
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "workers/kv_cache.h"

namespace tandem {

void PagedKvCache::enable_prefix_caching(int max_evictable) {
  require(!driven_, ErrorKind::internal, "a driven KV cache does not cache prefixes");
  pool_.limit_evictable(max_evictable);
  prefix_caching_ = true;
}

std::vector<PagedKvCache::FoundBlock> PagedKvCache::find_prefix(std::span<const int32_t> tokens,
                                                                uint64_t salt,
                                                                int max_tokens) const {
  std::vector<FoundBlock> found;
  const size_t limit = static_cast<size_t>(std::clamp(
      std::min(max_tokens, static_cast<int>(tokens.size())), 0, num_blocks_ * block_size_));
  const size_t bs = static_cast<size_t>(block_size_);
  uint64_t hash = 0;
  KvBlockPool::Parent parent;
  for (size_t start = 0; start + bs <= limit; start += bs) {
    const std::span<const int32_t> block = tokens.subspan(start, bs);
    hash = block_hash(hash, salt, block);
    const int32_t b = pool_.find(hash, salt, parent, block);
    if (b < 0) break;
    found.push_back({b, hash});
    parent = {b, pool_.generation(b)};
  }
  return found;
}

PagedKvCache::PrefixMatch PagedKvCache::match_prefix(std::span<const int32_t> tokens,
                                                     uint64_t salt, int max_tokens) const {
  PrefixMatch match;
  if (!prefix_caching_) return match;
  for (const FoundBlock& f : find_prefix(tokens, salt, max_tokens)) {
    match.tokens += block_size_;
    ++match.blocks;
    if (pool_.refs(f.block) == 0) ++match.evictable;
  }
  return match;
}

int PagedKvCache::attach_prefix(SequenceId seq, std::span<const int32_t> tokens, uint64_t salt,
                                int max_tokens) {
  Sequence& s = get(seq);
  require(s.blocks.empty() && s.length == 0, ErrorKind::internal,
          "a prefix can be attached only to an empty sequence (sequence " + std::to_string(seq) +
              " holds " + std::to_string(s.length) + " positions)");
  if (!prefix_caching_) return 0;
  s.salt = salt;
  s.salted = true;
  counters_.queries += tokens.size();
  for (const FoundBlock& f : find_prefix(tokens, salt, max_tokens)) {
    pool_.ref(f.block);
    s.blocks.push_back(f.block);
    s.chain.push_back(f.block);
    s.chain_generation.push_back(pool_.generation(f.block));
    s.chain_hash.push_back(f.hash);
  }
  s.length = static_cast<int>(s.blocks.size()) * block_size_;
  counters_.hits += static_cast<uint64_t>(s.length);
  return s.length;
}

void PagedKvCache::check_chain(Sequence& s) const {
  for (size_t i = 0; i < s.chain.size(); ++i) {
    if (s.chain[i] == s.blocks[i]) continue;  // its own block: held, so never evicted
    if (pool_.is_cached(s.chain[i]) && pool_.generation(s.chain[i]) == s.chain_generation[i])
      continue;
    s.chain.resize(i);  // the stand-in was evicted: publish its own copies again from here
    s.chain_generation.resize(i);
    s.chain_hash.resize(i);
    return;
  }
}

void PagedKvCache::publish(SequenceId seq, std::span<const int32_t> tokens, uint64_t salt) {
  if (!prefix_caching_) return;
  Sequence& s = get(seq);
  if (!s.salted) {  // an attach that found nothing still fixed the salt
    s.salt = salt;
    s.salted = true;
  }
  check_chain(s);
  const size_t bs = static_cast<size_t>(block_size_);
  const size_t full = std::min(static_cast<size_t>(s.length), tokens.size()) / bs;
  for (size_t i = s.chain.size(); i < full; ++i) {
    const std::span<const int32_t> block = tokens.subspan(i * bs, bs);
    const uint64_t parent_hash = i == 0 ? 0 : s.chain_hash[i - 1];
    const KvBlockPool::Parent parent =
        i == 0 ? KvBlockPool::Parent{} : KvBlockPool::Parent{s.chain[i - 1], s.chain_generation[i - 1]};
    const uint64_t hash = block_hash(parent_hash, s.salt, block);
    const int32_t stands = pool_.cache(s.blocks[i], hash, s.salt, parent, block);
    s.chain.push_back(stands);
    s.chain_generation.push_back(pool_.generation(stands));
    s.chain_hash.push_back(hash);
  }
}

}  // namespace tandem
