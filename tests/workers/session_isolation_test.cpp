// Failure isolation in the engine: sixteen sessions in flight, one of them
// poisoned (a sampling parameter the ops refuse, reaching the engine
// without the API's checks; logits that are not finite, forced through a
// backend that turns one token's embedding into NaN, in the target or in
// the draft, also in prefill rows scored for prompt logprobs). The
// poisoned session ends alone with its own error; the
// other fifteen, greedy and seeded, finish with exactly the tokens they
// produce alone. On the CPU backend, and on CUDA with the batch-invariant
// matmuls (skipped without a device; compared with itself, hence the
// name cuda_self_check).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/support/forwarding_backend.h"
#include "tests/support/small_model.h"
#include "workers/speculation/block_verification.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

constexpr int kIsolationVocab = 512;  // large, so that some token appears in no other session
constexpr int kSessions = 16;
constexpr int kPoisoned = 5;

ModelConfig isolation_config(int hidden, int layers) {
  return test_support::small_llama(hidden, layers, kIsolationVocab, 256);
}

// Rows of the embedding of `poison` (a token id) come out NaN: everything
// the model computes from that position on, for that sequence alone, is
// NaN too (attention reads only a sequence's own positions). It also
// records every token id the model embedded: drafts the target rejected
// pass through it too, so a poison must be none of them.
class PoisonBackend final : public test_support::ForwardingBackend {
 public:
  PoisonBackend(Backend& inner, int hidden) : ForwardingBackend(inner), hidden_(hidden) {}
  int32_t poison = -1;
  std::set<int32_t> embedded;

  void embedding(std::span<const int32_t> token_ids, WeightView table, int C,
                 float* out) override {
    ForwardingBackend::embedding(token_ids, table, C, out);
    if (C != hidden_) return;  // the op doubles as a row gather of logits and q rows
    embedded.insert(token_ids.begin(), token_ids.end());
    const std::vector<float> nan_row(static_cast<size_t>(C),
                                     std::numeric_limits<float>::quiet_NaN());
    for (size_t t = 0; t < token_ids.size(); ++t)
      if (token_ids[t] == poison) upload(nan_row, out + t * static_cast<size_t>(C));
  }

 private:
  int hidden_;
};

