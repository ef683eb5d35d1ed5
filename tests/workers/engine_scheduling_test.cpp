// The engine as a scheduler, on small random models: admission, chunked
// prefill, preemption, cancellation, drafter choice, calibration and the
// step report. Whatever the scheduling, outputs must be what each request
// gives alone (the tiny-pair version is tiny_scheduling_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "common/error.h"
#include "tests/support/expect_error.h"
#include "tests/support/small_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

constexpr int kVocab = 96;
constexpr int kBlockSize = 8;

ModelConfig scheduling_config(int hidden, int layers) {
  return test_support::small_llama(hidden, layers, kVocab, 256);
}

// A random model with a cache of `blocks` blocks of kBlockSize positions.
struct CachedModel : test_support::RandomModel {
  CachedModel(Backend& backend, const ModelConfig& config, uint64_t seed, int blocks)
      : RandomModel(backend, config, seed, blocks, kBlockSize) {}
};

// A target and a draft model on one backend; more target caches on demand.
struct Pair {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  CachedModel target{*backend, scheduling_config(64, 2), 1, 256};
  CachedModel draft{*backend, scheduling_config(32, 1), 2, 512};
  ModelDrafter model_drafter{draft.model, draft.cache};
  NgramDrafter ngram;
  PagedKvCache cache_of(int blocks) {
    return PagedKvCache(target.model.config(), blocks, kBlockSize, *backend);
  }
};

std::vector<int32_t> prompt_of(int length, int salt) {
  std::vector<int32_t> prompt(static_cast<size_t>(length));
  for (int i = 0; i < length; ++i) prompt[static_cast<size_t>(i)] = (salt * 7 + i * (salt % 5 + 3)) % kVocab;
  return prompt;
}

SamplingParams greedy() { return {.temperature = 0.0f}; }
SamplingParams seeded(uint64_t seed) {
  return {.temperature = 0.9f, .top_k = 30, .top_p = 0.95f, .seed = seed};
}

SpeculationRequest request_of(std::vector<int32_t> prompt, int max_new, SamplingParams sampling,
                              int gamma, std::string drafter = "") {
  SpeculationRequest r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = max_new;
  r.sampling = sampling;
  r.gamma = GammaPolicy{false, gamma};
  r.drafter = std::move(drafter);
  return r;
}

std::vector<Drafter*> both(Pair& p) { return {&p.model_drafter, &p.ngram}; }

// Each request alone in a fresh engine with the pair's ample cache.
std::vector<std::vector<int32_t>> alone(Pair& p, const std::vector<SpeculationRequest>& requests) {
  std::vector<std::vector<int32_t>> out;
  for (const SpeculationRequest& r : requests) {
    SpeculativeEngine engine(p.target.model, p.target.cache, both(p));
    const SessionKey key = engine.add(r);
    engine.run_to_completion();
    out.push_back(engine.take(key).tokens);
  }
  return out;
}

// All requests in one engine; checks every step's report on the way.
struct BatchRun {
  std::vector<SpeculationResult> results;
  uint64_t preemptions = 0;
  int max_target_tokens = 0;
  size_t max_running = 0;
  int steps = 0;
};

BatchRun run_together(Pair& p, PagedKvCache& cache, const std::vector<SpeculationRequest>& requests,
                      EngineOptions limits) {
  SpeculativeEngine engine(p.target.model, cache, both(p), limits);
  std::vector<SessionKey> keys;
  for (const SpeculationRequest& r : requests) keys.push_back(engine.add(r));
  BatchRun run;
  while (engine.running() + engine.waiting() > 0) {
    engine.step();
    ++run.steps;
    const StepReport& report = engine.last_step();
    int fed = 0;
    for (const StepSessionReport& s : report.sessions) {
      fed += s.fed;
      EXPECT_EQ(s.fed, s.prefill_tokens + (s.verified ? s.gamma + (s.prefill_tokens ? 0 : 1) : 0))
          << "session " << s.key;
      EXPECT_LE(s.accepted, s.gamma);
      EXPECT_LE(s.emitted, s.accepted + 1);
    }
    EXPECT_EQ(fed, report.target_tokens);
    // The pass's parts (docs/serving.md, the per-step split) lie inside it,
    // and a pass that verified blocks spent time verifying them.
    const bool verified = std::any_of(report.sessions.begin(), report.sessions.end(),
                                      [](const StepSessionReport& s) { return s.verified; });
    if (verified) {
      EXPECT_GT(report.verify_seconds, 0.0);
    }
    EXPECT_LE(report.forward_seconds + report.verify_seconds, report.target_seconds);
    run.max_target_tokens = std::max(run.max_target_tokens, report.target_tokens);
    run.max_running = std::max(run.max_running, engine.running());
  }
  run.preemptions = engine.preemptions();
  for (SessionKey key : keys) run.results.push_back(engine.take(key));
  EXPECT_EQ(cache.free_blocks(), cache.num_blocks());
  return run;
}

