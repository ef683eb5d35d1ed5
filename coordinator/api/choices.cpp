#include "coordinator/api/choices.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace tandem::api {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t random_seed() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

}  // namespace

uint64_t choice_seed(std::optional<uint64_t> seed, int index) {
  if (!seed) return random_seed();
  if (index == 0) return *seed;
  return splitmix64(*seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ULL);
}

std::vector<int> rank_best_of(const std::vector<std::optional<double>>& cumulative_logprobs, int n) {
  std::vector<int> order(cumulative_logprobs.size());
  std::iota(order.begin(), order.end(), 0);
  const auto score = [&](int i) {
    return cumulative_logprobs[static_cast<size_t>(i)].value_or(-std::numeric_limits<double>::infinity());
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return score(a) > score(b); });
  order.resize(std::min(order.size(), static_cast<size_t>(std::max(n, 0))));
  return order;
}

Usage total_usage(const std::vector<Usage>& usages, int per_prompt) {
  Usage total;
  for (size_t i = 0; i < usages.size(); ++i) {
    // A prompt counts once, with what its first sequence found cached.
    if (per_prompt <= 1 || i % static_cast<size_t>(per_prompt) == 0) {
      total.prompt_tokens += usages[i].prompt_tokens;
      total.cached_tokens += usages[i].cached_tokens;
    }
    total.completion_tokens += usages[i].completion_tokens;
  }
  return total;
}

SpeculationReport total_speculation(const std::vector<SpeculationReport>& reports) {
  if (reports.empty()) return {};
  SpeculationReport total = reports.front();
  if (reports.size() == 1) return total;
  total.target_steps = total.draft_tokens = total.accepted_tokens = 0;
  double weighted_alpha = 0;  // α is a mean over drafted tokens: weight each by its drafts
  for (const SpeculationReport& report : reports) {
    total.target_steps += report.target_steps;
    total.draft_tokens += report.draft_tokens;
    total.accepted_tokens += report.accepted_tokens;
    total.lossless = total.lossless && report.lossless;
    if (report.draft_tokens > 0) weighted_alpha += report.acceptance_rate * report.draft_tokens;
  }
  total.acceptance_rate = total.draft_tokens > 0 ? weighted_alpha / total.draft_tokens
                                                 : std::numeric_limits<double>::quiet_NaN();
  return total;
}

}  // namespace tandem::api
