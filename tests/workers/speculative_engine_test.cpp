// The speculative engine on small random models: lossless by construction,
// whatever the drafter, γ, batch or sampling setting, on the CPU backend
// with f32 and with bf16 weights and on the CUDA backend with bf16 weights
// (skipped without a device): every one's forward pass is batch-invariant,
// so these hold exactly on each.
// On CUDA that takes set_batch_invariant(true): by default matmuls above 64
// rows go to cuBLAS, and a first target pass here (46 prompt tokens and 25
// drafts, 71 rows) would round differently from the draft's passes.
// Each backend is checked against itself (speculative against its own plain
// decoding), so the CUDA cases are named cuda_self_check.
#include "workers/speculation/speculative_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "tests/support/small_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"

namespace tandem {
namespace {

ModelConfig config_of(int hidden, int layers) {
  return test_support::small_llama(hidden, layers, 96, 256);
}

using Model = test_support::RandomModel;

struct BackendCase {
  const char* name;
  BackendKind kind;
  Dtype weights;
};
const BackendCase kBackendCases[] = {{"cpu", BackendKind::cpu, Dtype::f32},
                                     {"cpu_bf16", BackendKind::cpu, Dtype::bf16},
                                     {"cuda_self_check", BackendKind::cuda, Dtype::bf16}};

class SpeculativeEngineTest : public ::testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    if (GetParam().kind == BackendKind::cuda && cuda_device_count() == 0)
      GTEST_SKIP() << "skipped: no CUDA device";
  }
  std::unique_ptr<Backend> make_test_backend() const {
    auto backend = make_backend(GetParam().kind, /*device=*/0, GetParam().weights);
    backend->set_batch_invariant(true);  // the CPU always is
    return backend;
  }
};

std::vector<std::vector<int32_t>> engine_prompts() {
  return {{1, 2, 3, 4, 5}, {7}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 20},
          {50, 51, 52, 50, 51, 52, 50}, {3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43}};
}

