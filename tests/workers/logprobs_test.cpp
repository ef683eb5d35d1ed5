// Logprobs on the shipped tiny pair (models/tiny), where draft and target
// really disagree, so blocks are cut short by rejections:
//   1. greedy: speculation on (model drafter, γ = 4) and off (plain, γ = 0)
//      give the same tokens and the same scores and tops;
//   2. seeded sampling (temperature, top-k, top-p): every generated token's
//      score is log p_j(token) of its row, recomputed here from a plain
//      forward pass, with speculation on and off;
//   3. stop tokens and max_tokens cut the scores with the tokens; preemption
//      and chunked prefill neither lose nor repeat one;
//   4. prompt scores (echo) are the raw log-softmax, also with max_tokens 0.
// Tolerance 1e-5: the engine scores the same float32 rows the check
// recomputes (the CPU forward is batch-invariant), so what differs is only
// float32 standardization (log of a float32 probability: ~1e-6) against
// the double computation here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/support/tiny_models.h"
#include "tests/workers/logprob_checks.h"
#include "workers/llama_weights.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using test_support::kTinyPair;
using test_support::kTinyDraft;
using test_support::kTinyTarget;
using test_support::kTinyBlockSize;

namespace fs = std::filesystem;
using namespace logprob_checks;
constexpr double kScoreTolerance = 1e-5;

class TinyLogprobs : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* part : {"target", "draft"})
      ASSERT_TRUE(fs::exists(kTinyPair / part / "model.safetensors"))
          << "models/tiny is missing: run tools/train/reproduce.sh or restore it from git";
    target = std::make_unique<LlamaModel>(
        target_config, load_llama_weights(kTinyTarget, target_config, *backend), *backend);
    draft = std::make_unique<LlamaModel>(
        draft_config, load_llama_weights(kTinyDraft, draft_config, *backend), *backend);
    draft_cache = std::make_unique<PagedKvCache>(draft_config, 512, kTinyBlockSize, *backend);
    model_drafter = std::make_unique<ModelDrafter>(*draft, *draft_cache);
    std::ifstream file(kTinyPair / "eval_reference.json");
    windows = nlohmann::json::parse(file).at("windows").get<std::vector<std::vector<int32_t>>>();
    ASSERT_GE(windows.size(), 12u);
  }

  // Request i: a held-out prompt of 10..40 tokens.
  SpeculationRequest request(size_t i, const SamplingParams& sampling, int max_new_tokens = 32) {
    SpeculationRequest r;
    const size_t length = 10 + (i * 7) % 31;
    r.prompt.assign(windows[i].begin(), windows[i].begin() + static_cast<long>(length));
    r.max_new_tokens = max_new_tokens;
    r.sampling = sampling;
    r.logprobs = static_cast<int>(i % 4) + 1;
    r.prompt_logprobs = i % 2 == 0;
    return r;
  }

  // The requests as one batch: with the model drafter at γ = 4, or plain.
  std::vector<SpeculationResult> run(std::vector<SpeculationRequest> requests, bool speculate,
                                     PagedKvCache& cache, EngineOptions options = {}) {
    Drafter& drafter = speculate ? static_cast<Drafter&>(*model_drafter) : none;
    SpeculativeEngine engine(*target, cache, drafter, options);
    std::vector<SessionKey> keys;
    for (SpeculationRequest& r : requests) {
      r.gamma = GammaPolicy{false, speculate ? 4 : 0};
      keys.push_back(engine.add(r));
    }
    engine.run_to_completion();
    std::vector<SpeculationResult> results;
    for (SessionKey key : keys) results.push_back(engine.take(key));
    preemptions = engine.preemptions();
    return results;
  }

  std::unique_ptr<Backend> backend = make_cpu_backend();
  const ModelConfig target_config = load_model_config(kTinyTarget);
  const ModelConfig draft_config = load_model_config(kTinyDraft);
  std::unique_ptr<LlamaModel> target, draft;
  std::unique_ptr<PagedKvCache> draft_cache;
  std::unique_ptr<ModelDrafter> model_drafter;
  NoDrafter none;
  std::vector<std::vector<int32_t>> windows;
  PagedKvCache ample{target_config, 96, kTinyBlockSize, *backend};
  PagedKvCache check_cache{target_config, 8, kTinyBlockSize, *backend};
  uint64_t preemptions = 0;
};

