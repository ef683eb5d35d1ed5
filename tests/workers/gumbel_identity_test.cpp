// The gumbel coupling (kernels/sampling_params.h) makes a seed mean one
// answer: a seeded session's tokens are the plain seeded decoding's, token
// for token, whatever the drafter (a draft model, n-gram lookup, none), γ
// (1..8 or auto), the batch it shares, pipelined drafting, or the logit
// processing it asks for. 50 prompts at temperature 0.7 and 1.0 with top_p
// 0.9, on small random models: the drafts really disagree with the target,
// so every step exercises a rejection.
//
// The identity holds whatever the draft proposes (a draft is kept only if it
// is the target's own draw), so it cannot see a drafter that draws with the
// wrong noise; DraftEqualToTargetIsAlwaysAccepted can: with the same weights
// the draft's race is the target's, so every draft must be kept. Under the
// rejection coupling the same matrix is not an identity: a different γ
// changes seeded outputs (what this file would catch if gumbel fell back to
// it).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/small_model.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using Model = test_support::RandomModel;
using Outputs = std::vector<std::vector<int32_t>>;

constexpr int kPrompts = 50;
constexpr int kNewTokens = 20;
constexpr size_t kBatch = 16;

ModelConfig identity_config(int hidden, int layers) {
  return test_support::small_llama(hidden, layers, 96, 256);
}

// 50 prompts of 1..12 tokens; every fifth repeats a short pattern, so that
// the n-gram drafter has something to propose.
const std::vector<std::vector<int32_t>>& prompts() {
  static const std::vector<std::vector<int32_t>> all = [] {
    std::vector<std::vector<int32_t>> out;
    uint32_t state = 12345;
    const auto next = [&state] {
      state = state * 1103515245u + 12345u;
      return static_cast<int32_t>((state >> 16) % 96);
    };
    for (int i = 0; i < kPrompts; ++i) {
      std::vector<int32_t> prompt;
      const int length = 1 + i % 12;
      if (i % 5 == 0) {
        const int32_t a = next(), b = next();
        for (int j = 0; j < length; ++j) prompt.push_back(j % 2 ? b : a);
      } else {
        for (int j = 0; j < length; ++j) prompt.push_back(next());
      }
      out.push_back(prompt);
    }
    return out;
  }();
  return all;
}

SamplingParams seeded_at(float temperature, int prompt, Coupling coupling = Coupling::gumbel) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_p = 0.9f;
  p.seed = 9000 + static_cast<uint64_t>(prompt);
  p.coupling = coupling;
  return p;
}

// Penalties, logit_bias and min_tokens (masking stop token 3), with min_p.
void add_processing(SpeculationRequest& r) {
  r.sampling.min_p = 0.05f;
  r.processing.presence_penalty = 0.5f;
  r.processing.frequency_penalty = 0.3f;
  r.processing.repetition_penalty = 1.3f;
  r.processing.bias_tokens = {5, 17, 40};
  r.processing.bias_values = {2.0f, -100.0f, 1.5f};
  r.processing.min_tokens = 4;
  r.stop_ids = {3};
}

struct EngineRun {
  Outputs tokens;
  int draft_tokens = 0, accepted_tokens = 0, pipelined_steps = 0;
};

// Each request through one engine, `batch` sessions at a time (a group runs
// to completion before the next joins; batch 1 = alone).
EngineRun run_engine(Model& target, const std::vector<Drafter*>& drafters,
               const std::vector<SpeculationRequest>& requests, size_t batch,
               PipelinePolicy pipeline = {}) {
  SpeculativeEngine engine(target.model, target.cache, drafters);
  engine.set_pipeline(pipeline);
  EngineRun run;
  for (size_t from = 0; from < requests.size(); from += batch) {
    std::vector<SessionKey> keys;
    for (size_t i = from; i < std::min(requests.size(), from + batch); ++i)
      keys.push_back(engine.add(requests[i]));
    while (engine.waiting() + engine.running() > 0) {
      engine.step();
      if (engine.last_step().shape != StepShape::plain) ++run.pipelined_steps;
    }
    for (SessionKey key : keys) {
      SpeculationResult r = engine.take(key);
      EXPECT_NE(r.finish, FinishReason::failed) << (r.error ? r.error->what() : "");
      run.draft_tokens += r.stats.draft_tokens;
      run.accepted_tokens += r.stats.accepted_tokens;
      run.tokens.push_back(std::move(r.tokens));
    }
  }
  EXPECT_EQ(target.cache.used_blocks(), 0);
  return run;
}