class SessionIsolation : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    if (GetParam() == BackendKind::cuda && cuda_device_count() == 0)
      GTEST_SKIP() << "skipped: no CUDA device";
    const bool cpu = GetParam() == BackendKind::cpu;
    backend = make_backend(GetParam(), /*device=*/0, cpu ? Dtype::f32 : Dtype::bf16);
    backend->set_batch_invariant(true);  // the CPU always is
    target_backend = std::make_unique<PoisonBackend>(*backend, 64);
    draft_backend = std::make_unique<PoisonBackend>(*backend, 32);
    target = std::make_unique<test_support::RandomModel>(*target_backend, isolation_config(64, 2), 1);
    draft = std::make_unique<test_support::RandomModel>(*draft_backend, isolation_config(32, 1), 2);
    model_drafter = std::make_unique<ModelDrafter>(draft->model, draft->cache);
    for (int i = 0; i < kSessions; ++i) {
      SpeculationRequest r;
      for (int j = 0; j < 6 + i % 7; ++j) r.prompt.push_back((31 * i + 17 * j + 3) % kIsolationVocab);
      r.max_new_tokens = 24;
      if (i % 2) r.sampling = {.temperature = 0.9f, .top_k = 50, .top_p = 0.9f, .seed = 900u + i};
      else r.sampling.temperature = 0.0f;
      r.gamma = GammaPolicy{false, 1 + i % 4};
      r.drafter = i % 5 == 4 ? "ngram" : "model";
      requests.push_back(r);
    }
    for (const SpeculationRequest& r : requests) alone.push_back(run({r})[0]);
  }

  std::vector<Drafter*> drafters() { return {model_drafter.get(), &ngram}; }

  // The requests in one engine, all in flight at once; results in order.
  std::vector<SpeculationResult> run(const std::vector<SpeculationRequest>& all) {
    SpeculativeEngine engine(target->model, target->cache, drafters());
    std::vector<SessionKey> keys;
    for (const SpeculationRequest& r : all) keys.push_back(engine.add(r));
    engine.run_to_completion();
    std::vector<SpeculationResult> results;
    for (SessionKey key : keys) results.push_back(engine.take(key));
    EXPECT_EQ(target->cache.used_blocks(), 0);
    EXPECT_EQ(draft->cache.used_blocks(), 0);
    return results;
  }

  // A token id that neither model embedded in the runs alone: in no
  // prompt, no output, and no draft, accepted or not. (On CUDA a draft the
  // CPU never proposes can be; a poisoned draft ends its session.)
  int32_t unused_token() const {
    std::set<int32_t> used = target_backend->embedded;
    used.insert(draft_backend->embedded.begin(), draft_backend->embedded.end());
    for (int i = 0; i < kSessions; ++i) {
      used.insert(requests[i].prompt.begin(), requests[i].prompt.end());
      used.insert(alone[i].tokens.begin(), alone[i].tokens.end());
    }
    for (int32_t t = kIsolationVocab - 1; t >= 0; --t)
      if (!used.count(t)) return t;
    ADD_FAILURE() << "every token id is used";
    return 0;
  }

  // Sixteen together, one poisoned: it fails alone with `message`, the
  // others equal their runs alone.
  void expect_only_poisoned_fails(const std::vector<SpeculationRequest>& all,
                                  ErrorKind kind, const std::string& message) {
    const std::vector<SpeculationResult> got = run(all);
    int sampled = 0, drafted = 0;
    for (int i = 0; i < kSessions; ++i) {
      if (i == kPoisoned) continue;
      EXPECT_EQ(got[i].finish, alone[i].finish) << "session " << i;
      EXPECT_EQ(got[i].tokens, alone[i].tokens) << "session " << i;
      EXPECT_FALSE(got[i].error) << "session " << i;
      sampled += !requests[i].sampling.greedy();
      drafted += got[i].stats.draft_tokens > 0;
    }
    EXPECT_GT(sampled, 0);
    EXPECT_GT(drafted, 0);
    const SpeculationResult& poisoned = got[kPoisoned];
    EXPECT_EQ(poisoned.finish, FinishReason::failed);
    ASSERT_TRUE(poisoned.error.has_value());
    EXPECT_EQ(poisoned.error->kind(), kind);
    EXPECT_NE(std::string(poisoned.error->what()).find(message), std::string::npos)
        << poisoned.error->what();
  }

  std::unique_ptr<Backend> backend;
  std::unique_ptr<PoisonBackend> target_backend, draft_backend;
  std::unique_ptr<test_support::RandomModel> target, draft;
  std::unique_ptr<ModelDrafter> model_drafter;
  NgramDrafter ngram;
  std::vector<SpeculationRequest> requests;
  std::vector<SpeculationResult> alone;
};

TEST_P(SessionIsolation, ABadParameterAddedWhileOthersRunEndsOnlyThatRequest) {
  // top_p 0 is what a request's 1e-300 becomes as a float: the engine
  // refuses it when the session is added, naming the field, and the
  // sessions already in flight go on as if it had never been sent.
  SpeculativeEngine engine(target->model, target->cache, drafters());
  std::vector<SessionKey> keys(kSessions);
  for (int i = 0; i < kSessions; ++i)
    if (i != kPoisoned) keys[i] = engine.add(requests[i]);
  engine.step();
  engine.step();
  for (const char* field : {"top_p", "temperature", "top_k"}) {
    SpeculationRequest bad = requests[kPoisoned];
    if (std::string(field) == "top_p") bad.sampling.top_p = 0.0f;
    if (std::string(field) == "temperature") bad.sampling.temperature = -1.0f;
    if (std::string(field) == "top_k") bad.sampling.top_k = -2;
    try {
      engine.add(bad);
      ADD_FAILURE() << "accepted a bad " << field;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
      EXPECT_EQ(std::string(error.what()).rfind(std::string(field) + ": ", 0), 0u) << error.what();
    }
  }
  engine.run_to_completion();
  for (int i = 0; i < kSessions; ++i) {
    if (i == kPoisoned) continue;
    const SpeculationResult result = engine.take(keys[i]);
    EXPECT_EQ(result.tokens, alone[i].tokens) << "session " << i;
  }
  EXPECT_EQ(target->cache.used_blocks(), 0);
}