TEST_F(TinyLogprobs, GreedySpeculationOnAndOffGiveTheSameScores) {
  std::vector<SpeculationRequest> requests;
  for (size_t i = 0; i < 6; ++i) requests.push_back(request(i, {.temperature = 0.0f}));
  const auto on = run(requests, true, ample);
  const auto off = run(requests, false, ample);
  int accepted = 0, drafted = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string name = "session " + std::to_string(i);
    ASSERT_EQ(on[i].tokens, off[i].tokens) << name;
    ASSERT_EQ(on[i].tokens.size(), 32u) << name;
    expect_same_scores(on[i].logprobs, off[i].logprobs, kScoreTolerance, name);
    expect_same_scores(on[i].prompt_logprobs, off[i].prompt_logprobs, kScoreTolerance, name);
    expect_scores_match_target(*target, check_cache, requests[i], on[i], kScoreTolerance, name);
    accepted += on[i].stats.accepted_tokens;
    drafted += on[i].stats.draft_tokens;
  }
  // Blocks cut by rejections and whole blocks were both scored.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

TEST_F(TinyLogprobs, SampledScoresAreTheTargetRowsWithSpeculationOnAndOff) {
  std::vector<SpeculationRequest> requests;
  for (size_t i = 0; i < 6; ++i) {
    SamplingParams sampling{.temperature = 0.8f, .seed = 900 + i};
    if (i % 3 == 1) sampling.top_k = 40;
    if (i % 3 == 2) sampling.top_p = 0.9f;
    if (i == 5) sampling.top_k = 20;  // both filters
    requests.push_back(request(i, sampling));
  }
  for (bool speculate : {true, false}) {
    const auto results = run(requests, speculate, ample);
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::string name = (speculate ? "speculative session " : "plain session ") +
                               std::to_string(i);
      ASSERT_EQ(results[i].tokens.size(), 32u) << name;
      expect_scores_match_target(*target, check_cache, requests[i], results[i], kScoreTolerance, name);
    }
  }
}

TEST_F(TinyLogprobs, StopRulesCutTheScoresWithTheTokens) {
  SpeculationRequest full = request(3, {.temperature = 0.0f}, 40);
  const SpeculationResult whole = run({full}, true, ample)[0];
  ASSERT_EQ(whole.tokens.size(), 40u);
  // A stop token inside a block, and max_tokens that end inside one (γ = 4).
  SpeculationRequest stopped = full;
  stopped.stop_ids = {whole.tokens[9]};
  SpeculationRequest shorter = full;
  shorter.max_new_tokens = 7;
  for (const SpeculationRequest& r : {stopped, shorter}) {
    const SpeculationResult cut = run({r}, true, ample)[0];
    ASSERT_LE(cut.tokens.size(), 10u);
    ASSERT_EQ(cut.logprobs.size(), cut.tokens.size());
    const std::vector<TokenLogprob> prefix(whole.logprobs.begin(),
                                           whole.logprobs.begin() + static_cast<long>(cut.tokens.size()));
    expect_same_scores(cut.logprobs, prefix, 0.0, "cut at " + std::to_string(cut.tokens.size()));
  }
}

TEST_F(TinyLogprobs, PreemptionAndChunkedPrefillNeitherLoseNorRepeatScores) {
  std::vector<SpeculationRequest> requests;
  for (size_t i = 0; i < 12; ++i) {
    SamplingParams sampling{.temperature = 0.0f};
    if (i % 2) sampling = {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 7000 + i};
    requests.push_back(request(i, sampling, 40));
    requests.back().prompt_logprobs = true;
  }
  // The same batch on an ample cache, prefilled whole (the forward pass is
  // batch-invariant, so that is each session's run alone).
  const auto alone = run(requests, true, ample);
  EXPECT_EQ(preemptions, 0u);
  // 16 blocks (256 positions) for twelve sessions of up to 80 tokens, 32
  // new tokens a pass: sessions are preempted and prompts chunked.
  PagedKvCache tiny(target_config, 16, kTinyBlockSize, *backend);
  const auto crowded = run(requests, true, tiny, {.max_running = 16, .step_token_budget = 32});
  EXPECT_GT(preemptions, 0u);
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string name = "session " + std::to_string(i);
    ASSERT_EQ(crowded[i].tokens, alone[i].tokens) << name;
    EXPECT_EQ(crowded[i].logprobs.size(), crowded[i].tokens.size()) << name;
    EXPECT_EQ(crowded[i].prompt_logprobs.size(), requests[i].prompt.size() - 1) << name;
    expect_same_scores(crowded[i].logprobs, alone[i].logprobs, kScoreTolerance, name);
    expect_same_scores(crowded[i].prompt_logprobs, alone[i].prompt_logprobs, kScoreTolerance, name);
  }
  EXPECT_EQ(tiny.used_blocks(), 0);
}