class GumbelIdentity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    backend_ = make_cpu_backend().release();
    target_ = new Model(*backend_, identity_config(64, 2), 1);
    draft_ = new Model(*backend_, identity_config(32, 1), 2);
  }
  static void TearDownTestSuite() {
    delete draft_;
    delete target_;
    delete backend_;
  }

  // The plain decoder's seeded outputs, shared across the cases.
  static const Outputs& plain(float temperature) {
    static std::map<float, Outputs> cache;
    auto it = cache.find(temperature);
    if (it != cache.end()) return it->second;
    Outputs out;
    for (int i = 0; i < kPrompts; ++i) {
      DecodeRequest request{prompts()[static_cast<size_t>(i)], kNewTokens, seeded_at(temperature, i), {}};
      std::vector<int32_t> tokens;
      decode_plain(target_->model, target_->cache, request, [&](int32_t t) {
        tokens.push_back(t);
        return true;
      });
      out.push_back(std::move(tokens));
    }
    return cache.emplace(temperature, std::move(out)).first->second;
  }

  static std::vector<SpeculationRequest> requests(float temperature, const std::string& drafter,
                                                  GammaPolicy gamma, bool processing = false,
                                                  Coupling coupling = Coupling::gumbel) {
    std::vector<SpeculationRequest> out;
    for (int i = 0; i < kPrompts; ++i) {
      SpeculationRequest r;
      r.prompt = prompts()[static_cast<size_t>(i)];
      r.max_new_tokens = kNewTokens;
      r.sampling = seeded_at(temperature, i, coupling);
      r.drafter = drafter;
      r.gamma = gamma;
      if (processing) add_processing(r);
      out.push_back(std::move(r));
    }
    return out;
  }

  static void expect_identical(const Outputs& got, const Outputs& expected,
                               const std::string& what) {
    ASSERT_EQ(got.size(), expected.size()) << what;
    int differ = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == expected[i]) continue;
      if (++differ <= 3) ADD_FAILURE() << what << ": prompt " << i << " differs from plain";
    }
    EXPECT_EQ(differ, 0) << what << ": outputs that differ from plain decoding";
  }

  static Backend* backend_;
  static Model* target_;
  static Model* draft_;
};

Backend* GumbelIdentity::backend_ = nullptr;
Model* GumbelIdentity::target_ = nullptr;
Model* GumbelIdentity::draft_ = nullptr;

struct Setting {
  std::string name;
  std::string drafter;
  GammaPolicy gamma;
};

std::vector<Setting> settings() {
  std::vector<Setting> out;
  for (int gamma = 1; gamma <= 8; ++gamma)
    out.push_back({"model gamma " + std::to_string(gamma), "model", {false, gamma}});
  out.push_back({"model gamma auto", "model", {true, 8}});
  out.push_back({"ngram gamma 4", "ngram", {false, 4}});
  out.push_back({"ngram gamma auto", "ngram", {true, 8}});
  out.push_back({"no drafter", "none", {false, 4}});
  out.push_back({"model gamma 0", "model", {false, 0}});
  return out;
}

TEST_F(GumbelIdentity, EverySpeculativeOutputIsThePlainSeededOutputAloneAndInABatch) {
  ModelDrafter model(draft_->model, draft_->cache);
  NgramDrafter ngram;
  NoDrafter none;
  const std::vector<Drafter*> drafters{&model, &ngram, &none};
  int drafted = 0, accepted = 0;
  for (float temperature : {0.7f, 1.0f}) {
    const Outputs& expected = plain(temperature);
    for (const Setting& s : settings()) {
      const std::string what = s.name + " at T " + std::to_string(temperature);
      const auto sent = requests(temperature, s.drafter, s.gamma);
      const EngineRun batched = run_engine(*target_, drafters, sent, kBatch);
      expect_identical(batched.tokens, expected, what + " in batches of 16");
      const EngineRun alone = run_engine(*target_, drafters, sent, 1);
      expect_identical(alone.tokens, expected, what + " alone");
      if (s.drafter != "none" && s.gamma.gamma > 0) {
        EXPECT_GT(batched.draft_tokens, 0) << what;
      }
      if (s.drafter == "model") {
        drafted += batched.draft_tokens;
        accepted += batched.accepted_tokens;
      }
    }
  }
  // Drafts were kept and drafts were refused: both sides of verification ran.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
  EXPECT_EQ(draft_->cache.used_blocks(), 0);
}

