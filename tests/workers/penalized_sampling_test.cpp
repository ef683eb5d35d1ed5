// Sampling with logit processing stays lossless under speculation: on the
// tiny pair, N sessions with distinct seeds sample their first two tokens
// with the model drafter at γ = 4 under penalties (presence, frequency,
// repetition), logit_bias and min_p, and the pairs are tested (Pearson χ²)
// against the exact law of plain decoding, computed here independently from
// the target's raw logits: p(t1 | prompt) and p(t2 | prompt, t1), t1 counted
// as generated (presence, frequency) and seen (repetition). The second
// token is the one that matters: in the first block it is verified at row
// 1, whose history must hold the drafted x_1.
//
// A third check aims at what the penalties on t1 change most: the rate of
// t2 == t1, a binomial count tested (two-sided z) against its exact value.
//
// Power: the same draws must reject the laws two plausible bugs produce:
// a history that misses the block's drafts (t1 not counted at position 2)
// and presence/frequency counted over the prompt too; the repeat-rate test
// must reject the first bug's rate. (Planted in the engine, the first bug
// fails the repeat-rate test, where the pair χ² alone did not see it.)
//
// False alarms: each assertion a correct engine must pass (first-token χ²,
// pair χ², repeat rate) has rate 1e-4, so a run fails by chance with
// probability < 3e-4 (union bound). Seeds are fixed, so a build passes or
// fails every time.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/statistics.h"
#include "tests/workers/tiny_pair.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using test_support::TinyModel;
using test_support::TinyPair;
using test_stats::Fit;

constexpr double kPenaltyFalseAlarm = 1e-4;
constexpr long kPenaltySamples = 4000;
constexpr int kPenaltyGamma = 4;

// The request's processing and sampling, as the test's own law reads them.
struct PenaltySetting {
  LogitProcessing processing;
  float temperature = 1.0f;
  float min_p = 0.0f;
};

// Raw target logits (V) after each context, each run from position 0.
std::vector<std::vector<float>> raw_rows(TinyModel& m, const std::vector<std::vector<int32_t>>& contexts) {
  const int V = m.config.vocab_size;
  std::vector<std::vector<float>> rows;
  for (size_t begin = 0; begin < contexts.size(); begin += 32) {
    const size_t end = std::min(contexts.size(), begin + 32);
    std::vector<SequenceStep> steps;
    for (size_t c = begin; c < end; ++c) {
      const SequenceId seq = m.cache.create_sequence();
      EXPECT_TRUE(m.cache.reserve(seq, static_cast<int>(contexts[c].size())));
      steps.push_back({seq, contexts[c], 1});
    }
    const float* logits = m.model.forward(steps, m.cache);
    for (size_t r = 0; r < steps.size(); ++r) {
      std::vector<float> row(static_cast<size_t>(V));
      m.model.backend().download(logits + r * V, row);
      rows.push_back(std::move(row));
      m.cache.release(steps[r].seq);
    }
  }
  return rows;
}

// The law plain decoding samples from after prompt + generated, written from
// the definitions (OpenAI's penalties, vLLM's repetition penalty and min-p),
// in double: not the engine's code.
std::vector<double> law_after(const std::vector<float>& raw, const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& generated,
                              const std::vector<int32_t>& penalized_as_generated,
                              const PenaltySetting& s) {
  const LogitProcessing& p = s.processing;
  std::vector<double> x(raw.begin(), raw.end());
  for (size_t b = 0; b < p.bias_tokens.size(); ++b) x[p.bias_tokens[b]] += p.bias_values[b];
  std::set<int32_t> seen(prompt.begin(), prompt.end());
  seen.insert(generated.begin(), generated.end());
  for (int32_t t : seen) x[t] = x[t] > 0 ? x[t] / p.repetition_penalty : x[t] * p.repetition_penalty;
  std::map<int32_t, int> counts;
  for (int32_t t : penalized_as_generated) ++counts[t];
  for (const auto& [t, c] : counts) x[t] -= p.frequency_penalty * c + p.presence_penalty;
  const double top = *std::max_element(x.begin(), x.end());
  std::vector<double> probs(x.size());
  double total = 0;
  for (size_t i = 0; i < x.size(); ++i) total += probs[i] = std::exp((x[i] - top) / s.temperature);
  const double peak = 1.0 / total;  // the max token's probability
  double kept = 0;
  for (double& q : probs) {
    q /= total;
    if (q < s.min_p * peak) q = 0;
    kept += q;
  }
  for (double& q : probs) q /= kept;
  return probs;
}

