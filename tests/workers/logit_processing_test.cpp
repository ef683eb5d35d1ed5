// Logit processing (workers/speculation/logit_processing.h):
//   1. process_rows against values worked out by hand: vLLM's order, counts
//      over generated tokens only, the drafts of a block counted as
//      generated row by row, the min_tokens mask lifted on time;
//   2. its checks name the field;
//   3. greedy identity on the tiny pair: with each of the penalties,
//      logit_bias, min_tokens and min_p, speculation (model drafter, fixed
//      γ = 4) gives token for token what plain decoding (γ = 0) gives, and
//      what it gives differs from unprocessed greedy output (so the
//      processing did something).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/workers/tiny_pair.h"
#include "workers/speculation/logit_processing.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using test_support::TinyPair;
constexpr float kInfinity = std::numeric_limits<float>::infinity();

TEST(ProcessRows, FollowsVllmOrderOverGeneratedTokensAndDrafts) {
  LogitProcessing p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.repetition_penalty = 2.0f;
  p.bias_tokens = {1, 4};
  p.bias_values = {1.0f, -3.0f};
  p.min_tokens = 2;
  p.masked_stop_ids = {5};
  p.prompt_length = 2;
  // Prompt {0, 3}, generated {3}; drafts {2, 3}: three rows.
  const std::vector<int32_t> history = {0, 3, 3};
  const std::vector<int32_t> drafts = {2, 3};
  const int V = 6;
  std::vector<float> rows;
  for (int j = 0; j < 3; ++j) rows.insert(rows.end(), {1.0f, 2.0f, -1.0f, 4.0f, 1.0f, 0.5f});
  process_rows(p, history, drafts, 3, V, rows.data());
  // Row 0: generated = 1 < 2, token 5 masked. Bias: 1 -> 3, 4 -> -2.
  // Repetition over {0, 3}: 0 -> 0.5, 3 -> 2. Frequency/presence over
  // generated {3: 1}: 3 -> 2 - 0.25 - 0.5 = 1.25.
  const std::vector<float> row0 = {0.5f, 3.0f, -1.0f, 1.25f, -2.0f, -kInfinity};
  // Row 1: + draft 2 (generated = 2: mask lifted). 2: -1 * 2 = -2, then
  // - 0.25 - 0.5 = -2.75.
  const std::vector<float> row1 = {0.5f, 3.0f, -2.75f, 1.25f, -2.0f, 0.5f};
  // Row 2: + draft 3 (3 generated twice): 3 -> 2 - 0.5 - 0.5 = 1.
  const std::vector<float> row2 = {0.5f, 3.0f, -2.75f, 1.0f, -2.0f, 0.5f};
  for (int i = 0; i < V; ++i) {
    EXPECT_FLOAT_EQ(rows[i], row0[i]) << "row 0, token " << i;
    EXPECT_FLOAT_EQ(rows[V + i], row1[i]) << "row 1, token " << i;
    EXPECT_FLOAT_EQ(rows[2 * V + i], row2[i]) << "row 2, token " << i;
  }
}

TEST(ProcessRows, NeutralValuesAreInactive) {
  EXPECT_FALSE(LogitProcessing{}.active());
  LogitProcessing p;
  p.min_tokens = 1;
  EXPECT_TRUE(p.active());
}

TEST(ProcessRows, ProblemsNameTheField) {
  const auto field = [](LogitProcessing p) {
    const auto problem = find_processing_problem(p, 10);
    return problem ? problem->field : std::string("none");
  };
  LogitProcessing p;
  EXPECT_EQ(field(p), "none");
  p.presence_penalty = 2.5f;
  EXPECT_EQ(field(p), "presence_penalty");
  p = {};
  p.frequency_penalty = std::nanf("");
  EXPECT_EQ(field(p), "frequency_penalty");
  p = {};
  p.repetition_penalty = 0.0f;
  EXPECT_EQ(field(p), "repetition_penalty");
  p = {};
  p.bias_tokens = {10};
  p.bias_values = {1.0f};
  EXPECT_EQ(field(p), "logit_bias");
  p.bias_tokens = {9};
  p.bias_values = {100.5f};
  EXPECT_EQ(field(p), "logit_bias");
  p = {};
  p.min_tokens = -1;
  EXPECT_EQ(field(p), "min_tokens");
  SamplingParams s;
  s.min_p = 1.5f;
  ASSERT_TRUE(find_sampling_problem(s));
  EXPECT_EQ(find_sampling_problem(s)->field, "min_p");
}

// ---- greedy identity on the tiny pair -----------------------------------------

