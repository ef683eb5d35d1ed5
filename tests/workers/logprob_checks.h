// Independent checks of the engine's logprobs (workers/speculation/
// logprob_rows.h): the target's rows recomputed by one plain forward pass
// over a whole sequence, and the sampling law applied in double here, with
// none of the engine's code (verification, standardization, scoring).
// Shared by the logprobs tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/sampling_params.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/speculation/engine_types.h"

namespace tandem::logprob_checks {

constexpr double kNone = -std::numeric_limits<double>::infinity();

// The target's logits at every position of `tokens`, (n, V), from one
// forward pass over a fresh sequence of `cache`.
inline std::vector<float> logits_at_every_position(LlamaModel& model, PagedKvCache& cache,
                                                   const std::vector<int32_t>& tokens) {
  const SequenceId seq = cache.create_sequence();
  EXPECT_TRUE(cache.reserve(seq, static_cast<int>(tokens.size())));
  const int n = static_cast<int>(tokens.size());
  const SequenceStep step{seq, tokens, n};
  const float* rows = model.forward(std::span(&step, 1), cache);
  const size_t V = static_cast<size_t>(model.config().vocab_size);
  std::vector<float> out(static_cast<size_t>(n) * V);
  model.backend().download(rows, out);
  cache.release(seq);
  return out;
}

// log p(x) for every x under `params` (temperature 0: the log-softmax of
// the logits), in double: the law as docs/design.md states it, not as the
// kernels compute it. Top-k keeps the k largest logits, top-p then the
// smallest most-likely-first prefix whose mass reaches top_p of the kept
// mass; ties go to the lower id.
inline std::vector<double> law(const float* logits, size_t V, const SamplingParams& params) {
  const double t = params.greedy() ? 1.0 : params.temperature;
  std::vector<int32_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t kept = V;
  if (!params.greedy() && params.top_k > 0) kept = std::min(kept, static_cast<size_t>(params.top_k));
  const double top = logits[order[0]] / t;
  std::vector<double> weight(kept);
  double mass = 0;
  for (size_t j = 0; j < kept; ++j) mass += weight[j] = std::exp(logits[order[j]] / t - top);
  if (!params.greedy() && params.top_p < 1.0f) {
    const double threshold = static_cast<double>(params.top_p) * mass;
    double cum = 0;
    size_t j = 0;
    while (j < kept && cum < threshold) cum += weight[j++];
    kept = j;
    mass = cum;
  }
  std::vector<double> out(V, kNone);
  for (size_t j = 0; j < kept; ++j)
    out[static_cast<size_t>(order[j])] = logits[order[j]] / t - top - std::log(mass);
  return out;
}

// One reported score against the law of its row: its logprob, and `top`
// being the N most likely tokens of that law (of probability > 0), most
// likely first, each with its own logprob.
inline void expect_score(const TokenLogprob& got, int32_t token, const std::vector<double>& row,
                         int top, double tolerance, const std::string& where) {
  EXPECT_EQ(got.token, token) << where;
  EXPECT_NEAR(got.logprob, row[static_cast<size_t>(token)], tolerance) << where;
  std::vector<double> sorted;
  for (double x : row)
    if (x > kNone) sorted.push_back(x);
  std::sort(sorted.rbegin(), sorted.rend());
  ASSERT_EQ(got.top.size(), std::min(sorted.size(), static_cast<size_t>(std::max(top, 0))))
      << where;
  for (size_t i = 0; i < got.top.size(); ++i) {
    const auto [id, logprob] = got.top[i];
    ASSERT_TRUE(id >= 0 && static_cast<size_t>(id) < row.size()) << where;
    EXPECT_GT(row[static_cast<size_t>(id)], kNone) << where << ": top " << i << " has p = 0";
    EXPECT_NEAR(logprob, row[static_cast<size_t>(id)], tolerance) << where << ": top " << i;
    EXPECT_NEAR(logprob, sorted[i], tolerance) << where << ": top " << i << " is not the "
                                                << i + 1 << "th most likely";
    if (i > 0) {
      EXPECT_GE(got.top[i - 1].second, logprob) << where << ": top out of order";
    }
  }
}

// Every generated token's score of `result` (request as sent) against the
// target's rows recomputed from prompt + output; the prompt's scores too
// when asked (raw logits, temperature 1).
inline void expect_scores_match_target(LlamaModel& model, PagedKvCache& cache,
                                       const SpeculationRequest& request,
                                       const SpeculationResult& result, double tolerance,
                                       const std::string& name) {
  std::vector<int32_t> all = request.prompt;
  all.insert(all.end(), result.tokens.begin(), result.tokens.end());
  const std::vector<float> rows = logits_at_every_position(model, cache, all);
  const size_t V = static_cast<size_t>(model.config().vocab_size);
  const size_t P = request.prompt.size();
  ASSERT_EQ(result.logprobs.size(), request.logprobs >= 0 ? result.tokens.size() : 0u) << name;
  for (size_t j = 0; j < result.logprobs.size(); ++j) {
    const std::vector<double> row = law(rows.data() + (P + j - 1) * V, V, request.sampling);
    expect_score(result.logprobs[j], result.tokens[j], row, request.logprobs, tolerance,
                 name + " token " + std::to_string(j));
  }
  ASSERT_EQ(result.prompt_logprobs.size(), request.prompt_logprobs ? P - 1 : 0u) << name;
  const SamplingParams raw{.temperature = 1.0f};
  for (size_t i = 1; i < P && request.prompt_logprobs; ++i) {
    const std::vector<double> row = law(rows.data() + (i - 1) * V, V, raw);
    expect_score(result.prompt_logprobs[i - 1], request.prompt[i], row,
                 std::max(request.logprobs, 0), tolerance, name + " prompt token " + std::to_string(i));
  }
}

// a and b report the same scores (tokens, logprobs, tops) within tolerance.
inline void expect_same_scores(const std::vector<TokenLogprob>& a,
                               const std::vector<TokenLogprob>& b, double tolerance,
                               const std::string& name) {
  ASSERT_EQ(a.size(), b.size()) << name;
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_EQ(a[j].token, b[j].token) << name << " entry " << j;
    EXPECT_NEAR(a[j].logprob, b[j].logprob, tolerance) << name << " entry " << j;
    ASSERT_EQ(a[j].top.size(), b[j].top.size()) << name << " entry " << j;
    for (size_t i = 0; i < a[j].top.size(); ++i) {
      EXPECT_EQ(a[j].top[i].first, b[j].top[i].first) << name << " entry " << j << " top " << i;
      EXPECT_NEAR(a[j].top[i].second, b[j].top[i].second, tolerance)
          << name << " entry " << j << " top " << i;
    }
  }
}

}  // namespace tandem::logprob_checks