TEST(EngineScheduling, AdmissionHonoursMaxRunningFirstInFirstOut) {
  Pair p;
  SpeculativeEngine engine(p.target.model, p.target.cache, both(p), {.max_running = 2});
  std::vector<SessionKey> keys;
  for (int i = 0; i < 5; ++i)
    keys.push_back(engine.add(request_of(prompt_of(6 + i, i), 4 + 3 * i, greedy(), 3)));
  EXPECT_EQ(engine.waiting(), 5u);
  EXPECT_EQ(engine.running(), 0u);
  EXPECT_EQ(engine.state(keys[0]), SessionState::waiting);
  EXPECT_EQ(engine.prompt_length(keys[3]), 9);
  engine.step();
  EXPECT_EQ(engine.running(), 2u);
  EXPECT_EQ(engine.waiting(), 3u);
  EXPECT_TRUE(engine.admitted(keys[0]));
  EXPECT_TRUE(engine.admitted(keys[1]));
  EXPECT_FALSE(engine.admitted(keys[2]));
  std::vector<SessionKey> admission_order;
  auto note_admissions = [&] {
    for (SessionKey key : keys)
      if (engine.state(key) != SessionState::waiting &&
          std::find(admission_order.begin(), admission_order.end(), key) == admission_order.end())
        admission_order.push_back(key);
  };
  note_admissions();
  while (engine.running() + engine.waiting() > 0) {
    engine.step();
    EXPECT_LE(engine.running(), 2u);
    EXPECT_LE(engine.last_step().sessions.size(), 2u);
    note_admissions();
  }
  EXPECT_EQ(admission_order, keys);  // first in, first out
  for (SessionKey key : keys) {
    EXPECT_TRUE(engine.finished(key));
    EXPECT_EQ(engine.take(key).finish, FinishReason::length);
  }
}

TEST(EngineScheduling, AdmissionWaitsForKvHeadroom) {
  // 12 blocks of 8: a 40-token prompt's first chunk takes 5. The second
  // session needs 5 + 5 (the first's, promised this step) + 1 headroom = 11
  // blocks; a third would need 17.
  Pair p;
  PagedKvCache small = p.cache_of(12);
  SpeculativeEngine engine(p.target.model, small, both(p));
  std::vector<SpeculationRequest> requests;
  for (int i = 0; i < 3; ++i) requests.push_back(request_of(prompt_of(40, i), 4, greedy(), 2));
  std::vector<SessionKey> keys;
  for (const auto& r : requests) keys.push_back(engine.add(r));
  engine.step();
  EXPECT_EQ(engine.running(), 2u);
  EXPECT_EQ(engine.waiting(), 1u);
  EXPECT_EQ(engine.state(keys[2]), SessionState::waiting);
  engine.run_to_completion();
  const auto expected = alone(p, requests);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(engine.take(keys[i]).tokens, expected[i]);
}

TEST(EngineScheduling, TakeCancelsWaitingAndRunningSessionsAndFreesTheirBlocks) {
  Pair p;
  SpeculativeEngine engine(p.target.model, p.target.cache, both(p), {.max_running = 2});
  const SessionKey a = engine.add(request_of(prompt_of(30, 1), 50, greedy(), 4, "model"));
  const SessionKey b = engine.add(request_of(prompt_of(20, 2), 50, seeded(3), 4, "model"));
  const SessionKey c = engine.add(request_of(prompt_of(10, 3), 50, greedy(), 4));
  engine.step();
  engine.step();
  ASSERT_TRUE(engine.admitted(a));
  ASSERT_TRUE(engine.admitted(b));
  ASSERT_EQ(engine.state(c), SessionState::waiting);
  EXPECT_GT(p.target.cache.used_blocks(), 0);
  EXPECT_GT(p.draft.cache.used_blocks(), 0);

  const SpeculationResult waiting = engine.take(c);
  EXPECT_EQ(waiting.finish, FinishReason::cancelled);
  EXPECT_TRUE(waiting.tokens.empty());
  EXPECT_EQ(engine.waiting(), 0u);
  const SpeculationResult running = engine.take(a);
  EXPECT_EQ(running.finish, FinishReason::cancelled);
  EXPECT_FALSE(running.tokens.empty());
  EXPECT_EQ(engine.running(), 1u);
  EXPECT_THROW(engine.output(a), Error);  // taken sessions are gone
  engine.take(b);
  EXPECT_EQ(engine.running(), 0u);
  EXPECT_EQ(p.target.cache.free_blocks(), p.target.cache.num_blocks());
  EXPECT_EQ(p.draft.cache.used_blocks(), 0);
  engine.step();  // nothing left: a no-op
  EXPECT_TRUE(engine.last_step().sessions.empty());
}