TEST_F(GumbelIdentity, PipelinedDraftingGivesThePlainSeededOutput) {
  ModelDrafter model(draft_->model, draft_->cache);
  model.run_apart(true);  // drafts on a thread of its own, during the target pass
  const std::vector<Drafter*> drafters{&model};
  for (float temperature : {0.7f, 1.0f}) {
    for (PipelineMode mode : {PipelineMode::ahead, PipelineMode::pingpong}) {
      for (GammaPolicy gamma : {GammaPolicy{false, 3}, GammaPolicy{true, 8}}) {
        const std::string what = std::string(pipeline_mode_name(mode)) + " gamma " +
                                 (gamma.automatic ? "auto" : std::to_string(gamma.gamma)) +
                                 " at T " + std::to_string(temperature);
        const EngineRun run = run_engine(*target_, drafters, requests(temperature, "model", gamma),
                                   kBatch, PipelinePolicy{mode, 0.0});
        expect_identical(run.tokens, plain(temperature), what);
        EXPECT_GT(run.pipelined_steps, 0) << what << ": the forced shape never ran";
      }
    }
  }
}

TEST_F(GumbelIdentity, LogitProcessingAppliesBeforeTheRaceOnBothSides) {
  // The plain decoder has no logit processing: the reference is the engine
  // with no drafter (γ 0 every step), one session at a time.
  ModelDrafter model(draft_->model, draft_->cache);
  ModelDrafter apart(draft_->model, draft_->cache);
  NgramDrafter ngram;
  NoDrafter none;
  const std::vector<Drafter*> drafters{&model, &ngram, &none};
  for (float temperature : {0.7f, 1.0f}) {
    const Outputs expected =
        run_engine(*target_, drafters, requests(temperature, "none", {false, 4}, true), 1).tokens;
    // The processing changed what is drawn (else this case would test nothing).
    int changed = 0;
    for (size_t i = 0; i < expected.size(); ++i) changed += expected[i] != plain(temperature)[i];
    EXPECT_GT(changed, kPrompts / 2);
    for (const Setting& s : settings()) {
      if (s.drafter == "model" && !s.gamma.automatic && s.gamma.gamma % 3 != 1) continue;  // 1, 4, 7
      const std::string what = s.name + " with processing at T " + std::to_string(temperature);
      const auto sent = requests(temperature, s.drafter, s.gamma, true);
      expect_identical(run_engine(*target_, drafters, sent, kBatch).tokens, expected, what);
    }
    apart.run_apart(true);
    const EngineRun pipelined = run_engine(*target_, {&apart}, requests(temperature, "model", {false, 3}, true),
                                     kBatch, PipelinePolicy{PipelineMode::ahead, 0.0});
    expect_identical(pipelined.tokens, expected, "ahead with processing");
    apart.run_apart(false);
  }
}

TEST_F(GumbelIdentity, LogprobsReportTheProcessedRowsWhateverTheGamma) {
  // The race changes which token is drawn, not how tokens are scored: the
  // same tokens get the same logprobs from a block of γ 4 as from γ 0.
  ModelDrafter model(draft_->model, draft_->cache);
  NoDrafter none;
  SpeculativeEngine engine(target_->model, target_->cache, std::vector<Drafter*>{&model, &none});
  std::vector<SessionKey> keys;
  for (const std::string drafter : {"model", "none"}) {
    for (int i = 0; i < 8; ++i) {
      SpeculationRequest r;
      r.prompt = prompts()[static_cast<size_t>(i)];
      r.max_new_tokens = kNewTokens;
      r.sampling = seeded_at(1.0f, i);
      r.drafter = drafter;
      r.logprobs = 2;
      keys.push_back(engine.add(r));
    }
  }
  engine.run_to_completion();
  std::vector<SpeculationResult> results;
  for (SessionKey key : keys) results.push_back(engine.take(key));
  for (size_t i = 0; i < 8; ++i) {
    const SpeculationResult& drafted = results[i];
    const SpeculationResult& alone = results[i + 8];
    EXPECT_EQ(drafted.tokens, alone.tokens) << "prompt " << i;
    ASSERT_EQ(drafted.logprobs.size(), alone.logprobs.size());
    for (size_t j = 0; j < drafted.logprobs.size(); ++j) {
      EXPECT_EQ(drafted.logprobs[j].token, drafted.tokens[j]);
      EXPECT_EQ(drafted.logprobs[j].logprob, alone.logprobs[j].logprob) << i << ", " << j;
      EXPECT_EQ(drafted.logprobs[j].top, alone.logprobs[j].top) << i << ", " << j;
    }
  }
}