TEST_F(TinyLogprobs, PromptScoresAreTheRawLogSoftmaxAlsoWithMaxTokensZero) {
  // A sampled request's prompt is scored at temperature 1 without filters.
  SpeculationRequest sampled = request(7, {.temperature = 0.5f, .top_k = 5, .seed = 3});
  sampled.prompt_logprobs = true;
  sampled.logprobs = 3;
  SpeculationRequest scoring = sampled;
  scoring.max_new_tokens = 0;
  // Prefilled in chunks of at most 8 tokens.
  const auto results = run({sampled, scoring}, true, ample, {.step_token_budget = 8});
  for (size_t i = 0; i < 2; ++i)
    expect_scores_match_target(*target, check_cache, i ? scoring : sampled, results[i], kScoreTolerance,
                               i ? "max_tokens 0" : "sampled");
  EXPECT_EQ(results[1].finish, FinishReason::length);
  EXPECT_TRUE(results[1].tokens.empty());
  expect_same_scores(results[1].prompt_logprobs, results[0].prompt_logprobs, 0.0, "the prompts");
}

TEST_F(TinyLogprobs, ScoresKeepStepWithTheOutputWhileRunning) {
  // What the engine loop streams: after every step, one score per token.
  SpeculativeEngine engine(*target, ample, *model_drafter, {.step_token_budget = 8});
  SpeculationRequest r = request(4, {.temperature = 0.0f}, 20);
  r.gamma = GammaPolicy{false, 4};
  const SessionKey key = engine.add(r);
  int steps = 0;
  while (!engine.finished(key)) {
    engine.step();
    ++steps;
    ASSERT_EQ(engine.output_logprobs(key).size(), engine.output(key).size()) << "step " << steps;
    // Prefilled in chunks of 8: the prompt's scores come chunk by chunk.
    EXPECT_EQ(engine.prompt_logprobs(key).size(),
              std::min<size_t>(static_cast<size_t>(8 * steps), r.prompt.size() - 1))
        << "step " << steps;
  }
  EXPECT_EQ(engine.output(key).size(), 20u);
  engine.take(key);
}

TEST_F(TinyLogprobs, SessionsThatDoNotAskGetNoScores) {
  SpeculationRequest r = request(0, {.temperature = 0.0f});
  r.logprobs = -1;
  r.prompt_logprobs = false;
  const SpeculationResult result = run({r}, true, ample)[0];
  EXPECT_EQ(result.tokens.size(), 32u);
  EXPECT_TRUE(result.logprobs.empty());
  EXPECT_TRUE(result.prompt_logprobs.empty());
}

TEST_F(TinyLogprobs, RefusesWhatItCannotScore) {
  SpeculativeEngine engine(*target, ample, none);
  SpeculationRequest r = request(0, {.temperature = 0.0f});
  r.logprobs = 21;
  try {
    engine.add(r);
    FAIL() << "logprobs 21 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_EQ(std::string(e.what()).rfind("logprobs:", 0), 0u) << e.what();
  }
  r.logprobs = 2;
  r.prompt_logprobs = false;
  r.max_new_tokens = 0;  // nothing to generate and nothing to score
  try {
    engine.add(r);
    FAIL() << "max_tokens 0 without prompt logprobs was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("max_tokens:", 0), 0u) << e.what();
  }
  EXPECT_EQ(engine.waiting(), 0u);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// Logit processing (penalties) and logprobs together: a greedy token is the
// argmax of its processed row, so it must head its own top list, and the
// scores must be those of the processed rows with speculation on and off
// alike (scoring the raw rows would put another token first wherever a
// penalty changed the choice).
TEST_F(TinyLogprobs, GreedyScoresAreThoseOfTheProcessedRows) {
  std::vector<SpeculationRequest> requests, plain_requests;
  for (size_t i = 0; i < 4; ++i) {
    SpeculationRequest r = request(i, {.temperature = 0.0f});
    plain_requests.push_back(r);
    r.processing.presence_penalty = 1.5f;
    r.processing.frequency_penalty = 0.5f;
    r.processing.repetition_penalty = 1.3f;
    requests.push_back(r);
  }
  const auto unprocessed = run(plain_requests, false, ample);
  const auto on = run(requests, true, ample);
  const auto off = run(requests, false, ample);
  int changed = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string name = "session " + std::to_string(i);
    ASSERT_EQ(on[i].tokens, off[i].tokens) << name;
    expect_same_scores(on[i].logprobs, off[i].logprobs, kScoreTolerance, name);
    ASSERT_EQ(on[i].logprobs.size(), on[i].tokens.size()) << name;
    for (size_t j = 0; j < on[i].tokens.size(); ++j) {
      ASSERT_FALSE(on[i].logprobs[j].top.empty()) << name;
      EXPECT_EQ(on[i].logprobs[j].top.front().first, on[i].tokens[j]) << name << " token " << j;
    }
    if (on[i].tokens != unprocessed[i].tokens) ++changed;
  }
  EXPECT_GT(changed, 0) << "the penalties changed no output: the test checks nothing";
}

}  // namespace
}  // namespace tandem