std::vector<int32_t> plain(Model& target, const std::vector<int32_t>& prompt, int n,
                           SamplingParams sampling) {
  DecodeRequest request{prompt, n, sampling, {}};
  std::vector<int32_t> out;
  decode_plain(target.model, target.cache, request, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  return out;
}

// Runs every prompt as one batch through the engine; outputs in prompt order.
std::vector<SpeculationResult> speculative(Model& target, Drafter& drafter,
                                           const std::vector<std::vector<int32_t>>& all, int n,
                                           SamplingParams sampling, GammaPolicy gamma) {
  SpeculativeEngine engine(target.model, target.cache, drafter);
  std::vector<SessionKey> keys;
  for (const auto& prompt : all) {
    SpeculationRequest request;
    request.prompt = prompt;
    request.max_new_tokens = n;
    request.sampling = sampling;
    request.gamma = gamma;
    keys.push_back(engine.add(request));
  }
  engine.run_to_completion();
  std::vector<SpeculationResult> results;
  for (SessionKey key : keys) results.push_back(engine.take(key));
  return results;
}

TEST_P(SpeculativeEngineTest, GreedyOutputEqualsPlainGreedyForEveryGammaAndDrafter) {
  auto backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  Model draft(*backend, config_of(32, 1), 2);
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<std::vector<int32_t>> expected;
  for (const auto& prompt : engine_prompts()) expected.push_back(plain(target, prompt, 40, greedy));

  ModelDrafter model_drafter(draft.model, draft.cache);
  NgramDrafter ngram;
  NoDrafter none;
  for (Drafter* drafter : std::vector<Drafter*>{&model_drafter, &ngram, &none}) {
    for (int gamma = 1; gamma <= 8; ++gamma) {
      const auto results =
          speculative(target, *drafter, engine_prompts(), 40, greedy, GammaPolicy{false, gamma});
      for (size_t i = 0; i < results.size(); ++i)
        EXPECT_EQ(results[i].tokens, expected[i]) << drafter->name() << " gamma " << gamma;
    }
  }
  EXPECT_EQ(target.cache.used_blocks(), 0);
  EXPECT_EQ(draft.cache.used_blocks(), 0);
}

// The same with Qwen3 target and draft (per-head q/k norms, head_dim other
// than hidden / heads, the draft's a fourth of the target's): the norms keep
// every row's logits independent of the batch, so verification is exact.
TEST_P(SpeculativeEngineTest, Qwen3GreedyOutputEqualsPlainGreedy) {
  auto backend = make_test_backend();
  Model target(*backend, test_support::small_qwen3(64, 2, 96, 256), 3);
  Model draft(*backend, test_support::small_qwen3(32, 1, 96, 256), 4);
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<std::vector<int32_t>> expected;
  for (const auto& prompt : engine_prompts()) expected.push_back(plain(target, prompt, 40, greedy));
  ModelDrafter model_drafter(draft.model, draft.cache);
  for (int gamma : {1, 3, 8}) {
    const auto results =
        speculative(target, model_drafter, engine_prompts(), 40, greedy, GammaPolicy{false, gamma});
    for (size_t i = 0; i < results.size(); ++i)
      EXPECT_EQ(results[i].tokens, expected[i]) << "gamma " << gamma;
  }
  EXPECT_EQ(target.cache.used_blocks(), 0);
  EXPECT_EQ(draft.cache.used_blocks(), 0);
}

// The same with sparse MoE targets (Mixtral's 8 experts top-2; Qwen3-MoE's
// 16 top-4, normalised and not) and dense drafts: routing is per token, so
// a token's experts, and its logits, do not depend on its batch mates; and
// seeded sampling replays, alone or in a batch.
TEST_P(SpeculativeEngineTest, MoeTargetGreedyOutputEqualsPlainGreedyAndSeededReplays) {
  auto backend = make_test_backend();
  const ModelConfig targets[] = {test_support::small_mixtral(64, 2, 96, 256),
                                 test_support::small_qwen3_moe(64, 2, 96, 256),
                                 test_support::small_qwen3_moe(64, 2, 96, 256, 16, 4, false)};
  for (const ModelConfig& config : targets) {
    SCOPED_TRACE(config.architecture + (config.moe_norm_topk_prob ? " normalised" : ""));
    Model target(*backend, config, 3);
    Model draft(*backend, config.qk_norm ? test_support::small_qwen3(32, 1, 96, 256)
                                         : config_of(32, 1), 4);
    ModelDrafter drafter(draft.model, draft.cache);
    SamplingParams greedy;
    greedy.temperature = 0;
    for (size_t i = 0; i < engine_prompts().size(); ++i) {
      const std::vector<int32_t> expected = plain(target, engine_prompts()[i], 30, greedy);
      for (int gamma : {1, 4}) {
        const auto alone =
            speculative(target, drafter, {engine_prompts()[i]}, 30, greedy, GammaPolicy{false, gamma});
        EXPECT_EQ(alone[0].tokens, expected) << "prompt " << i << ", gamma " << gamma;
      }
    }
    SamplingParams sampled;
    sampled.temperature = 1.0f;
    sampled.seed = 2024;
    const auto batch = speculative(target, drafter, engine_prompts(), 25, sampled, GammaPolicy{false, 3});
    const auto again = speculative(target, drafter, engine_prompts(), 25, sampled, GammaPolicy{false, 3});
    for (size_t i = 0; i < engine_prompts().size(); ++i) {
      EXPECT_EQ(again[i].tokens, batch[i].tokens) << "prompt " << i;
      const auto alone =
          speculative(target, drafter, {engine_prompts()[i]}, 25, sampled, GammaPolicy{false, 3});
      EXPECT_EQ(alone[0].tokens, batch[i].tokens) << "prompt " << i;
    }
    EXPECT_EQ(target.cache.used_blocks(), 0);
    EXPECT_EQ(draft.cache.used_blocks(), 0);
  }
}

// The property the exact tests here rest on: a token's logits are the same
// bits whether its row is decoded alone, verified in a block, or computed
// beside another sequence's rows in the same forward pass (up to 64 rows on
// CUDA), with step graphs on and off.
TEST_P(SpeculativeEngineTest, ForwardIsBatchInvariant) {
  auto backend = make_test_backend();
  // Llama's attention, Qwen3's with its per-head q/k norms, and MoE layers
  // (Mixtral's, Qwen3-MoE's), whose routing is per token.
  for (const ModelConfig& config :
       {config_of(64, 2), test_support::small_qwen3(64, 2, 96, 256),
        test_support::small_mixtral(64, 2, 96, 256), test_support::small_qwen3_moe(64, 2, 96, 256)}) {
    SCOPED_TRACE(config.architecture);
    const int V = config.vocab_size;
    const std::vector<int32_t> prompt{1, 2, 3, 4, 5}, block{9, 8, 7, 6, 5, 4};
    const std::vector<int32_t> neighbour{3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43};
    // Every logit row of `prompt` then `block`, fed as `chunks` (with the
    // neighbour's prefill in the same pass as the second chunk when asked).
    auto logits_of = [&](const std::vector<std::vector<int32_t>>& chunks, bool with_neighbour) {
      Model m(*backend, config, 1);
      const SequenceId seq = m.cache.create_sequence();
      const SequenceId other = m.cache.create_sequence();
      std::vector<float> rows;
      for (size_t c = 0; c < chunks.size(); ++c) {
        const auto& chunk = chunks[c];
        EXPECT_TRUE(m.cache.reserve(seq, m.cache.length(seq) + static_cast<int>(chunk.size())));
        std::vector<SequenceStep> steps{{seq, chunk, static_cast<int>(chunk.size())}};
        if (with_neighbour && c == 1) {
          EXPECT_TRUE(m.cache.reserve(other, static_cast<int>(neighbour.size())));
          steps.push_back({other, neighbour, 1});
        }
        const float* logits = m.model.forward(steps, m.cache);
        std::vector<float> host(static_cast<size_t>(chunk.size()) * V);
        backend->download(logits, host);  // the sequence's rows come first
        rows.insert(rows.end(), host.begin(), host.end());
      }
      return rows;
    };
    std::vector<std::vector<int32_t>> one_by_one{prompt};
    for (int32_t t : block) one_by_one.push_back({t});
    for (bool graphs : {true, false}) {
      backend->set_step_graphs(graphs);
      const std::vector<float> alone = logits_of(one_by_one, false);
      for (bool with_neighbour : {false, true}) {
        const std::vector<float> verified = logits_of({prompt, block}, with_neighbour);
        ASSERT_EQ(verified.size(), alone.size());
        size_t differing = 0;
        double largest = 0;
        for (size_t i = 0; i < alone.size(); ++i) {
          differing += alone[i] != verified[i];
          largest = std::max(largest, std::abs(static_cast<double>(alone[i]) - verified[i]));
        }
        EXPECT_EQ(differing, 0u) << "of " << alone.size() << " logits (largest |difference| "
                                 << largest << "), step graphs " << graphs << ", neighbour "
                                 << with_neighbour;
      }
    }
  }
}

TEST_P(SpeculativeEngineTest, DraftEqualToTargetIsAlwaysAccepted) {
  // Same weights: the draft's q rows equal the target's p rows bit for bit
  // (the forward pass is batch-invariant), so min(1, p/q) = 1 everywhere.
  auto backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  Model draft(*backend, config_of(64, 2), 1);
  ModelDrafter drafter(draft.model, draft.cache);
  SamplingParams sampled;
  sampled.temperature = 1.0f;
  sampled.seed = 5;
  const auto results = speculative(target, drafter, engine_prompts(), 30, sampled, GammaPolicy{false, 5});
  for (const auto& r : results) {
    EXPECT_EQ(r.stats.accepted_tokens, r.stats.draft_tokens);
    EXPECT_NEAR(r.stats.alpha(), 1.0, 1e-5);
    EXPECT_EQ(r.tokens.size(), 30u);
  }
}

TEST_P(SpeculativeEngineTest, WithoutDraftsSampledOutputIsPlainDecodingExactly) {
  // γ = 0 draws the same Philox uniform at the same position from the same
  // standardized row as plain decoding.
  auto backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  NoDrafter none;
  SamplingParams sampled;
  sampled.temperature = 0.8f;
  sampled.top_k = 20;
  sampled.top_p = 0.9f;
  sampled.seed = 77;
  const auto results = speculative(target, none, engine_prompts(), 25, sampled, GammaPolicy{false, 4});
  for (size_t i = 0; i < results.size(); ++i)
    EXPECT_EQ(results[i].tokens, plain(target, engine_prompts()[i], 25, sampled));
}

TEST_P(SpeculativeEngineTest, SeededSessionsReplayWhateverTheBatch) {
  auto backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  Model draft(*backend, config_of(32, 1), 2);
  ModelDrafter drafter(draft.model, draft.cache);
  SamplingParams sampled;
  sampled.temperature = 1.0f;
  sampled.seed = 123;
  const auto batch = speculative(target, drafter, engine_prompts(), 30, sampled, GammaPolicy{false, 3});
  for (size_t i = 0; i < engine_prompts().size(); ++i) {
    const auto alone =
        speculative(target, drafter, {engine_prompts()[i]}, 30, sampled, GammaPolicy{false, 3});
    EXPECT_EQ(alone[0].tokens, batch[i].tokens) << "prompt " << i;
  }
}

TEST_P(SpeculativeEngineTest, ADraftOnABackendOfItsOwnGivesTheSameOutputs) {
  // The draft's q rows stay in its backend's memory and verification reads
  // them from there: in place on the CPU, copied device to device from
  // another CUDA backend (a draft GPU of its own; here the same GPU through
  // a second backend, which takes the same copy path). Drafting on its own
  // thread too (run_apart). Same seeds, same outputs as one shared backend.
  auto backend = make_test_backend();
  auto draft_backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  Model shared_draft(*backend, config_of(32, 1), 2);
  Model own_draft(*draft_backend, config_of(32, 1), 2);
  SamplingParams sampled;
  sampled.temperature = 0.9f;
  sampled.top_k = 40;
  sampled.seed = 321;
  ModelDrafter shared(shared_draft.model, shared_draft.cache);
  const auto expected = speculative(target, shared, engine_prompts(), 30, sampled, GammaPolicy{false, 4});
  ModelDrafter own(own_draft.model, own_draft.cache);
  own.run_apart(true);
  const auto got = speculative(target, own, engine_prompts(), 30, sampled, GammaPolicy{false, 4});
  int64_t drafted = 0;
  for (size_t i = 0; i < engine_prompts().size(); ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << "prompt " << i;
    EXPECT_EQ(got[i].stats.accepted_tokens, expected[i].stats.accepted_tokens) << "prompt " << i;
    drafted += got[i].stats.draft_tokens;
  }
  EXPECT_GT(drafted, 0);  // rows were drafted, so they were read across
}

TEST_P(SpeculativeEngineTest, StopTokensLengthAndCancellation) {
  auto backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  Model draft(*backend, config_of(64, 2), 1);  // always accepted: stops land mid-block
  ModelDrafter drafter(draft.model, draft.cache);
  SamplingParams greedy;
  greedy.temperature = 0;
  const auto free_run = plain(target, engine_prompts()[0], 20, greedy);

  SpeculativeEngine engine(target.model, target.cache, drafter);
  SpeculationRequest request;
  request.prompt = engine_prompts()[0];
  request.max_new_tokens = 20;
  request.sampling = greedy;
  request.gamma = GammaPolicy{false, 6};
  request.stop_ids = {free_run[4]};
  const SessionKey stopped = engine.add(request);
  request.stop_ids.clear();
  request.max_new_tokens = 7;
  const SessionKey limited = engine.add(request);
  request.max_new_tokens = 20;
  const SessionKey cancelled = engine.add(request);
  engine.step();
  const SpeculationResult cancel = engine.take(cancelled);
  EXPECT_EQ(cancel.finish, FinishReason::cancelled);
  engine.run_to_completion();

  const auto first_stop = std::find(free_run.begin(), free_run.end(), free_run[4]);
  const SpeculationResult stop = engine.take(stopped);
  EXPECT_EQ(stop.finish, FinishReason::stop);
  EXPECT_EQ(stop.tokens, std::vector<int32_t>(free_run.begin(), first_stop + 1));
  const SpeculationResult length = engine.take(limited);
  EXPECT_EQ(length.finish, FinishReason::length);
  EXPECT_EQ(length.tokens, std::vector<int32_t>(free_run.begin(), free_run.begin() + 7));
  EXPECT_EQ(target.cache.used_blocks(), 0);
  EXPECT_EQ(draft.cache.used_blocks(), 0);
}

TEST_P(SpeculativeEngineTest, BadRequestsAreRejectedNamingTheField) {
  auto backend = make_test_backend();
  Model target(*backend, config_of(64, 2), 1);
  NoDrafter none;
  SpeculativeEngine engine(target.model, target.cache, none);
  auto expect_field = [&](SpeculationRequest request, const std::string& field) {
    try {
      engine.add(std::move(request));
      FAIL() << "accepted a bad " << field;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
      EXPECT_EQ(std::string(error.what()).rfind(field, 0), 0u) << error.what();
    }
  };
  SpeculationRequest ok;
  ok.prompt = {1, 2};
  auto bad = ok;
  bad.prompt = {};
  expect_field(bad, "prompt");
  bad = ok;
  bad.prompt = {1, 96};
  expect_field(bad, "prompt");
  bad = ok;
  bad.max_new_tokens = 0;
  expect_field(bad, "max_tokens");
  bad = ok;
  bad.lenience = 0;
  expect_field(bad, "lenience");
  bad = ok;
  bad.gamma.gamma = -1;
  expect_field(bad, "gamma");
  EXPECT_EQ(engine.running(), 0u);
  EXPECT_EQ(target.cache.used_blocks(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, SpeculativeEngineTest, ::testing::ValuesIn(kBackendCases),
                         [](const ::testing::TestParamInfo<BackendCase>& param) {
                           return std::string(param.param.name);
                         });

}  // namespace
}  // namespace tandem
