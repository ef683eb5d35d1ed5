#include "workers/speculation/ngram_drafter.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace tandem {

NgramDrafter::NgramDrafter(int min_ngram, int max_ngram)
    : min_ngram_(min_ngram), max_ngram_(max_ngram) {
  require(min_ngram >= 1 && max_ngram >= min_ngram, ErrorKind::invalid_argument,
          "ngram drafter needs 1 <= min_ngram <= max_ngram (got " + std::to_string(min_ngram) +
              ", " + std::to_string(max_ngram) + ")");
}

std::vector<int32_t> NgramDrafter::lookup(std::span<const int32_t> tokens, int gamma) const {
  const int n = static_cast<int>(tokens.size());
  // Longest suffix first: a longer match is stronger evidence of a repeat.
  for (int size = std::min(max_ngram_, n - 1); size >= min_ngram_; --size) {
    const auto suffix = tokens.subspan(static_cast<size_t>(n - size));
    // Most recent earlier occurrence first; it must end before the suffix
    // starts to have a continuation we know.
    for (int start = n - size - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int from = start + size;
      const int count = std::min(gamma, n - from);
      return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + from + count);
    }
  }
  return {};
}

void NgramDrafter::propose(std::span<const DraftRequest> requests,
                           std::vector<DraftProposal>& proposals) {
  const auto start = std::chrono::steady_clock::now();
  proposals.assign(requests.size(), DraftProposal{});
  for (size_t i = 0; i < requests.size(); ++i)
    proposals[i].tokens = lookup(requests[i].tokens, requests[i].gamma);
  last_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tandem