TEST_F(GumbelIdentity, DraftEqualToTargetIsAlwaysAccepted) {
  // Same weights, same processed rows (the forward pass is batch-invariant)
  // and the same noise at each position: the draft's race is the target's,
  // so every draft is kept. A drafter drawing with other noise (another
  // purpose, or another position) is refused about as often as two
  // independent draws differ.
  Model copy(*backend_, identity_config(64, 2), 1);
  ModelDrafter self(copy.model, copy.cache);
  for (bool processing : {false, true}) {
    const EngineRun run =
        run_engine(*target_, {&self}, requests(1.0f, "model", {false, 5}, processing), kBatch);
    EXPECT_GT(run.draft_tokens, kPrompts * 2);
    EXPECT_EQ(run.accepted_tokens, run.draft_tokens) << "processing " << processing;
  }
}

TEST_F(GumbelIdentity, UnderRejectionGammaChangesSeededOutputs) {
  // The paper's coupling: the token at a position depends on what was
  // drafted there, so two γ give different seeded outputs (while γ 0 still
  // replays the plain decoder's inverse-CDF draws). This is the property the
  // gumbel coupling removes, and what the tests above would catch.
  ModelDrafter model(draft_->model, draft_->cache);
  NoDrafter none;
  const std::vector<Drafter*> drafters{&model, &none};
  const auto with = [&](const std::string& drafter, int gamma) {
    return run_engine(*target_, drafters,
                      requests(1.0f, drafter, {false, gamma}, false, Coupling::rejection), kBatch)
        .tokens;
  };
  const Outputs one = with("model", 1), five = with("model", 5), none_out = with("none", 4);
  int differ = 0, differ_from_gumbel = 0;
  for (int i = 0; i < kPrompts; ++i) {
    differ += one[static_cast<size_t>(i)] != five[static_cast<size_t>(i)];
    differ_from_gumbel += none_out[static_cast<size_t>(i)] != plain(1.0f)[static_cast<size_t>(i)];
    DecodeRequest request{prompts()[static_cast<size_t>(i)], kNewTokens,
                          seeded_at(1.0f, i, Coupling::rejection), {}};
    std::vector<int32_t> tokens;
    decode_plain(target_->model, target_->cache, request, [&](int32_t t) {
      tokens.push_back(t);
      return true;
    });
    EXPECT_EQ(none_out[static_cast<size_t>(i)], tokens) << "prompt " << i;
  }
  EXPECT_GT(differ, kPrompts / 2);
  // The two couplings draw differently from the same seed.
  EXPECT_GT(differ_from_gumbel, kPrompts / 2);
}

TEST_F(GumbelIdentity, LenientVerificationIsRefusedWithTheGumbelCoupling) {
  NoDrafter none;
  SpeculativeEngine engine(target_->model, target_->cache, none);
  SpeculationRequest r;
  r.prompt = {1, 2, 3};
  r.sampling = seeded_at(1.0f, 0);
  r.lenience = 0.5f;
  try {
    engine.add(r);
    ADD_FAILURE() << "added";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("lenience"), std::string::npos) << e.what();
  }
  EXPECT_EQ(engine.waiting(), 0);
  r.sampling.temperature = 0.0f;  // greedy ignores the coupling
  engine.add(r);
  r.sampling = seeded_at(1.0f, 0, Coupling::rejection);
  engine.add(r);
  EXPECT_EQ(engine.waiting(), 2);
}

}  // namespace
}  // namespace tandem
