#include "workers/kv_cache.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"

namespace tandem {

PagedKvCache::PagedKvCache(const ModelConfig& config, int num_blocks, int block_size,
                           Backend& backend, const TensorShard& shard, Storage storage)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      kv_heads_(shard.split() ? shard_layout(config, shard).kv_heads.count : config.num_kv_heads),
      head_dim_(config.head_dim),
      pool_((require(num_blocks > 0 && block_size > 0, ErrorKind::invalid_argument,
                     "KV cache needs positive num_blocks and block_size (got " +
                         std::to_string(num_blocks) + ", " + std::to_string(block_size) + ")"),
             num_blocks),
            block_size) {
  const size_t per_layer = static_cast<size_t>(num_blocks) * block_size * kv_heads_ * head_dim_;
  for (int l = 0; l < config.num_layers && storage == Storage::allocate; ++l) {
    keys_.push_back(backend.allocate(per_layer));
    values_.push_back(backend.allocate(per_layer));
  }
}

SequenceId PagedKvCache::create_sequence() {
  const SequenceId id = next_id_++;
  sequences_.emplace(id, Sequence{});
  return id;
}

void PagedKvCache::give_back_past(Sequence& s, size_t keep) {
  // The tail first, so that a prefix's last blocks are evicted before its
  // first ones (a prefix is only reusable from its start).
  while (s.blocks.size() > keep) {
    if (!driven_) pool_.unref(s.blocks.back());
    s.blocks.pop_back();
  }
  if (s.chain.size() > keep) {
    s.chain.resize(keep);
    s.chain_generation.resize(keep);
    s.chain_hash.resize(keep);
  }
}

void PagedKvCache::release(SequenceId seq) {
  give_back_past(get(seq), 0);
  sequences_.erase(seq);
}

bool PagedKvCache::reserve(SequenceId seq, int length) {
  require(!driven_, ErrorKind::internal, "a driven KV cache does not allocate its own blocks");
  Sequence& s = get(seq);
  const size_t needed = static_cast<size_t>((length + block_size_ - 1) / block_size_);
  if (needed <= s.blocks.size()) return true;
  if (needed - s.blocks.size() > static_cast<size_t>(pool_.available())) return false;
  while (s.blocks.size() < needed) s.blocks.push_back(pool_.take());
  return true;
}

void PagedKvCache::truncate(SequenceId seq, int length) {
  Sequence& s = get(seq);
  require(length >= 0 && length <= s.length, ErrorKind::invalid_argument,
          "cannot truncate sequence " + std::to_string(seq) + " of length " +
              std::to_string(s.length) + " to " + std::to_string(length));
  size_t keep = static_cast<size_t>((length + block_size_ - 1) / block_size_);
  const size_t partial = static_cast<size_t>(length / block_size_);  // block cut inside, if any
  if (length % block_size_ != 0 && partial < s.chain.size()) {
    // Its positions from `length` on will be written again.
    if (!driven_ && pool_.refs(s.blocks[partial]) > 1) {
      keep = partial;  // shared: let it go whole; the caller feeds its tokens again
      length = static_cast<int>(partial) * block_size_;
    } else if (!driven_ && s.chain[partial] == s.blocks[partial]) {
      pool_.uncache(s.blocks[partial]);
    }
    s.chain.resize(partial);
    s.chain_generation.resize(partial);
    s.chain_hash.resize(partial);
  }
  s.length = length;
  give_back_past(s, keep);
}

void PagedKvCache::set_length(SequenceId seq, int length) {
  Sequence& s = get(seq);
  require(length >= 0 && length <= capacity(seq), ErrorKind::internal,
          "sequence " + std::to_string(seq) + " set to length " + std::to_string(length) +
              " beyond its reserved capacity " + std::to_string(capacity(seq)));
  s.length = length;
}

int PagedKvCache::length(SequenceId seq) const { return get(seq).length; }

int PagedKvCache::capacity(SequenceId seq) const {
  return static_cast<int>(get(seq).blocks.size()) * block_size_;
}

std::span<const int32_t> PagedKvCache::block_table(SequenceId seq) const {
  return get(seq).blocks;
}

int32_t PagedKvCache::slot(SequenceId seq, int position) const {
  const Sequence& s = get(seq);
  return s.blocks[static_cast<size_t>(position / block_size_)] * block_size_ +
         position % block_size_;
}

PagedKvView PagedKvCache::layer(int index) {
  require(!keys_.empty(), ErrorKind::internal,
          "this KV cache keeps block accounting only (its storage is on other ranks)");
  const auto i = static_cast<size_t>(index);
  return PagedKvView{keys_[i].data(), values_[i].data(), num_blocks_, block_size_, kv_heads_,
                     head_dim_};
}

void PagedKvCache::adopt_blocks(SequenceId seq, int keep, std::span<const int32_t> appended) {
  Sequence& s = get(seq);
  require(prefix_caching_ == false && (driven_ || pool_.referenced() == 0), ErrorKind::internal,
          "a KV cache that allocates its own blocks cannot be driven by another");
  require(keep >= 0 && static_cast<size_t>(keep) <= s.blocks.size(), ErrorKind::internal,
          "sequence " + std::to_string(seq) + " keeps " + std::to_string(keep) + " of its " +
              std::to_string(s.blocks.size()) + " blocks");
  for (int32_t b : appended)
    require(b >= 0 && b < num_blocks_, ErrorKind::internal,
            "block " + std::to_string(b) + " is outside this KV cache of " +
                std::to_string(num_blocks_) + " blocks");
  driven_ = true;
  s.blocks.resize(static_cast<size_t>(keep));
  s.blocks.insert(s.blocks.end(), appended.begin(), appended.end());
  s.length = std::min(s.length, keep * block_size_);
}

const PagedKvCache::Sequence& PagedKvCache::get(SequenceId seq) const {
  auto it = sequences_.find(seq);
  require(it != sequences_.end(), ErrorKind::invalid_argument,
          "unknown KV sequence " + std::to_string(seq));
  return it->second;
}

PagedKvCache::Sequence& PagedKvCache::get(SequenceId seq) {
  return const_cast<Sequence&>(std::as_const(*this).get(seq));
}

}  // namespace tandem
