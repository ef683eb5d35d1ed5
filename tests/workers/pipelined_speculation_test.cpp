// Pipelined drafting (pipeline_policy.h) in one process: the draft model on
// a thread of its own drafts while the target verifies, ahead of the block
// under verification or for the ping-pong group that sits the pass out.
// Lossless means identical: the same tokens, greedy or seeded sampled, with
// pipelining on or off, since a block drafted ahead or apart is the block a
// plain step drafts (same prefix, same Philox positions, batch-invariant
// forward passes).
#include <gtest/gtest.h>

#include "tests/support/small_model.h"
#include "workers/llama_weights.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

ModelConfig pipeline_config(int hidden, int layers) {
  return test_support::small_llama(hidden, layers, 96, 256);
}

using Model = test_support::RandomModel;

std::vector<std::vector<int32_t>> pipeline_prompts() {
  return {{1, 2, 3, 4, 5}, {7}, {9, 9, 9, 9, 9, 9, 9, 9, 20}, {50, 51, 52, 50, 51, 52, 50},
          {3, 14, 15, 92, 65, 35, 89, 79}, {11, 12}};
}

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  int ahead_drafts = 0, ahead_hits = 0, apart_sessions = 0, pipelined_steps = 0, steps = 0;
  int draft_tokens = 0, accepted_tokens = 0;
};

// Every prompt in one batch through an engine with this pipeline policy.
Outcome run(Model& target, Model& draft, PipelineMode mode, SamplingParams sampling, int gamma,
        int max_tokens, bool draft_apart = true) {
  ModelDrafter drafter(draft.model, draft.cache);
  drafter.run_apart(draft_apart);
  SpeculativeEngine engine(target.model, target.cache, drafter);
  engine.set_pipeline({mode, 0.0});  // every session drafts ahead when the mode says so
  std::vector<SessionKey> keys;
  for (const auto& prompt : pipeline_prompts()) {
    SpeculationRequest request;
    request.prompt = prompt;
    request.max_new_tokens = max_tokens;
    request.sampling = sampling;
    request.gamma = GammaPolicy{false, gamma};
    keys.push_back(engine.add(request));
  }
  Outcome result;
  while (engine.waiting() + engine.running() > 0) {
    engine.step();
    const StepReport& step = engine.last_step();
    ++result.steps;
    if (step.shape != StepShape::plain) ++result.pipelined_steps;
    result.apart_sessions += step.apart_sessions;
  }
  for (SessionKey key : keys) {
    SpeculationResult r = engine.take(key);
    result.ahead_drafts += r.stats.ahead_drafts;
    result.ahead_hits += r.stats.ahead_hits;
    result.draft_tokens += r.stats.draft_tokens;
    result.accepted_tokens += r.stats.accepted_tokens;
    result.tokens.push_back(std::move(r.tokens));
  }
  EXPECT_EQ(target.cache.used_blocks(), 0);
  EXPECT_EQ(draft.cache.used_blocks(), 0);
  return result;
}

SamplingParams greedy_params() {
  SamplingParams p;
  p.temperature = 0;
  return p;
}

SamplingParams seeded_params(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.seed = seed;
  return p;
}

class PipelinedSpeculation : public ::testing::TestWithParam<PipelineMode> {};

TEST_P(PipelinedSpeculation, GreedyOutputIsIdenticalWithPipeliningOnOrOff) {
  auto backend = make_cpu_backend();
  Model target(*backend, pipeline_config(64, 2), 1);
  Model draft(*backend, pipeline_config(32, 1), 2);
  for (int gamma : {1, 3, 5}) {
    const Outcome off = run(target, draft, PipelineMode::off, greedy_params(), gamma, 30);
    const Outcome on = run(target, draft, GetParam(), greedy_params(), gamma, 30);
    EXPECT_EQ(on.tokens, off.tokens) << "gamma " << gamma;
    EXPECT_EQ(off.pipelined_steps, 0);
    EXPECT_GT(on.pipelined_steps, 0) << "the forced mode never ran";
  }
}

TEST_P(PipelinedSpeculation, SeededSampledOutputIsIdenticalWithPipeliningOnOrOff) {
  auto backend = make_cpu_backend();
  Model target(*backend, pipeline_config(64, 2), 1);
  Model draft(*backend, pipeline_config(32, 1), 2);
  for (uint64_t seed : {7u, 8u}) {
    const Outcome off = run(target, draft, PipelineMode::off, seeded_params(seed), 4, 30);
    const Outcome on = run(target, draft, GetParam(), seeded_params(seed), 4, 30);
    EXPECT_EQ(on.tokens, off.tokens) << "seed " << seed;
    EXPECT_GT(on.pipelined_steps, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelinedSpeculation,
                         ::testing::Values(PipelineMode::ahead, PipelineMode::pingpong),
                         [](const ::testing::TestParamInfo<PipelineMode>& param) {
                           return std::string(pipeline_mode_name(param.param));
                         });

TEST(PipelinedSpeculation, DraftingAheadOfAPerfectDraftAlwaysHits) {
  // The draft is the target: every block is accepted whole and the guess is
  // the target's own token, so after the first block every block is drafted
  // ahead and verified without drafting.
  auto backend = make_cpu_backend();
  Model target(*backend, pipeline_config(64, 2), 1);
  Model draft(*backend, pipeline_config(64, 2), 1);
  const Outcome off = run(target, draft, PipelineMode::off, greedy_params(), 3, 24);
  const Outcome on = run(target, draft, PipelineMode::ahead, greedy_params(), 3, 24);
  EXPECT_EQ(on.tokens, off.tokens);
  EXPECT_GT(on.ahead_drafts, 0);
  // Only the last block of each session (nothing left to draft ahead for)
  // and blocks cut by max_tokens may miss.
  EXPECT_GE(on.ahead_hits, on.ahead_drafts - 2 * static_cast<int>(pipeline_prompts().size()));
  EXPECT_EQ(on.steps, off.steps);  // same blocks, same steps: only the drafting moved
  // The ready blocks were the right ones: a perfect draft's blocks are
  // accepted whole, whenever they were drafted.
  EXPECT_EQ(on.accepted_tokens, on.draft_tokens);
  EXPECT_EQ(on.draft_tokens, off.draft_tokens);
}

TEST(PipelinedSpeculation, PingPongAlternatesTwoGroups) {
  auto backend = make_cpu_backend();
  Model target(*backend, pipeline_config(64, 2), 1);
  Model draft(*backend, pipeline_config(32, 1), 2);
  const Outcome on = run(target, draft, PipelineMode::pingpong, greedy_params(), 3, 30);
  // Half the decoding sessions sit each pass out while they draft.
  EXPECT_GT(on.apart_sessions, on.pipelined_steps);
}

TEST(PipelinedSpeculation, ADrafterThatCannotOverlapStepsPlainly) {
  // Without a device of its own, the draft would only take turns with the
  // target: automatic pipelining keeps plain steps.
  auto backend = make_cpu_backend();
  Model target(*backend, pipeline_config(64, 2), 1);
  Model draft(*backend, pipeline_config(32, 1), 2);
  const Outcome automatic = run(target, draft, PipelineMode::automatic, greedy_params(), 3, 20,
                            /*draft_apart=*/false);
  EXPECT_EQ(automatic.pipelined_steps, 0);
}

}  // namespace
}  // namespace tandem
