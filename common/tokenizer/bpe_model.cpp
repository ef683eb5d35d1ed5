#include "common/tokenizer/bpe_model.h"

#include <queue>

#include "common/error.h"
#include "common/tokenizer/byte_level.h"

namespace tandem {

BpeModel::BpeModel(StringMap<int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& source_name)
    : vocab_(std::move(vocab)), options_(options) {
  auto id_of = [&](const std::string& token, size_t rank, const char* role) {
    const auto it = vocab_.find(token);
    require(it != vocab_.end(), ErrorKind::corrupt_data,
            source_name + ": model.merges[" + std::to_string(rank) + "] ('" + merges[rank].first +
                " " + merges[rank].second + "'): its " + role + " '" + token +
                "' is not in model.vocab (hint: the file is damaged or was edited by hand; "
                "download tokenizer.json again)");
    return it->second;
  };
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t left_id = id_of(left, rank, "left part");
    const int32_t right_id = id_of(right, rank, "right part");
    const int32_t merged_id = id_of(left + right, rank, "result");
    // A repeated pair keeps its first (best) rank, as in Hugging Face's loader.
    merges_.emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(rank), merged_id});
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(byte_level::char_of_byte(static_cast<uint8_t>(b)));
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
}

void BpeModel::encode_word(std::string_view raw, std::vector<int32_t>& ids) const {
  if (raw.empty()) return;
  const bool cacheable = raw.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (const auto it = cache_.find(raw); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word_ids;
  if (options_.ignore_merges) {
    std::string spelled;
    byte_level::append_encoded(spelled, raw);
    if (const auto it = vocab_.find(spelled); it != vocab_.end()) word_ids.push_back(it->second);
  }
  if (word_ids.empty()) merge_word(raw, word_ids);
  ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(std::string(raw), std::move(word_ids));
  }
}

void BpeModel::merge_word(std::string_view raw, std::vector<int32_t>& ids) const {
  // The word as a doubly linked list of symbols; a merged-away symbol gets
  // id -1 so stale queue entries that mention it are recognized and dropped.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(raw.size());
  bool last_was_unk = false;
  for (char ch : raw) {
    int32_t id = byte_ids_[static_cast<uint8_t>(ch)];
    const bool unknown = id < 0;
    if (unknown) {
      // Hugging Face drops a character it cannot spell when there is no unk token.
      if (!options_.unk_id || (options_.fuse_unk && last_was_unk)) continue;
      id = *options_.unk_id;
    }
    last_was_unk = unknown;
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
  }
  if (symbols.size() <= 1) {
    for (const Symbol& s : symbols) ids.push_back(s.id);
    return;
  }

  // Candidate merges ordered by (rank, position): lowest rank first, leftmost on ties.
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t left_id;
    int32_t right_id;
    int32_t merged_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    const auto it = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
    if (it == merges_.end()) return;
    queue.push({it->second.rank, pos, symbols[pos].id, symbols[next].id, it->second.merged_id});
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) consider(pos);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.pos];
    // Stale when either side changed since the candidate was queued: a merge
    // always yields a longer token, so an unchanged id means an unchanged symbol.
    if (left.id != c.left_id || left.next < 0 || symbols[left.next].id != c.right_id) continue;
    Symbol& right = symbols[left.next];
    left.id = c.merged_id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.pos;
    right.id = -1;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (int32_t pos = 0; pos >= 0; pos = symbols[pos].next) ids.push_back(symbols[pos].id);
}

}  // namespace tandem
