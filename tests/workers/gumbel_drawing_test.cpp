// Where the engine draws with the gumbel coupling, each draw is the one the
// contract names (kernels/philox.h): the draft model proposes the race of
// its own q row with the noise of (seed, absolute position of the drafted
// token), which is the target's noise at that position; plain decoding
// (TokenSampler) races the standardized row with (seed, position); and
// verification of a gumbel block reads no q rows. Sessions of the two
// couplings and greedy ones share a batch without changing each other.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/sampling.h"
#include "kernels/philox.h"
#include "tests/support/small_model.h"
#include "workers/speculation/block_verification.h"
#include "workers/speculation/model_drafter.h"
#include "workers/token_sampler.h"

namespace tandem {
namespace {

constexpr int kDrawVocab = 96;

ModelConfig drawing_config(int hidden, int layers) {
  return test_support::small_llama(hidden, layers, kDrawVocab, 256);
}

SamplingParams sampled(uint64_t seed, Coupling coupling) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  p.seed = seed;
  p.coupling = coupling;
  return p;
}

std::vector<float> host_rows(const DeviceRows& rows) {
  std::vector<float> out(rows.size());
  rows.backend()->download(rows.data(), out);
  return out;
}

// One propose() over a batch of a gumbel, a rejection and a greedy session.
std::vector<DraftProposal> propose(Backend& backend, const std::vector<SamplingParams>& sampling,
                                   const std::vector<std::vector<int32_t>>& tokens, int gamma) {
  test_support::RandomModel draft(backend, drawing_config(32, 1), 2);
  ModelDrafter drafter(draft.model, draft.cache);
  std::vector<DraftRequest> requests;
  for (size_t i = 0; i < sampling.size(); ++i)
    requests.push_back({i + 1, tokens[i], gamma, sampling[i], nullptr});
  std::vector<DraftProposal> proposals;
  drafter.propose(requests, proposals);
  return proposals;
}

TEST(GumbelDrawing, TheDraftProposesTheRaceOfItsRowsAtEachTokensPosition) {
  auto backend = make_cpu_backend();
  const std::vector<std::vector<int32_t>> tokens{{1, 2, 3, 4, 5}, {7, 8}, {9, 10, 11}};
  SamplingParams greedy;
  greedy.temperature = 0;
  const std::vector<SamplingParams> batch{sampled(41, Coupling::gumbel),
                                          sampled(42, Coupling::rejection), greedy};
  const int gamma = 6;
  const std::vector<DraftProposal> together = propose(*backend, batch, tokens, gamma);
  ASSERT_EQ(together.size(), 3u);

  const DraftProposal& gumbel = together[0];
  ASSERT_EQ(gumbel.tokens.size(), static_cast<size_t>(gamma));
  ASSERT_EQ(gumbel.q.size(), static_cast<size_t>(gamma * kDrawVocab));  // q rows as before
  const std::vector<float> q = host_rows(gumbel.q);
  for (int j = 0; j < gamma; ++j) {
    const int64_t position = static_cast<int64_t>(tokens[0].size()) + j;
    EXPECT_EQ(gumbel.tokens[static_cast<size_t>(j)],
              cpu::gumbel_row(q.data() + static_cast<size_t>(j * kDrawVocab), kDrawVocab, 41, position))
        << "draft " << j;
  }

  const DraftProposal& rejection = together[1];
  const std::vector<float> q_rejection = host_rows(rejection.q);
  for (int j = 0; j < gamma; ++j) {
    const int64_t position = static_cast<int64_t>(tokens[1].size()) + j;
    const double u = philox_uniform(42, position, RandomPurpose::draft_sample);
    EXPECT_EQ(rejection.tokens[static_cast<size_t>(j)],
              cpu::sample_row(q_rejection.data() + static_cast<size_t>(j * kDrawVocab), kDrawVocab, u))
        << "draft " << j;
  }
  EXPECT_TRUE(together[2].q.empty());  // greedy: no rows

  // Each session's proposal is what it is alone.
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::vector<DraftProposal> alone = propose(*backend, {batch[i]}, {tokens[i]}, gamma);
    EXPECT_EQ(alone[0].tokens, together[i].tokens) << "session " << i;
  }
}