class ProcessedGreedy : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TinyPair::present()) GTEST_FAIL() << "models/tiny is missing: restore it from git";
    pair = std::make_unique<TinyPair>();
  }
  void TearDown() override {
    EXPECT_EQ(pair ? pair->target.cache.used_blocks() : 0, 0);
    EXPECT_EQ(pair ? pair->draft.cache.used_blocks() : 0, 0);
  }

  // Every prompt as one batch, greedy, at fixed γ; outputs in prompt order.
  std::vector<std::vector<int32_t>> run(Drafter& drafter, int gamma, const LogitProcessing& processing,
                                        float min_p, int max_tokens,
                                        std::vector<int32_t> stop_ids = {}) {
    SpeculativeEngine engine(pair->target.model, pair->target.cache, drafter);
    std::vector<SessionKey> keys;
    for (const char* text : kPrompts) {
      SpeculationRequest request;
      request.prompt = pair->tokenizer.encode(text);
      request.max_new_tokens = max_tokens;
      request.sampling.temperature = 0.0f;
      request.sampling.min_p = min_p;
      request.gamma = GammaPolicy{false, gamma};
      request.processing = processing;
      request.stop_ids = stop_ids;
      keys.push_back(engine.add(request));
    }
    engine.run_to_completion();
    std::vector<std::vector<int32_t>> out;
    for (SessionKey key : keys) out.push_back(engine.take(key).tokens);
    return out;
  }

  // Speculative == plain under `processing`, and != unprocessed plain.
  void expect_identity(const std::string& what, const LogitProcessing& processing, float min_p = 0,
                       std::vector<int32_t> stop_ids = {}, bool must_change = true) {
    NoDrafter none;
    ModelDrafter drafter(pair->draft.model, pair->draft.cache);
    const auto plain = run(none, 0, processing, min_p, kTokens, stop_ids);
    const auto speculative = run(drafter, 4, processing, min_p, kTokens, stop_ids);
    const auto unprocessed = run(none, 0, LogitProcessing{}, 0, kTokens, stop_ids);
    EXPECT_EQ(plain, speculative) << what;
    if (must_change) {
      EXPECT_NE(plain, unprocessed) << what << " changed nothing";
    }
  }

  static constexpr int kTokens = 40;
  static constexpr const char* kPrompts[] = {
      "The house was", "one two three four five six, one two three four five six, one two",
      "He said that the", "It was a cold night, and the old man", "She"};
  std::unique_ptr<TinyPair> pair;
};

TEST_F(ProcessedGreedy, PresenceAndFrequencyPenalties) {
  LogitProcessing p;
  p.presence_penalty = 1.0f;
  p.frequency_penalty = 0.7f;
  expect_identity("presence/frequency", p);
}

TEST_F(ProcessedGreedy, RepetitionPenalty) {
  LogitProcessing p;
  p.repetition_penalty = 1.6f;
  expect_identity("repetition", p);
}

TEST_F(ProcessedGreedy, LogitBias) {
  // Forbid each prompt's most common continuation tokens: the greedy
  // argmax of the first outputs, found here, gets -100.
  NoDrafter none;
  const auto unprocessed = run(none, 0, LogitProcessing{}, 0, 4);
  LogitProcessing p;
  for (const auto& out : unprocessed)
    for (int32_t token : out) {
      p.bias_tokens.push_back(token);
      p.bias_values.push_back(-100.0f);
    }
  p.bias_tokens.push_back(pair->tokenizer.encode(" the").front());
  p.bias_values.push_back(5.0f);
  expect_identity("logit_bias", p);
}

TEST_F(ProcessedGreedy, MinTokensMasksTheStopIdsUntilThenOnly) {
  // The stop id: the token plain greedy emits first for some prompt, so
  // without min_tokens that session stops at once.
  NoDrafter none;
  const auto unprocessed = run(none, 0, LogitProcessing{}, 0, 4);
  const std::vector<int32_t> stop = {unprocessed[0][0]};
  LogitProcessing p;
  p.min_tokens = 6;
  expect_identity("min_tokens", p, 0, stop);
  const auto plain = run(none, 0, p, 0, kTokens, stop);
  EXPECT_GE(plain[0].size(), 7u);  // six before the stop token could come
  for (const auto& out : plain)
    for (size_t i = 0; i < std::min<size_t>(6, out.size()); ++i) EXPECT_NE(out[i], stop[0]);
}

TEST_F(ProcessedGreedy, MinPIsANoOpForGreedy) {
  LogitProcessing p;
  p.presence_penalty = 0.5f;
  expect_identity("min_p with presence", p, 0.3f);
}

}  // namespace
}  // namespace tandem