TEST_P(SessionIsolation, NonFiniteTargetLogitsEndOnlyThatRequest) {
  target_backend->poison = unused_token();
  std::vector<SpeculationRequest> all = requests;
  all[kPoisoned].prompt.push_back(target_backend->poison);
  expect_only_poisoned_fails(all, ErrorKind::internal,
                             "non-finite logits for this request: the target model's");
}

TEST_P(SessionIsolation, NonFiniteLogitsInAScoredPrefillChunkEndOnlyThatRequest) {
  // Prompt scores (echo) come from prefill rows that no block verifies:
  // with chunks of 4 tokens, the poisoned session's first chunk already
  // holds NaN rows. It ends there, before a NaN score is reported.
  target_backend->poison = unused_token();
  std::vector<SpeculationRequest> all = requests;
  SpeculationRequest& poisoned = all[kPoisoned];
  poisoned.prompt.insert(poisoned.prompt.begin() + 1, target_backend->poison);
  poisoned.prompt_logprobs = true;
  SpeculativeEngine engine(target->model, target->cache, drafters(), {.step_token_budget = 4});
  std::vector<SessionKey> keys;
  for (const SpeculationRequest& r : all) keys.push_back(engine.add(r));
  engine.run_to_completion();
  for (int i = 0; i < kSessions; ++i) {
    const SpeculationResult got = engine.take(keys[static_cast<size_t>(i)]);
    if (i != kPoisoned) {
      EXPECT_EQ(got.tokens, alone[i].tokens) << "session " << i;
      continue;
    }
    EXPECT_EQ(got.finish, FinishReason::failed);
    ASSERT_TRUE(got.error.has_value());
    EXPECT_NE(std::string(got.error->what()).find("non-finite logits for this request"),
              std::string::npos) << got.error->what();
    for (const TokenLogprob& scored : got.prompt_logprobs)
      EXPECT_TRUE(std::isfinite(scored.logprob)) << "a NaN prompt score was reported";
    EXPECT_TRUE(got.tokens.empty());
  }
  EXPECT_EQ(target->cache.used_blocks(), 0);
}

TEST_P(SessionIsolation, NonFiniteDraftLogitsEndOnlyThatRequest) {
  draft_backend->poison = unused_token();
  std::vector<SpeculationRequest> all = requests;
  all[kPoisoned].prompt.push_back(draft_backend->poison);
  all[kPoisoned].drafter = "model";
  expect_only_poisoned_fails(all, ErrorKind::internal,
                             "non-finite logits for this request: the draft model's");
}

TEST_P(SessionIsolation, ASessionThatCanNeverFitTheKvCacheIsRefusedWhenAdded) {
  // 4 blocks of 8 = 32 positions: a 20-token prompt can end with 13 new
  // tokens (32 cached, the last never fed); 14 would be cut short, so the
  // engine refuses it, naming max_tokens, the positions and the key.
  PagedKvCache small(target->model.config(), 4, 8, *target_backend);
  SpeculativeEngine engine(target->model, small, drafters());
  SpeculationRequest request = requests[0];
  request.prompt.assign(20, 7);
  request.max_new_tokens = 14;
  try {
    engine.add(request);
    ADD_FAILURE() << "accepted a request the cache can never hold";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("max_tokens: ", 0), 0u) << what;
    EXPECT_NE(what.find("need 33 positions"), std::string::npos) << what;
    EXPECT_NE(what.find("holds 32"), std::string::npos) << what;
    EXPECT_NE(what.find("scheduler.kv_blocks"), std::string::npos) << what;
  }
  request.max_new_tokens = 13;
  const SessionKey key = engine.add(request);
  engine.run_to_completion();
  const SpeculationResult result = engine.take(key);
  EXPECT_EQ(result.finish, FinishReason::length);
  EXPECT_EQ(result.tokens.size(), 13u);
  EXPECT_EQ(small.used_blocks(), 0);
}