TEST(EngineScheduling, EachRequestUsesTheDrafterItNames) {
  Pair p;
  NoDrafter none;
  SpeculativeEngine engine(p.target.model, p.target.cache,
                           std::vector<Drafter*>{&p.ngram, &p.model_drafter, &none});
  EXPECT_EQ(engine.drafter_names(), (std::vector<std::string>{"ngram", "model", "none"}));
  std::vector<SpeculationRequest> requests = {
      request_of(prompt_of(12, 1), 24, greedy(), 3, "model"),
      request_of(prompt_of(12, 2), 24, greedy(), 3, "ngram"),
      request_of(prompt_of(12, 3), 24, greedy(), 3, ""),  // the first: ngram
      request_of(prompt_of(12, 4), 24, seeded(9), 3, "none")};
  std::vector<SessionKey> keys;
  for (const auto& r : requests) keys.push_back(engine.add(r));
  engine.step();
  const std::vector<std::string> expected_names = {"model", "ngram", "ngram", "none"};
  ASSERT_EQ(engine.last_step().sessions.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(engine.last_step().sessions[i].key, keys[i]);
    EXPECT_EQ(engine.last_step().sessions[i].drafter, expected_names[i]);
  }
  EXPECT_EQ(engine.last_step().sessions[0].gamma, 3);  // the model always proposes γ
  EXPECT_EQ(engine.last_step().sessions[3].gamma, 0);  // "none" never does
  engine.run_to_completion();
  EXPECT_GT(engine.cost_ratio("model"), 0.0);
  EXPECT_EQ(engine.cost_ratio("none"), 0.0);
  EXPECT_THROW(engine.cost_ratio("bogus"), Error);
  for (size_t i = 0; i < 3; ++i) {  // greedy: each equals plain decoding
    DecodeRequest plain{requests[i].prompt, 24, greedy(), {}};
    std::vector<int32_t> expected;
    decode_plain(p.target.model, p.target.cache, plain, [&](int32_t t) {
      expected.push_back(t);
      return true;
    });
    EXPECT_EQ(engine.take(keys[i]).tokens, expected) << expected_names[i];
  }
  engine.take(keys[3]);

  test_support::expect_invalid(
      [&] { engine.add(request_of(prompt_of(5, 1), 4, greedy(), 2, "eagle")); },
      "speculation.drafter");
  EXPECT_EQ(engine.waiting(), 0u);
  test_support::expect_invalid(
      [&] {
        SpeculativeEngine twice(p.target.model, p.target.cache,
                                std::vector<Drafter*>{&p.ngram, &p.ngram});
      },
      "unique");
}

TEST(EngineScheduling, ChunkedPrefillKeepsOutputsAndTheBudget) {
  // 100-token prompts through a budget of 16 tokens per pass: four sessions
  // at γ = 3 need at most 16 for their verification blocks, so every pass
  // can and must stay within the budget.
  Pair p;
  std::vector<SpeculationRequest> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back(
        request_of(prompt_of(100, i), 20, i % 2 ? seeded(100 + i) : greedy(), 3,
                   i < 2 ? "model" : "ngram"));
  }
  const BatchRun unchunked = run_together(p, p.target.cache, requests, {});
  const BatchRun chunked = run_together(p, p.target.cache, requests, {.step_token_budget = 16});
  EXPECT_GT(unchunked.max_target_tokens, 16);
  EXPECT_LE(chunked.max_target_tokens, 16);
  EXPECT_GT(chunked.steps, unchunked.steps);
  const auto expected = alone(p, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(unchunked.results[i].tokens, expected[i]) << "session " << i;
    EXPECT_EQ(chunked.results[i].tokens, expected[i]) << "session " << i;
    EXPECT_EQ(chunked.results[i].stats.prefill_tokens, 100);  // each prompt token once
    EXPECT_EQ(chunked.results[i].tokens.size(), 20u);
  }
}

