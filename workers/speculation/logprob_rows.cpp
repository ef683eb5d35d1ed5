#include "workers/speculation/logprob_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "common/error.h"

namespace tandem {

TokenLogprob score_token(std::span<const double> log_row, int32_t token, int top) {
  require(token >= 0 && static_cast<size_t>(token) < log_row.size(), ErrorKind::internal,
          [&] { return "token " + std::to_string(token) + " to score is outside the vocabulary"; });
  TokenLogprob scored;
  scored.token = token;
  scored.logprob = static_cast<float>(log_row[static_cast<size_t>(token)]);
  if (top <= 0) return scored;
  std::vector<int32_t> ids;
  ids.reserve(log_row.size());
  for (size_t i = 0; i < log_row.size(); ++i)
    if (log_row[i] > -std::numeric_limits<double>::infinity()) ids.push_back(static_cast<int32_t>(i));
  const size_t n = std::min(ids.size(), static_cast<size_t>(top));
  // Most likely first; ties to the lower id, so the list does not depend on
  // how a sort happens to order equal values.
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                    [&](int32_t a, int32_t b) {
                      const double la = log_row[static_cast<size_t>(a)];
                      const double lb = log_row[static_cast<size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  scored.top.reserve(n);
  for (size_t i = 0; i < n; ++i)
    scored.top.emplace_back(ids[i], static_cast<float>(log_row[static_cast<size_t>(ids[i])]));
  return scored;
}

void log_softmax(std::span<const float> logits, std::span<double> out) {
  double max = -std::numeric_limits<double>::infinity();
  for (float x : logits) max = std::max(max, static_cast<double>(x));
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
  const double log_sum = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - log_sum;
}

void log_of(std::span<const float> probs, std::span<double> out) {
  for (size_t i = 0; i < probs.size(); ++i)
    out[i] = probs[i] > 0.0f ? std::log(static_cast<double>(probs[i]))
                             : -std::numeric_limits<double>::infinity();
}

void score_blocks(Backend& backend, int V, std::span<const float* const> block_logits,
                  const float* probs,
                  const TargetStep& step, std::vector<TargetResult::Outcome>& outcomes) {
  const size_t width = static_cast<size_t>(V);
  std::vector<float> rows;
  std::vector<double> log_row(width);
  size_t row = 0, verified = 0;
  for (size_t k = 0; k < step.sequences.size(); ++k) {
    const TargetStep::Sequence& s = step.sequences[k];
    const size_t first_row = row;
    row += static_cast<size_t>(s.logit_count);
    if (!s.verify) continue;
    TargetResult::Outcome& out = outcomes[verified++];
    if (s.logprobs < 0 || out.fault != SessionFault::none) continue;
    require(out.accepted >= 0 && out.accepted <= s.gamma, ErrorKind::internal, [&] {
      return "session " + std::to_string(s.session) + " accepted " + std::to_string(out.accepted) +
             " of " + std::to_string(s.gamma) + " drafts";
    });
    // The block's rows p_1..p_{n+1}: the last γ + 1 of the sequence's rows.
    const size_t block_row = first_row + static_cast<size_t>(s.logit_count - (s.gamma + 1));
    const size_t count = static_cast<size_t>(out.accepted) + 1;
    const bool greedy = s.sampling.greedy();
    rows.resize(count * width);
    backend.download(greedy ? block_logits[k] : probs + block_row * width, rows);
    const int32_t* drafts = s.tokens.data() + s.tokens.size() - static_cast<size_t>(s.gamma);
    out.logprobs.clear();
    for (size_t j = 0; j < count; ++j) {
      const std::span<const float> r(rows.data() + j * width, width);
      if (greedy) log_softmax(r, log_row);
      else log_of(r, log_row);
      const int32_t token = j + 1 < count ? drafts[j] : out.token;
      out.logprobs.push_back(score_token(log_row, token, s.logprobs));
    }
  }
}

void score_prompts(Backend& backend, int V, const float* logits, const TargetStep& step,
                   std::vector<std::vector<TokenLogprob>>& prompt) {
  const size_t width = static_cast<size_t>(V);
  prompt.assign(step.sequences.size(), {});
  std::vector<float> rows;
  std::vector<double> log_row(width);
  size_t row = 0;
  for (size_t k = 0; k < step.sequences.size(); ++k) {
    const TargetStep::Sequence& s = step.sequences[k];
    const size_t first_row = row;
    row += static_cast<size_t>(s.logit_count);
    if (s.scored.empty()) continue;
    require(s.scored.size() <= static_cast<size_t>(s.logit_count), ErrorKind::internal, [&] {
      return "sequence " + std::to_string(s.seq) + " scores " + std::to_string(s.scored.size()) +
             " prompt tokens with " + std::to_string(s.logit_count) + " logits rows";
    });
    rows.resize(s.scored.size() * width);
    backend.download(logits + first_row * width, rows);
    const int top = std::max(s.logprobs, 0);
    for (size_t j = 0; j < s.scored.size(); ++j) {
      log_softmax(std::span<const float>(rows.data() + j * width, width), log_row);
      prompt[k].push_back(score_token(log_row, s.scored[j], top));
    }
  }
}

}  // namespace tandem