TEST(GumbelDrawing, PlainDecodingRacesTheStandardizedRow) {
  auto backend = make_cpu_backend();
  std::vector<float> logits(kDrawVocab);
  for (int v = 0; v < kDrawVocab; ++v) logits[static_cast<size_t>(v)] = 0.05f * static_cast<float>((v * 37) % 41);
  TokenSampler sampler(*backend, kDrawVocab);
  std::vector<float> probs(kDrawVocab);
  int differ = 0;
  for (int64_t position = 3; position < 63; ++position) {
    const SamplingParams gumbel = sampled(5, Coupling::gumbel);
    cpu::standardize_row(logits.data(), kDrawVocab, gumbel, probs.data());
    const int32_t drawn = sampler.pick(logits.data(), gumbel, position);
    EXPECT_EQ(drawn, cpu::gumbel_row(probs.data(), kDrawVocab, 5, position)) << "position " << position;
    const double u = philox_uniform(5, position, RandomPurpose::target_sample);
    const int32_t inverse = sampler.pick(logits.data(), sampled(5, Coupling::rejection), position);
    EXPECT_EQ(inverse, cpu::sample_row(probs.data(), kDrawVocab, u)) << "position " << position;
    differ += drawn != inverse;
  }
  EXPECT_GT(differ, 30);  // two couplings, two different draws from one seed
}

// A TargetStep of one block of two drafts verified from `logits` (3, kDrawVocab).
TargetStep one_block(const SamplingParams& sampling, QSource q_source, float lenience = 1.0f) {
  TargetStep step;
  TargetStep::Sequence s;
  s.tokens = {4, 10, 11};
  s.logit_count = 3;
  s.verify = true;
  s.gamma = 2;
  s.sampling = sampling;
  s.first_position = 9;
  s.lenience = lenience;
  s.session = 1;
  s.q_source = q_source;
  step.sequences.push_back(s);
  return step;
}

TEST(GumbelDrawing, VerificationOfAGumbelBlockReadsNoQRows) {
  auto backend = make_cpu_backend();
  std::vector<float> logits(3 * kDrawVocab);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = 0.03f * static_cast<float>((i * 53) % 67);
  VerifyScratch scratch;
  std::vector<TargetResult::Outcome> outcomes;
  // Rows "at the draft rank" with no inbox to fetch them from: a rejection
  // block cannot be verified, a gumbel block does not ask for them.
  EXPECT_THROW(verify_blocks(*backend, kDrawVocab, logits.data(),
                             one_block(sampled(3, Coupling::rejection), QSource::draft_rank), {},
                             nullptr, scratch, outcomes),
               Error);
  verify_blocks(*backend, kDrawVocab, logits.data(), one_block(sampled(3, Coupling::gumbel), QSource::draft_rank),
                {}, nullptr, scratch, outcomes);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].fault, SessionFault::none);
  // The emitted token is the race at its position, from the standardized row.
  std::vector<float> probs(kDrawVocab);
  const int n = outcomes[0].accepted;
  cpu::standardize_row(logits.data() + static_cast<size_t>(n * kDrawVocab), kDrawVocab, sampled(3, Coupling::gumbel),
                       probs.data());
  EXPECT_EQ(outcomes[0].token, cpu::gumbel_row(probs.data(), kDrawVocab, 3, 9 + n));
  EXPECT_EQ(outcomes[0].beta_count, 2);
}

TEST(GumbelDrawing, ACouplingTheOpsRefuseEndsItsSessionAlone) {
  // What reached a rank anyway (the engine refuses both when a session is
  // added) is the session's own fault, not an exception for the whole pass.
  auto backend = make_cpu_backend();
  std::vector<float> logits(3 * kDrawVocab, 0.5f);
  VerifyScratch scratch;
  std::vector<TargetResult::Outcome> outcomes;
  SamplingParams unknown = sampled(3, Coupling::gumbel);
  unknown.coupling = static_cast<Coupling>(7);
  verify_blocks(*backend, kDrawVocab, logits.data(), one_block(unknown, QSource::one_hot), {}, nullptr,
                scratch, outcomes);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].fault, SessionFault::bad_sampling);
  verify_blocks(*backend, kDrawVocab, logits.data(),
                one_block(sampled(3, Coupling::gumbel), QSource::one_hot, 0.5f), {}, nullptr,
                scratch, outcomes);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].fault, SessionFault::bad_sampling);

  test_support::RandomModel draft(*backend, drawing_config(32, 1), 2);
  ModelDrafter drafter(draft.model, draft.cache);
  const std::vector<int32_t> tokens{1, 2, 3};
  std::vector<DraftProposal> proposals;
  drafter.propose(std::vector<DraftRequest>{{1, tokens, 3, unknown, nullptr}}, proposals);
  EXPECT_EQ(proposals[0].fault, SessionFault::bad_sampling);
  EXPECT_TRUE(proposals[0].tokens.empty());
}

}  // namespace
}  // namespace tandem
