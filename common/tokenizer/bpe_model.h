// The BPE model of a byte-level tokenizer: the vocabulary, the ranked merges
// and the merge loop that turns one pre-token into token ids.
//
// Symbols start as single bytes (each byte's GPT-2 character, see
// byte_level.h) and the lowest-ranked adjacent pair is merged until no pair
// has a merge; ties go to the leftmost pair. That is what Hugging Face's
// tokenizers do, so ids match theirs exactly.
//
// Thread-safe: encode_word may be called from many threads at once (the word
// cache is behind a mutex); everything else is immutable after construction.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/tokenizer/string_map.h"

namespace tandem {

struct BpeOptions {
  bool ignore_merges = false;     // a pre-token that is itself in the vocab is one token
  std::optional<int32_t> unk_id;  // for bytes whose character is not in the vocab
  bool fuse_unk = false;          // consecutive unknowns become one unk
};

class BpeModel {
 public:
  // merges: (left, right) token strings, best rank first. Throws
  // Error(corrupt_data) naming source_name when a merge names a token that is
  // not in the vocabulary.
  BpeModel(StringMap<int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, const std::string& source_name);
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-token, given as raw bytes (not yet mapped to
  // GPT-2 characters).
  void encode_word(std::string_view raw, std::vector<int32_t>& ids) const;

  const StringMap<int32_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  void merge_word(std::string_view raw, std::vector<int32_t>& ids) const;

  StringMap<int32_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, result
  std::array<int32_t, 256> byte_ids_{};         // id of each byte's character, -1 if absent
  BpeOptions options_;

  // Pre-tokens repeat a lot in real text (" the", "\n"); caching their ids
  // skips the merge loop. Bounded: cleared when it grows past kCacheLimit.
  static constexpr size_t kCacheLimit = 1 << 18;
  static constexpr size_t kCacheMaxWordBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<int32_t>> cache_;
};

}  // namespace tandem