// Which tokens the law's penalties count as generated at position 2, given
// t1: the correct rule and the two planted bugs.
enum class Counting { correct, drafts_missing, prompt_counted };

struct PairLaw {
  std::vector<double> first;
  std::map<int32_t, std::vector<double>> second;  // t1 -> law of t2, for every possible t1

  // P(t2 == t1): the rate the penalties on t1 at position 2 move most.
  double repeat_rate() const {
    double rate = 0;
    for (const auto& [t1, row] : second) rate += first[t1] * row[t1];
    return rate;
  }
};

PairLaw pair_law(TinyModel& target, const std::vector<int32_t>& prompt, const PenaltySetting& s,
                 Counting counting) {
  PairLaw law;
  const std::vector<int32_t> none;
  const std::vector<int32_t> prompt_counted = counting == Counting::prompt_counted ? prompt : none;
  law.first = law_after(raw_rows(target, {prompt})[0], prompt, none, prompt_counted, s);
  std::vector<int32_t> frequent;
  std::vector<std::vector<int32_t>> contexts;
  for (int32_t t = 0; t < static_cast<int32_t>(law.first.size()); ++t) {
    if (law.first[t] == 0) continue;  // min_p leaves few: all are kept
    frequent.push_back(t);
    contexts.push_back(prompt);
    contexts.back().push_back(t);
  }
  const auto rows = raw_rows(target, contexts);
  for (size_t i = 0; i < frequent.size(); ++i) {
    const std::vector<int32_t> t1 = {frequent[i]};
    std::vector<int32_t> counted = prompt_counted;
    if (counting != Counting::drafts_missing) counted.push_back(frequent[i]);
    const std::vector<int32_t> generated = counting == Counting::drafts_missing ? none : t1;
    law.second[frequent[i]] = law_after(rows[i], prompt, generated, counted, s);
  }
  return law;
}

// First two tokens of N sessions with distinct seeds, speculation on.
std::vector<std::array<int32_t, 2>> draw_pairs(TinyPair& pair, const std::vector<int32_t>& prompt,
                                               const PenaltySetting& s) {
  constexpr long kChunk = 400;
  constexpr EngineOptions kAllAtOnce{.max_running = kChunk, .step_token_budget = 1 << 16};
  ModelDrafter drafter(pair.draft.model, pair.draft.cache);
  std::vector<std::array<int32_t, 2>> pairs;
  for (long begin = 0; begin < kPenaltySamples; begin += kChunk) {
    SpeculativeEngine engine(pair.target.model, pair.target.cache, drafter, kAllAtOnce);
    std::vector<SessionKey> waiting;
    for (long i = begin; i < std::min(kPenaltySamples, begin + kChunk); ++i) {
      SpeculationRequest request;
      request.prompt = prompt;
      request.max_new_tokens = kPenaltyGamma + 1;  // so γ is not cut for what may still come
      request.sampling = {.temperature = s.temperature, .seed = 9000 + static_cast<uint64_t>(i),
                          .min_p = s.min_p};
      request.gamma = GammaPolicy{false, kPenaltyGamma};
      request.processing = s.processing;
      waiting.push_back(engine.add(request));
    }
    for (int step = 1; !waiting.empty() && step <= 4; ++step) {
      engine.step();
      std::vector<SessionKey> still;
      for (SessionKey key : waiting) {
        if (engine.output(key).size() < 2) {
          still.push_back(key);
          continue;
        }
        const SpeculationResult result = engine.take(key);
        pairs.push_back({result.tokens[0], result.tokens[1]});
      }
      waiting = std::move(still);
    }
    EXPECT_TRUE(waiting.empty());
    for (SessionKey key : waiting) engine.take(key);
  }
  return pairs;
}

Fit fit_first(const std::vector<std::array<int32_t, 2>>& pairs, const PairLaw& law) {
  std::vector<long> counts(law.first.size());
  for (const auto& p : pairs) ++counts[static_cast<size_t>(p[0])];
  return test_stats::chi_square_fit(counts, law.first, kPenaltyFalseAlarm);
}

