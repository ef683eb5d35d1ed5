#include "workers/speculation/logit_processing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "workers/speculation/target_step.h"

namespace tandem {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::string show(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

bool in_vocab(int32_t token, int vocab) { return token >= 0 && token < vocab; }

// The history a row sees: the committed tokens, then some drafts.
struct History {
  std::span<const int32_t> committed;
  std::span<const int32_t> extra;
  int prompt_length = 0;
};

// Counts of the generated tokens (frequency, presence) and the set of every
// token seen (repetition), grown one token at a time along a block.
class TokenCounts {
 public:
  explicit TokenCounts(const LogitProcessing& p) : p_(p) {}

  void add(int32_t token, bool generated) {
    if (generated && (p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f))
      ++generated_[token];
    if (p_.repetition_penalty != 1.0f) seen_.emplace(token, 0);
  }

  void apply(float* row) const {
    // logit_bias was added before: the repetition rule sees the biased logit.
    const float r = p_.repetition_penalty;
    for (const auto& [token, unused] : seen_) row[token] = row[token] > 0 ? row[token] / r : row[token] * r;
    for (const auto& [token, count] : generated_)
      row[token] -= p_.frequency_penalty * static_cast<float>(count) + p_.presence_penalty;
  }

 private:
  const LogitProcessing& p_;
  std::unordered_map<int32_t, int> generated_;
  std::unordered_map<int32_t, int> seen_;
};

}  // namespace

bool LogitProcessing::active() const {
  return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f ||
         !bias_tokens.empty() || min_tokens > 0;
}

std::optional<SamplingProblem> find_processing_problem(const LogitProcessing& p, int vocab) {
  const auto penalty = [](const char* field, float value) -> std::optional<SamplingProblem> {
    if (value >= -kMaxPenalty && value <= kMaxPenalty) return std::nullopt;  // NaN fails
    return SamplingProblem{field, std::string(field) + " must be in [-2, 2], got " + show(value) +
                                      "; use 0 for none"};
  };
  if (auto problem = penalty("presence_penalty", p.presence_penalty)) return problem;
  if (auto problem = penalty("frequency_penalty", p.frequency_penalty)) return problem;
  if (!(p.repetition_penalty > 0.0f && p.repetition_penalty <= kMaxRepetitionPenalty))
    return SamplingProblem{"repetition_penalty", "repetition_penalty must be in (0, 2], got " +
                                                     show(p.repetition_penalty) + "; use 1 for none"};
  if (p.bias_tokens.size() != p.bias_values.size() || p.bias_tokens.size() > kMaxLogitBiasEntries)
    return SamplingProblem{"logit_bias", "logit_bias takes at most " +
                                             std::to_string(kMaxLogitBiasEntries) +
                                             " entries, each a token id and a bias"};
  for (size_t i = 0; i < p.bias_tokens.size(); ++i) {
    if (!in_vocab(p.bias_tokens[i], vocab))
      return SamplingProblem{"logit_bias", "logit_bias: token id " +
                                               std::to_string(p.bias_tokens[i]) +
                                               " is outside the vocabulary [0, " +
                                               std::to_string(vocab) + ")"};
    if (!(std::fabs(p.bias_values[i]) <= kMaxLogitBias))
      return SamplingProblem{"logit_bias", "logit_bias: the bias of token " +
                                               std::to_string(p.bias_tokens[i]) +
                                               " must be in [-100, 100], got " +
                                               show(p.bias_values[i])};
  }
  if (p.min_tokens < 0)
    return SamplingProblem{"min_tokens",
                           "min_tokens must be >= 0, got " + std::to_string(p.min_tokens)};
  for (int32_t token : p.masked_stop_ids)
    if (!in_vocab(token, vocab))
      return SamplingProblem{"stop_token_ids", "stop token id " + std::to_string(token) +
                                                   " is outside the vocabulary [0, " +
                                                   std::to_string(vocab) + ")"};
  if (p.prompt_length < 0)
    return SamplingProblem{"prompt", "prompt_length must be >= 0"};
  return std::nullopt;
}

void process_rows(const LogitProcessing& p, std::span<const int32_t> history,
                  std::span<const int32_t> extra, int count, int V, float* rows) {
  if (const auto problem = find_processing_problem(p, V))
    throw Error(ErrorKind::invalid_argument, problem->field + ": " + problem->message);
  require(count >= 0 && static_cast<size_t>(count) <= extra.size() + 1 &&
              static_cast<size_t>(p.prompt_length) <= history.size(),
          ErrorKind::invalid_argument, "process_rows: rows, drafts and history disagree");
  const auto checked = [&](int32_t token) {
    require(in_vocab(token, V), ErrorKind::invalid_argument,
            [&] { return "process_rows: token " + std::to_string(token) + " outside the vocabulary"; });
    return token;
  };
  TokenCounts counts(p);
  for (size_t i = 0; i < history.size(); ++i)
    counts.add(checked(history[i]), i >= static_cast<size_t>(p.prompt_length));
  int64_t generated = static_cast<int64_t>(history.size()) - p.prompt_length;
  for (int j = 0; j < count; ++j) {
    float* row = rows + static_cast<size_t>(j) * V;
    if (j > 0) {  // x_j is now part of the history, as if it had been generated
      counts.add(checked(extra[static_cast<size_t>(j - 1)]), true);
      ++generated;
    }
    if (generated < p.min_tokens)
      for (int32_t token : p.masked_stop_ids) row[token] = -kInf;
    for (size_t b = 0; b < p.bias_tokens.size(); ++b) row[p.bias_tokens[b]] += p.bias_values[b];
    counts.apply(row);
  }
}

std::vector<const float*> process_step_logits(Backend& backend, int V, const float* logits,
                                              const TargetStep& step, ProcessingScratch& scratch,
                                              std::span<int32_t> argmaxes) {
  std::vector<const float*> where(step.sequences.size(), nullptr);
  // Which sequences are processed, and where their rows go.
  std::vector<size_t> processed, first_rows;
  size_t row = 0, processed_rows = 0;
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    const TargetStep::Sequence& s = step.sequences[i];
    // A block's γ + 1 rows are the sequence's last ones (rows before them
    // score its prompt: logprob_rows.h).
    const int block_rows = s.gamma + 1;
    const size_t block_row =
        row + (s.verify && s.logit_count >= block_rows ? s.logit_count - block_rows : 0);
    where[i] = logits + block_row * V;
    first_rows.push_back(block_row);
    row += static_cast<size_t>(s.logit_count);
    if (!s.verify || s.processing.empty() || !s.processing.front().active()) continue;
    if (find_processing_problem(s.processing.front(), V) ||
        s.history.size() < static_cast<size_t>(s.processing.front().prompt_length) ||
        s.logit_count < block_rows || s.tokens.size() < static_cast<size_t>(s.gamma)) {
      where[i] = nullptr;  // the block's fault (block_verification.cpp) ends it alone
      continue;
    }
    processed.push_back(i);
    processed_rows += static_cast<size_t>(block_rows);
  }
  if (processed.empty()) return where;
  const size_t total = processed_rows * V;
  if (scratch.rows.size() < total) scratch.rows = backend.allocate(total);
  scratch.host.resize(total);
  size_t at = 0;
  for (size_t i : processed) {
    const TargetStep::Sequence& s = step.sequences[i];
    const size_t n = static_cast<size_t>(s.gamma + 1) * V;
    float* host = scratch.host.data() + at;
    backend.download(logits + first_rows[i] * V, std::span(host, n));
    const std::span<const int32_t> drafts(s.tokens.data() + s.tokens.size() - s.gamma,
                                          static_cast<size_t>(s.gamma));
    process_rows(s.processing.front(), s.history, drafts, s.gamma + 1, V, host);
    where[i] = scratch.rows.data() + at;
    at += n;
  }
  backend.upload(std::span<const float>(scratch.host.data(), total), scratch.rows.data());
  // Greedy blocks take the argmax of what they now verify from.
  for (size_t i : processed) {
    const TargetStep::Sequence& s = step.sequences[i];
    if (!s.sampling.greedy()) continue;
    backend.argmax(where[i], s.gamma + 1, V, argmaxes.data() + first_rows[i]);
  }
  return where;
}

}  // namespace tandem
