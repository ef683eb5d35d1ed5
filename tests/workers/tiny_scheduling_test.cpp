// The engine's scheduling on the shipped tiny pair (models/tiny): twelve
// sessions (greedy and seeded sampling, model and n-gram drafters) share a
// target KV cache far too small for them, so sessions are preempted and
// recomputed, and long prompts are prefilled in chunks. Each session's
// output must equal the same request run alone with an ample cache, token
// for token: preemption and chunking are invisible in the outputs, also
// with a mirrored cache driven by the engine's account, with prefix
// caching on it or not.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "tests/support/tiny_models.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {
namespace {

using test_support::kTinyPair;
using test_support::kTinyDraft;
using test_support::kTinyTarget;
using test_support::kTinyBlockSize;
using test_support::held_out_windows;

namespace fs = std::filesystem;


// The tiny pair, twelve requests, and each request's output run alone.
class TinyScheduling : public ::testing::Test {
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
    drafters = {model_drafter.get(), &ngram};

    const auto windows = held_out_windows();
    ASSERT_GE(windows.size(), 12u);
    for (size_t i = 0; i < 12; ++i) {
      SpeculationRequest r;
      const size_t length = 10 + (i * 7) % 31;  // 10..40 tokens
      ASSERT_GE(windows[i].size(), length);
      r.prompt.assign(windows[i].begin(), windows[i].begin() + static_cast<long>(length));
      r.max_new_tokens = 40;
      if (i % 2) r.sampling = {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 7000 + i};
      else r.sampling.temperature = 0.0f;
      r.gamma = GammaPolicy{false, 4};
      r.drafter = i % 3 == 2 ? "ngram" : "model";
      requests.push_back(r);
    }
    PagedKvCache ample(target_config, 64, kTinyBlockSize, *backend);
    for (const SpeculationRequest& r : requests) {
      SpeculativeEngine engine(*target, ample, drafters);
      const SessionKey key = engine.add(r);
      engine.run_to_completion();
      expected.push_back(engine.take(key).tokens);
    }
    EXPECT_EQ(ample.used_blocks(), 0);
  }

  // Runs every request on `engine` at once: outputs must equal `expected`,
  // and both greedy and sampled sessions must have been preempted.
  void expect_outputs_equal_runs_alone(SpeculativeEngine& engine) {
    std::vector<SessionKey> keys;
    for (const SpeculationRequest& r : requests) keys.push_back(engine.add(r));
    int steps = 0, chunked_steps = 0;
    while (engine.running() + engine.waiting() > 0) {
      engine.step();
      ++steps;
      for (const StepSessionReport& s : engine.last_step().sessions)
        chunked_steps += s.prefill_tokens > 0 && !s.verified;
    }
    EXPECT_GT(engine.preemptions(), 0u);
    EXPECT_GT(chunked_steps, 0);
    int preempted[2] = {0, 0};  // sessions preempted at least once: greedy, sampled
    for (size_t i = 0; i < requests.size(); ++i) {
      const SpeculationResult result = engine.take(keys[i]);
      EXPECT_TRUE(result.tokens == expected[i]) << "session " << i << " (" << requests[i].drafter
                                                 << (i % 2 ? ", sampled" : ", greedy") << ")";
      EXPECT_EQ(result.tokens.size(), 40u);
      preempted[i % 2] += result.stats.preemptions > 0;
    }
    EXPECT_GT(preempted[0], 0) << "no greedy session was preempted";
    EXPECT_GT(preempted[1], 0) << "no sampled session was preempted";
    std::printf("%d steps, %llu preemptions (of %d greedy and %d sampled sessions), %d prefill "
                "chunks\n",
                steps, static_cast<unsigned long long>(engine.preemptions()), preempted[0],
                preempted[1], chunked_steps);
    EXPECT_EQ(draft_cache->used_blocks(), 0);
  }

