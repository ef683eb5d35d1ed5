#include "workers/kv_cache.h"

#include <string>
#include <utility>

#include "common/error.h"

namespace tandem {

PagedKvCache::PagedKvCache(const ModelConfig& config, int num_blocks, int block_size,
                           Backend& backend, const TensorShard& shard, Storage storage)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      kv_heads_(shard.split() ? shard_layout(config, shard).kv_heads.count : config.num_kv_heads),
      head_dim_(config.head_dim) {
  require(num_blocks > 0 && block_size > 0, ErrorKind::invalid_argument,
          "KV cache needs positive num_blocks and block_size (got " + std::to_string(num_blocks) +
              ", " + std::to_string(block_size) + ")");
  const size_t per_layer = static_cast<size_t>(num_blocks) * block_size * kv_heads_ * head_dim_;
  for (int l = 0; l < config.num_layers && storage == Storage::allocate; ++l) {
    keys_.push_back(backend.allocate(per_layer));
    values_.push_back(backend.allocate(per_layer));
  }
  // Hand out low block numbers first: deterministic, and easy to read in tests.
  for (int b = num_blocks - 1; b >= 0; --b) free_list_.push_back(b);
}

SequenceId PagedKvCache::create_sequence() {
  const SequenceId id = next_id_++;
  sequences_.emplace(id, Sequence{});
  return id;
}

void PagedKvCache::release(SequenceId seq) {
  Sequence& s = get(seq);
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) free_list_.push_back(*it);
  sequences_.erase(seq);
}

bool PagedKvCache::reserve(SequenceId seq, int length) {
  Sequence& s = get(seq);
  const size_t needed = static_cast<size_t>((length + block_size_ - 1) / block_size_);
  if (needed <= s.blocks.size()) return true;
  if (needed - s.blocks.size() > free_list_.size()) return false;
  while (s.blocks.size() < needed) {
    s.blocks.push_back(free_list_.back());
    free_list_.pop_back();
  }
  return true;
}

void PagedKvCache::truncate(SequenceId seq, int length) {
  Sequence& s = get(seq);
  require(length >= 0 && length <= s.length, ErrorKind::invalid_argument,
          "cannot truncate sequence " + std::to_string(seq) + " of length " +
              std::to_string(s.length) + " to " + std::to_string(length));
  s.length = length;
  const size_t keep = static_cast<size_t>((length + block_size_ - 1) / block_size_);
  while (s.blocks.size() > keep) {
    free_list_.push_back(s.blocks.back());
    s.blocks.pop_back();
  }
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