// What a target rank and a draft rank do with one session's fault (the
// cluster path: it comes back in TargetResult and DraftReply and ends that
// session on the coordinator): its block or proposal carries the fault, and
// the others' are what they are without it.
TEST_P(SessionIsolation, VerificationAndDraftingReportOneSessionsFaultInItsOwnResult) {
  constexpr int V = kIsolationVocab;
  auto block = [](uint64_t session, SamplingParams sampling) {
    TargetStep::Sequence s;
    s.tokens = {4, 9, 11};  // one committed token, then the drafts
    s.verify = true;
    s.gamma = 2;
    s.logit_count = 3;
    s.sampling = sampling;
    s.first_position = 40;
    s.session = session;
    return s;
  };
  const SamplingParams sampled{.temperature = 0.8f, .top_k = 0, .top_p = 0.9f, .seed = 5};
  const SamplingParams greedy{.temperature = 0.0f};
  SamplingParams bad = sampled;
  bad.top_p = 0.0f;
  TargetStep step;
  step.sequences = {block(1, sampled), block(2, bad), block(3, greedy), block(4, sampled)};
  std::vector<float> host(static_cast<size_t>(12 * V));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 7919) % 101) / 10.0f;
  host[static_cast<size_t>(10 * V + 3)] = std::numeric_limits<float>::infinity();  // block 4's row
  Buffer logits = backend->allocate(host.size());
  backend->upload(host, logits.data());
  VerifyScratch scratch;
  std::vector<TargetResult::Outcome> outcomes;
  verify_blocks(*backend, V, logits.data(), step, {}, nullptr, scratch, outcomes);
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_EQ(outcomes[1].fault, SessionFault::bad_sampling);
  EXPECT_EQ(outcomes[3].fault, SessionFault::nonfinite_target_logits);
  // Blocks 1 and 3 alone (their own rows) give the same outcomes.
  for (size_t k : {0u, 2u}) {
    EXPECT_EQ(outcomes[k].fault, SessionFault::none);
    TargetStep one;
    one.sequences = {step.sequences[k]};
    Buffer rows = backend->allocate(static_cast<size_t>(3 * V));
    backend->upload(std::span(host).subspan(k * 3 * V, 3 * V), rows.data());
    std::vector<TargetResult::Outcome> alone_outcome;
    verify_blocks(*backend, V, rows.data(), one, {}, nullptr, scratch, alone_outcome);
    EXPECT_EQ(outcomes[k].accepted, alone_outcome[0].accepted) << "block " << k;
    EXPECT_EQ(outcomes[k].token, alone_outcome[0].token) << "block " << k;
  }

  // Drafting: a request with a top_p the ops refuse gets no tokens and its
  // fault; the others draft what they draft without it.
  const std::vector<int32_t> text = {3, 5, 8, 13, 21};
  std::vector<DraftRequest> with_bad = {{1, text, 3, sampled}, {2, text, 3, bad},
                                        {3, text, 3, greedy}};
  std::vector<DraftProposal> got;
  model_drafter->propose(with_bad, got);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].fault, SessionFault::bad_sampling);
  EXPECT_TRUE(got[1].tokens.empty());
  PagedKvCache other_cache(draft->model.config(), 64, 8, *draft_backend);
  ModelDrafter other(draft->model, other_cache);
  std::vector<DraftProposal> expected;
  other.propose(std::vector<DraftRequest>{with_bad[0], with_bad[2]}, expected);
  EXPECT_EQ(got[0].tokens, expected[0].tokens);
  EXPECT_EQ(got[2].tokens, expected[1].tokens);
  EXPECT_EQ(got[0].tokens.size(), 3u);
  for (SessionKey key : {1, 2, 3}) {
    model_drafter->release(key);
    other.release(key);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionIsolation,
                         ::testing::Values(BackendKind::cpu, BackendKind::cuda),
                         [](const ::testing::TestParamInfo<BackendKind>& param) {
                           return param.param == BackendKind::cuda ? "cuda_self_check" : "cpu";
                         });

}  // namespace
}  // namespace tandem