  std::unique_ptr<Backend> backend = make_cpu_backend();
  const ModelConfig target_config = load_model_config(kTinyTarget);
  const ModelConfig draft_config = load_model_config(kTinyDraft);
  std::unique_ptr<LlamaModel> target, draft;
  std::unique_ptr<PagedKvCache> draft_cache;
  std::unique_ptr<ModelDrafter> model_drafter;
  NgramDrafter ngram;
  std::vector<Drafter*> drafters;
  std::vector<SpeculationRequest> requests;
  std::vector<std::vector<int32_t>> expected;
  const EngineOptions limits{.max_running = 16, .step_token_budget = 32};
};

TEST_F(TinyScheduling, PreemptedAndChunkedSessionsEqualTheirRunsAlone) {
  // 16 blocks (256 positions) for twelve sessions of up to 84 tokens each.
  PagedKvCache tiny(target_config, 16, kTinyBlockSize, *backend);
  SpeculativeEngine engine(*target, tiny, drafters, limits);
  expect_outputs_equal_runs_alone(engine);
  EXPECT_EQ(tiny.used_blocks(), 0);
}

TEST_F(TinyScheduling, MirroredCacheReplaysTheEnginesAccounting) {
  // The engine decides on a cache without storage; the runner's own cache
  // (same size) follows it from the TargetSteps alone, as a worker rank's.
  PagedKvCache accounting(target_config, 16, kTinyBlockSize, *backend, {},
                          PagedKvCache::Storage::none);
  PagedKvCache mirrored(target_config, 16, kTinyBlockSize, *backend);
  TargetStepRunner runner(*target, mirrored, TargetStepRunner::CacheMode::mirrored);
  SpeculativeEngine engine(target_config, accounting, runner, drafters, limits);
  expect_outputs_equal_runs_alone(engine);
  EXPECT_EQ(accounting.used_blocks(), 0);
  EXPECT_THROW(accounting.layer(0), Error);  // accounting only: no storage to hand out
}

TEST_F(TinyScheduling, MirroredCacheFollowsPingPongStepsWhereSessionsSitOut) {
  // Ping-pong: each step, the sessions drafting sit the target pass out. A
  // session's rejected drafts are truncated on the engine's cache when it
  // was verified, and the freed blocks go to others in the next pass, which
  // it sits out: the mirror must free them then too (TargetStep::truncated).
  // Blocks of 2 positions: most rejections free a block.
  PagedKvCache accounting(target_config, 128, 2, *backend, {}, PagedKvCache::Storage::none);
  PagedKvCache mirrored(target_config, 128, 2, *backend);
  TargetStepRunner runner(*target, mirrored, TargetStepRunner::CacheMode::mirrored);
  model_drafter->run_apart(true);
  SpeculativeEngine engine(target_config, accounting, runner, drafters, limits);
  engine.set_pipeline({PipelineMode::pingpong, 0.0});
  expect_outputs_equal_runs_alone(engine);
  EXPECT_EQ(accounting.used_blocks(), 0);
}

TEST_F(TinyScheduling, MirroredCacheFollowsPrefixCachingThroughPreemption) {
  // Prefix caching on the engine's account: a preempted session's committed
  // blocks stay cached and its re-admission starts on them, blocks the
  // mirror never saw that sequence hold (TargetStep tables, adopted by the
  // mirror, which itself never caches).
  PagedKvCache accounting(target_config, 16, kTinyBlockSize, *backend, {},
                          PagedKvCache::Storage::none);
  accounting.enable_prefix_caching(16);
  PagedKvCache mirrored(target_config, 16, kTinyBlockSize, *backend);
  TargetStepRunner runner(*target, mirrored, TargetStepRunner::CacheMode::mirrored);
  SpeculativeEngine engine(target_config, accounting, runner, drafters, limits);
  expect_outputs_equal_runs_alone(engine);
  EXPECT_GT(engine.target_prefix_counters().hits, 0u) << "no re-admission found its blocks";
  EXPECT_EQ(accounting.used_blocks(), 0);
  EXPECT_FALSE(mirrored.prefix_caching());
}

}  // namespace
}  // namespace tandem