// Cells (t1, t2) for each t1 with a second row; t1 alone for the rest.
Fit fit_pair(const std::vector<std::array<int32_t, 2>>& pairs, const PairLaw& law) {
  const int32_t V = static_cast<int32_t>(law.first.size());
  std::map<std::array<int32_t, 2>, long> pair_counts;
  std::vector<long> first_counts(static_cast<size_t>(V)), counts;
  for (const auto& p : pairs) {
    ++pair_counts[p];
    ++first_counts[static_cast<size_t>(p[0])];
  }
  std::vector<double> probs;
  for (int32_t t1 = 0; t1 < V; ++t1) {
    const auto row = law.second.find(t1);
    if (row == law.second.end()) {
      probs.push_back(law.first[t1]);
      counts.push_back(first_counts[t1]);
      continue;
    }
    for (int32_t t2 = 0; t2 < V; ++t2) {
      const auto count = pair_counts.find({t1, t2});
      probs.push_back(law.first[t1] * row->second[t2]);
      counts.push_back(count == pair_counts.end() ? 0 : count->second);
    }
  }
  return test_stats::chi_square_fit(counts, probs, kPenaltyFalseAlarm);
}

TEST(PenalizedSampling, SpeculativeDrawsFollowThePenalizedTargetLaw) {
  if (!TinyPair::present()) GTEST_FAIL() << "models/tiny is missing: restore it from git";
  TinyPair pair;
  const std::vector<int32_t> prompt = pair.tokenizer.encode("ha ha ha ha ha ha ha ha");
  PenaltySetting s;
  s.processing.presence_penalty = 0.8f;
  s.processing.frequency_penalty = 0.6f;
  s.processing.repetition_penalty = 1.3f;
  s.min_p = 0.02f;
  // logit_bias: +2 on the target's 5th most likely first token.
  const std::vector<float> raw = raw_rows(pair.target, {prompt})[0];
  std::vector<int32_t> order(raw.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                    [&](int32_t a, int32_t b) { return raw[a] > raw[b]; });
  s.processing.bias_tokens = {order[4]};
  s.processing.bias_values = {2.0f};

  const PairLaw law = pair_law(pair.target, prompt, s, Counting::correct);
  const auto pairs = draw_pairs(pair, prompt, s);
  ASSERT_EQ(static_cast<long>(pairs.size()), kPenaltySamples);
  const Fit first = fit_first(pairs, law), both = fit_pair(pairs, law);
  EXPECT_LT(first.statistic, first.critical) << "first token, dof " << first.dof;
  EXPECT_LT(both.statistic, both.critical) << "token pair, dof " << both.dof;
  std::printf("penalized law: first chi2 %.1f (dof %d, critical %.1f), pair chi2 %.1f (dof %d, "
              "critical %.1f)\n",
              first.statistic, first.dof, first.critical, both.statistic, both.dof, both.critical);
  // The repeat rate t2 == t1 against its exact value, and its power
  // against the rate of a history that misses the drafts.
  long repeats = 0;
  for (const auto& p : pairs) repeats += p[0] == p[1];
  const double z_critical = test_stats::normal_upper_quantile(kPenaltyFalseAlarm / 2);  // two-sided
  const double rate = law.repeat_rate();
  const double bug_rate = pair_law(pair.target, prompt, s, Counting::drafts_missing).repeat_rate();
  const double z = test_stats::binomial_z(repeats, kPenaltySamples, rate);
  const double z_bug = test_stats::binomial_z(repeats, kPenaltySamples, bug_rate);
  EXPECT_LT(std::abs(z), z_critical) << "t2 == t1 in " << repeats << " of " << kPenaltySamples
                                     << " pairs, expected rate " << rate;
  EXPECT_GT(std::abs(z_bug), z_critical) << "the repeat rate cannot tell a history without drafts";
  std::printf("  t2 == t1: %.4f vs %.4f, z %.2f (critical %.2f); against drafts missing (%.4f): z %.1f\n",
              static_cast<double>(repeats) / kPenaltySamples, rate, z, z_critical, bug_rate, z_bug);
  for (const auto& [name, counting] :
       {std::pair{"drafts missing from the history", Counting::drafts_missing},
        std::pair{"presence/frequency over the prompt", Counting::prompt_counted}}) {
    const Fit bad = fit_pair(pairs, pair_law(pair.target, prompt, s, counting));
    EXPECT_GT(bad.statistic, bad.critical) << "the pair test cannot tell " << name;
    std::printf("  against %s: pair chi2 %.1f (critical %.1f)\n", name, bad.statistic, bad.critical);
  }
}

}  // namespace
}  // namespace tandem