TEST(EngineScheduling, PreemptedSessionsRecomputeToTheSameOutputs) {
  // Ten sessions that need ~8 blocks each share 24: the youngest are
  // preempted and recomputed again and again.
  Pair p;
  PagedKvCache small = p.cache_of(24);
  std::vector<SpeculationRequest> requests;
  for (int i = 0; i < 10; ++i) {
    requests.push_back(request_of(prompt_of(8 + 3 * i, i), 40,
                                  i % 2 ? seeded(500 + i) : greedy(), 2 + i % 3,
                                  i % 3 ? "model" : "ngram"));
  }
  const BatchRun run = run_together(p, small, requests, {});
  EXPECT_GT(run.preemptions, 0u);
  const auto expected = alone(p, requests);
  int preempted_sessions = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(run.results[i].tokens, expected[i]) << "session " << i;
    EXPECT_EQ(run.results[i].finish, FinishReason::length);
    preempted_sessions += run.results[i].stats.preemptions > 0;
  }
  EXPECT_GT(preempted_sessions, 0);
  EXPECT_EQ(p.draft.cache.used_blocks(), 0);
}

TEST(EngineScheduling, ASessionTheWholeCacheCannotHoldIsRefusedOneThatFitsRunsToTheEdge) {
  // 4 blocks of 8 = 32 positions: a 20-token prompt can grow to 32 cached
  // tokens, then emit one more (13 in all); its drafts are dropped at the
  // edge first. Asking for more is refused when added, never cut short.
  Pair p;
  PagedKvCache small = p.cache_of(4);
  SpeculativeEngine engine(p.target.model, small, both(p));
  test_support::expect_invalid(
      [&] { engine.add(request_of(prompt_of(20, 1), 50, greedy(), 4, "model")); },
      "max_tokens");
  const SpeculationRequest request = request_of(prompt_of(20, 1), 13, greedy(), 4, "model");
  const SessionKey key = engine.add(request);
  engine.run_to_completion();
  const SpeculationResult result = engine.take(key);
  EXPECT_EQ(result.finish, FinishReason::length);
  ASSERT_EQ(result.tokens.size(), 32u - 20u + 1u);
  const auto expected = alone(p, {request})[0];
  EXPECT_TRUE(std::equal(result.tokens.begin(), result.tokens.end(), expected.begin()));
  EXPECT_EQ(small.free_blocks(), small.num_blocks());
  // A prompt longer than the whole cache is refused up front.
  test_support::expect_invalid(
      [&] { engine.add(request_of(prompt_of(33, 1), 4, greedy(), 2)); }, "prompt");
}

TEST(EngineScheduling, CalibrationTimesPassesAndLeavesTheCacheEmpty) {
  Pair p;
  // Budget 512 is past the model's context of 256: split over sequences.
  SpeculativeEngine engine(p.target.model, p.target.cache, both(p),
                           {.step_token_budget = 512});
  EXPECT_FALSE(engine.cost_model().calibrated());
  engine.calibrate();
  EXPECT_TRUE(engine.cost_model().calibrated());
  EXPECT_EQ(p.target.cache.free_blocks(), p.target.cache.num_blocks());
  EXPECT_GT(engine.cost_model().seconds(1), 0.0);
  EXPECT_GT(engine.cost_model().seconds(512), engine.cost_model().seconds(1));
  EXPECT_GE(engine.cost_model().relative_cost(8, 4), 1.0);

  // A cache smaller than the budget: calibrated up to what fits.
  PagedKvCache small = p.cache_of(8);
  SpeculativeEngine cramped(p.target.model, small, both(p), {.step_token_budget = 512});
  cramped.calibrate();
  EXPECT_TRUE(cramped.cost_model().calibrated());
  EXPECT_EQ(small.free_blocks(), small.num_blocks());

  // Not while serving.
  const SessionKey key = engine.add(request_of(prompt_of(6, 1), 30, greedy(), 2));
  engine.step();
  EXPECT_THROW(engine.calibrate(), Error);
  engine.take(key);
}

}  // namespace
}  // namespace tandem
