// Speculative decoding end to end on the shipped tiny pair (models/tiny),
// where draft and target are trained and really disagree:
//   1. greedy output is token for token the target's plain greedy output,
//      for every γ in 1..8 with the model drafter and with the n-gram
//      drafter, 50 prompts decoded as one batch (so batching is under test);
//   2. sampled output has the target's distribution (Appendix A.1): the first
//      two tokens after a fixed prompt against their exact law, computed from
//      the target's standardized rows, at temperature 1, at temperature 0.7
//      with top-k 20, and with top-p 0.9;
//   3. a seeded request gives the same tokens alone and inside a batch.
//
// False alarms: every statistical assertion has rate 1e-4 on its own; there
// are 9 (3 settings × {first token, pair, first-position acceptance}), so a
// correct engine fails a run with probability < 1e-3 (union bound). Seeds
// are fixed, so a given build passes or fails every time. Each check is also
// run against deliberately wrong laws and must reject them: a check that
// cannot fail proves nothing.
//
// Dimension glossary: V vocabulary size, N samples (sessions) per setting.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "tests/support/statistics.h"
#include "tests/support/tiny_models.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using test_support::kTinyPair;
using test_support::kTinyDraft;
using test_support::kTinyTarget;
using test_support::kTinyBlockSize;
using test_support::held_out_windows;

namespace fs = std::filesystem;
using test_stats::Fit;

constexpr int kKvBlocks = 640;        // fits 50 greedy sessions or one sampling chunk
constexpr int kGreedyTokens = 128;    // new tokens per greedy session
constexpr double kFalseAlarm = 1e-4;  // per statistical assertion
constexpr double kMinExpected = 5;    // test_stats::chi_square_fit pools cells expecting fewer

SamplingParams sampling(float temperature, int top_k, float top_p, uint64_t seed) {
  return {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = seed};
}

// ---- the pair -------------------------------------------------------------

// One model of the pair with its own paged KV cache.
struct LoadedModel {
  LoadedModel(const fs::path& dir, Backend& backend)
      : config(load_model_config(dir)),
        cache(config, kKvBlocks, kTinyBlockSize, backend),
        model(config, load_llama_weights(dir, config, backend), backend) {}
  ModelConfig config;
  PagedKvCache cache;
  LlamaModel model;
};

class TinySpeculation : public ::testing::Test {
 protected:
  void SetUp() override {
    // The models are build artifacts of tools/train; a missing file must be
    // a loud failure, never a silent skip that reads as "lossless".
    for (const fs::path& file :
         {kTinyTarget / "model.safetensors", kTinyDraft / "model.safetensors",
          kTinyPair / "eval_reference.json"}) {
      if (!fs::exists(file))
        GTEST_FAIL() << file << " is missing: run tools/train/reproduce.sh (or restore "
                     << "models/tiny from git) before running the tiny-pair tests";
    }
    target = std::make_unique<LoadedModel>(kTinyTarget, *backend);
    draft = std::make_unique<LoadedModel>(kTinyDraft, *backend);
    ASSERT_EQ(target->config.vocab_size, draft->config.vocab_size);
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(kTinyTarget));
  }
  void TearDown() override {
    // Every session, finished or taken, gives its KV blocks back.
    EXPECT_EQ(target ? target->cache.used_blocks() : 0, 0);
    EXPECT_EQ(draft ? draft->cache.used_blocks() : 0, 0);
  }

  void expect_greedy_identity(Drafter& drafter, const std::vector<int>& gammas);
  void expect_target_law(const SamplingParams& params, uint64_t seed_base);

  std::unique_ptr<Backend> backend = make_cpu_backend();
  std::unique_ptr<LoadedModel> target, draft;
  std::unique_ptr<Tokenizer> tokenizer;
};


// Runs the requests as one batch through one engine; results in request order.
std::vector<SpeculationResult> run_batch(LoadedModel& target, Drafter& drafter,
                                         const std::vector<SpeculationRequest>& requests) {
  SpeculativeEngine engine(target.model, target.cache, drafter);
  std::vector<SessionKey> keys;
  for (const SpeculationRequest& request : requests) keys.push_back(engine.add(request));
  engine.run_to_completion();
  std::vector<SpeculationResult> results;
  for (SessionKey key : keys) results.push_back(engine.take(key));
  return results;
}

// ---- 1. greedy identity -----------------------------------------------------

// 50 varied prompts: 44 held-out prefixes of 8..32 tokens (text the models
// never trained on, some from the start of a window, some from its middle),
// five English sentences, and one repetitive text where n-gram lookup finds
// the continuation (so the n-gram drafter's accept path is exercised too).
std::vector<std::vector<int32_t>> greedy_prompts(const Tokenizer& tokenizer) {
  const auto windows = held_out_windows();
  EXPECT_GE(windows.size(), 32u);
  std::vector<std::vector<int32_t>> prompts;
  auto slice = [](const std::vector<int32_t>& w, size_t from, size_t length) {
    if (w.size() < from + length) throw std::runtime_error("eval_reference.json: short window");
    return std::vector<int32_t>(w.begin() + from, w.begin() + from + length);
  };
  for (size_t i = 0; i < 32; ++i) prompts.push_back(slice(windows[i], 0, 8 + (i * 5) % 25));
  for (size_t i = 0; i < 12; ++i)
    prompts.push_back(slice(windows[(7 * i + 3) % 32], 40 + 3 * i, 9 + (i * 11) % 24));
  for (const char* text :
       {"The house was", "In the morning, the", "He said that the",
        "It was a cold night, and the old man", "Scientists have found that the number of"})
    prompts.push_back(tokenizer.encode(text));
  prompts.push_back(tokenizer.encode(
      "one two three four five six, one two three four five six, one two three four five six, "
      "one two"));
  return prompts;
}

// Plain greedy decoding of all prompts together: one target forward per new
// token for every sequence. The kernels are batch-invariant, so each row is
// what decode_plain computes for that prompt alone; the test
// PlainGreedyReferenceIsDecodePlain checks exactly that, which lets the
// speculative tests use this fast reference (decode_plain streams every
// weight once per token per prompt: ~50x the memory traffic).
std::vector<std::vector<int32_t>> plain_greedy(LoadedModel& target,
                                               const std::vector<std::vector<int32_t>>& prompts,
                                               int new_tokens) {
  const size_t B = prompts.size();
  std::vector<SequenceId> seqs(B);
  std::vector<std::vector<int32_t>> feeds = prompts, out(B);
  for (size_t i = 0; i < B; ++i) {
    seqs[i] = target.cache.create_sequence();
    EXPECT_TRUE(target.cache.reserve(seqs[i], static_cast<int>(prompts[i].size()) + new_tokens));
  }
  std::vector<int32_t> argmax(B);
  for (int k = 0; k < new_tokens; ++k) {
    std::vector<SequenceStep> steps;
    for (size_t i = 0; i < B; ++i) steps.push_back({seqs[i], feeds[i], 1});
    const float* logits = target.model.forward(steps, target.cache);  // (B, V)
    target.model.backend().argmax(logits, static_cast<int>(B), target.config.vocab_size,
                                  argmax.data());
    for (size_t i = 0; i < B; ++i) {
      out[i].push_back(argmax[i]);
      feeds[i] = {argmax[i]};
    }
  }
  for (SequenceId seq : seqs) target.cache.release(seq);
  return out;
}

// Index of the first token where a and b differ (their common length if none).
size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                             a.begin());
}

TEST_F(TinySpeculation, PlainGreedyReferenceIsDecodePlain) {
  const auto prompts = greedy_prompts(*tokenizer);
  ASSERT_EQ(prompts.size(), 50u);
  const auto batched = plain_greedy(*target, prompts, kGreedyTokens);
  for (size_t i = 0; i < prompts.size(); ++i) {
    DecodeRequest request{prompts[i], kGreedyTokens, sampling(0, 0, 1, 0), {}};
    std::vector<int32_t> alone;
    decode_plain(target->model, target->cache, request, [&](int32_t t) {
      alone.push_back(t);
      return true;
    });
    EXPECT_TRUE(alone == batched[i])
        << "prompt " << i << ": first difference at token " << first_difference(alone, batched[i]);
  }
}

// All 50 prompts as one batch in one engine per γ, each compared with the
// target's plain greedy output; prints how much speculation achieved.
void TinySpeculation::expect_greedy_identity(Drafter& drafter, const std::vector<int>& gammas) {
  const auto prompts = greedy_prompts(*tokenizer);
  ASSERT_EQ(prompts.size(), 50u);
  const auto expected = plain_greedy(*target, prompts, kGreedyTokens);
  for (int gamma : gammas) {
    std::vector<SpeculationRequest> requests(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      requests[i].prompt = prompts[i];
      requests[i].max_new_tokens = kGreedyTokens;
      requests[i].sampling.temperature = 0.0f;
      requests[i].gamma = GammaPolicy{false, gamma};
    }
    const auto results = run_batch(*target, drafter, requests);
    long steps = 0, drafted = 0, accepted = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_TRUE(results[i].tokens == expected[i])
          << drafter.name() << " drafter, gamma " << gamma << ", prompt " << i
          << ": first difference at token " << first_difference(results[i].tokens, expected[i])
          << " of " << results[i].tokens.size();
      EXPECT_EQ(results[i].finish, FinishReason::length);
      steps += results[i].stats.target_steps;
      drafted += results[i].stats.draft_tokens;
      accepted += results[i].stats.accepted_tokens;
    }
    // Both branches of the accept loop must have run, or identity is cheap.
    EXPECT_GT(accepted, 0) << drafter.name() << " gamma " << gamma;
    EXPECT_LT(accepted, drafted) << drafter.name() << " gamma " << gamma;
    std::printf("%s gamma %d: %.2f tokens per target step, %.1f%% of %ld drafts accepted\n",
                drafter.name().c_str(), gamma, 50.0 * kGreedyTokens / steps,
                drafted ? 100.0 * accepted / drafted : 0.0, drafted);
  }
}

// Split by γ into halves of about equal work, so that ctest can run them in
// parallel (a target step verifies γ+1 tokens per session).
TEST_F(TinySpeculation, GreedyModelDrafterEqualsPlainGreedyGamma1To5) {
  ModelDrafter drafter(draft->model, draft->cache);
  expect_greedy_identity(drafter, {1, 2, 3, 4, 5});
}

TEST_F(TinySpeculation, GreedyModelDrafterEqualsPlainGreedyGamma6To8) {
  ModelDrafter drafter(draft->model, draft->cache);
  expect_greedy_identity(drafter, {6, 7, 8});
}

TEST_F(TinySpeculation, GreedyNgramDrafterEqualsPlainGreedy) {
  NgramDrafter drafter;
  expect_greedy_identity(drafter, {1, 2, 3, 4, 5, 6, 7, 8});
}

// ---- 2. distribution of the first two sampled tokens -------------------------

// Standardized next-token rows (V) after each context, each context run
// from position 0 (batched in chunks that fit the cache).
std::vector<std::vector<double>> next_token_rows(LoadedModel& m,
                                                 const std::vector<std::vector<int32_t>>& contexts,
                                                 const SamplingParams& params) {
  const int V = m.config.vocab_size;
  std::vector<std::vector<double>> rows;
  std::vector<float> host(static_cast<size_t>(V));
  Buffer probs = m.model.backend().allocate(static_cast<size_t>(V));
  for (size_t begin = 0; begin < contexts.size(); begin += 64) {
    const size_t end = std::min(contexts.size(), begin + 64);
    std::vector<SequenceStep> steps;
    for (size_t c = begin; c < end; ++c) {
      const SequenceId seq = m.cache.create_sequence();
      EXPECT_TRUE(m.cache.reserve(seq, static_cast<int>(contexts[c].size())));
      steps.push_back({seq, contexts[c], 1});
    }
    const float* logits = m.model.forward(steps, m.cache);  // (end - begin, V)
    for (size_t r = 0; r < steps.size(); ++r) {
      m.model.backend().standardize(logits + r * V, 1, V, std::span(&params, 1), probs.data());
      m.model.backend().download(probs.data(), host);
      rows.emplace_back(host.begin(), host.end());
      m.cache.release(steps[r].seq);
    }
  }
  return rows;
}

// The exact law of the first two tokens after a prompt under one sampling
// setting: first = p(t1 | prompt); second[t1] = p(t2 | prompt, t1) for each t1
// that N samples expect at least kMinExpected times. Rarer t1 have every
// (t1, t2) cell below kMinExpected, so they are pooled whole and their rows
// are never needed.
struct TwoTokenLaw {
  std::vector<double> first;                      // (V)
  std::map<int32_t, std::vector<double>> second;  // t1 -> (V)
};

TwoTokenLaw two_token_law(LoadedModel& m, const std::vector<int32_t>& prompt,
                          const SamplingParams& params, long samples) {
  TwoTokenLaw law;
  law.first = next_token_rows(m, {prompt}, params)[0];
  std::vector<std::vector<int32_t>> contexts;
  std::vector<int32_t> frequent;
  for (int32_t t = 0; t < static_cast<int32_t>(law.first.size()); ++t) {
    if (law.first[t] * samples < kMinExpected) continue;
    frequent.push_back(t);
    contexts.push_back(prompt);
    contexts.back().push_back(t);
  }
  auto rows = next_token_rows(m, contexts, params);
  for (size_t i = 0; i < frequent.size(); ++i) law.second[frequent[i]] = std::move(rows[i]);
  return law;
}

struct Draws {
  std::vector<std::array<int32_t, 2>> pairs;  // (t1, t2) of each session
  long first_accepted = 0;                    // sessions whose first draft token x_1 was accepted
};

// N sessions with distinct seeds decode the prompt with the model drafter at
// γ = 3; their first two tokens are independent draws of the speculative law.
// max_new_tokens is 4, not 2: the engine never drafts past what a session may
// still emit (γ+1 tokens per block), so with 2 it would clamp γ to 1 and the
// residual draw after an accepted x_1 (position 2) would never run. A session
// is taken as soon as it has two tokens; the rest are never looked at.
Draws draw_first_two(LoadedModel& target, Drafter& drafter, const std::vector<int32_t>& prompt,
                     const SamplingParams& params, long samples, uint64_t seed_base) {
  constexpr int kGamma = 3;
  // Sessions per engine: all admitted at once (the admission headroom of one
  // block per running session included) and verified in the first step.
  constexpr long kChunk = 300;
  constexpr EngineOptions kAllAtOnce{.max_running = kChunk, .step_token_budget = 1 << 16};
  Draws draws;
  for (long begin = 0; begin < samples; begin += kChunk) {
    SpeculativeEngine engine(target.model, target.cache, drafter, kAllAtOnce);
    std::vector<SessionKey> waiting;
    for (long s = begin; s < std::min(samples, begin + kChunk); ++s) {
      SpeculationRequest request;
      request.prompt = prompt;
      request.max_new_tokens = 4;
      request.sampling = params;
      request.sampling.seed = seed_base + static_cast<uint64_t>(s);
      request.gamma = GammaPolicy{false, kGamma};
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
        if (step == 1) {
          // Block 1 emitted n + 1 >= 2 tokens, so x_1 was accepted (n >= 1).
          ++draws.first_accepted;
          EXPECT_EQ(result.stats.draft_tokens, kGamma);
          EXPECT_EQ(result.stats.accepted_tokens + 1, static_cast<int>(result.tokens.size()));
        }
        draws.pairs.push_back({result.tokens[0], result.tokens[1]});
      }
      waiting = std::move(still);
    }
    EXPECT_TRUE(waiting.empty()) << "sessions still without two tokens after 4 steps";
    for (SessionKey key : waiting) engine.take(key);
  }
  return draws;
}

Fit fit_first_token(const Draws& draws, const TwoTokenLaw& law) {
  std::vector<long> counts(law.first.size());
  for (const auto& pair : draws.pairs) ++counts[static_cast<size_t>(pair[0])];
  return test_stats::chi_square_fit(counts, law.first, kFalseAlarm);
}

// Cells: (t1, t2) for every t1 the law has a second row for, and t1 alone
// for the others (each expects < kMinExpected, so all of them are pooled).
Fit fit_pair(const Draws& draws, const TwoTokenLaw& law) {
  const size_t V = law.first.size();
  std::map<std::array<int32_t, 2>, long> pair_counts;
  std::vector<long> first_counts(V), counts;
  for (const auto& pair : draws.pairs) {
    ++pair_counts[pair];
    ++first_counts[static_cast<size_t>(pair[0])];
  }
  std::vector<double> probs;
  for (int32_t t1 = 0; t1 < static_cast<int32_t>(V); ++t1) {
    const auto row = law.second.find(t1);
    if (row == law.second.end()) {
      probs.push_back(law.first[t1]);
      counts.push_back(first_counts[t1]);
      continue;
    }
    for (int32_t t2 = 0; t2 < static_cast<int32_t>(V); ++t2) {
      const auto count = pair_counts.find({t1, t2});
      probs.push_back(law.first[t1] * row->second[t2]);
      counts.push_back(count == pair_counts.end() ? 0 : count->second);
    }
  }
  return test_stats::chi_square_fit(counts, probs, kFalseAlarm);
}

// Samples the engine's law for one setting and checks it against the
// target's exact law, plus the first-position acceptance rate against β_1
// (Definition 3.1: Σ_x min(p_1(x), q_1(x))). Power: the same draws must
// reject laws that plausible bugs would produce: the draft's law q (a
// verifier that accepted every draft; both tests) and, where the setting
// truncates, the target's law without top-k / top-p (truncation ignored; the
// first-token test only: spread over pair cells, the 10% tail top-p removes
// leaves the pair test a margin too thin to assert on every draw).
void TinySpeculation::expect_target_law(const SamplingParams& params, uint64_t seed_base) {
  constexpr long kSamples = 6000;
  const std::vector<int32_t> prompt = tokenizer->encode("She");
  const TwoTokenLaw p = two_token_law(*target, prompt, params, kSamples);
  struct WrongLaw {
    std::string name;
    TwoTokenLaw law;
    bool pair_must_reject;
  };
  std::vector<WrongLaw> wrong;
  wrong.push_back({"draft q", two_token_law(*draft, prompt, params, kSamples), true});
  if (params.top_k > 0 || params.top_p < 1.0f)
    wrong.push_back(
        {"untruncated p",
         two_token_law(*target, prompt, sampling(params.temperature, 0, 1, 0), kSamples), false});
  const TwoTokenLaw& q = wrong[0].law;
  ModelDrafter drafter(draft->model, draft->cache);
  const Draws draws = draw_first_two(*target, drafter, prompt, params, kSamples, seed_base);
  ASSERT_EQ(static_cast<long>(draws.pairs.size()), kSamples);

  std::printf("T=%.2f top_k=%d top_p=%.2f, N=%ld:\n", params.temperature, params.top_k,
              params.top_p, kSamples);
  const Fit first = fit_first_token(draws, p), pair = fit_pair(draws, p);
  EXPECT_LT(first.statistic, first.critical) << "first token: dof " << first.dof;
  EXPECT_LT(pair.statistic, pair.critical) << "token pair: dof " << pair.dof;
  std::printf(
      "  target p:      first token chi2 %7.1f (dof %3d, critical %.1f), pair chi2 %7.1f "
      "(dof %3d, critical %.1f)\n",
      first.statistic, first.dof, first.critical, pair.statistic, pair.dof, pair.critical);
  for (const WrongLaw& w : wrong) {
    const Fit bad_first = fit_first_token(draws, w.law), bad_pair = fit_pair(draws, w.law);
    EXPECT_GT(bad_first.statistic, bad_first.critical) << "first token against " << w.name;
    EXPECT_TRUE(!w.pair_must_reject || bad_pair.statistic > bad_pair.critical)
        << "token pair against " << w.name << ": chi2 " << bad_pair.statistic;
    std::printf("  %-14s first token chi2 %7.1f (critical %.1f), pair chi2 %7.1f (critical %.1f)\n",
                (w.name + ":").c_str(), bad_first.statistic, bad_first.critical, bad_pair.statistic,
                bad_pair.critical);
  }

  // x_1 ~ q_1 is accepted with probability β_1, independently per session:
  // a binomial count. (The engine's own β statistics sum over all γ positions
  // of a block, past the first rejection too, so they cannot be compared with
  // acceptances position by position; β_1 is computed here from p_1, q_1.)
  // Power: a verifier that skipped the random test and kept x_1 iff
  // p_1(x_1) >= q_1(x_1) would accept at rate Σ_{p >= q} q instead.
  double beta = 0, beta_deterministic = 0;
  for (size_t x = 0; x < p.first.size(); ++x) {
    beta += std::min(p.first[x], q.first[x]);
    if (p.first[x] >= q.first[x]) beta_deterministic += q.first[x];
  }
  auto z_of = [&](double rate) {
    return test_stats::binomial_z(draws.first_accepted, kSamples, rate);
  };
  const double z_critical = test_stats::normal_upper_quantile(kFalseAlarm / 2);  // two-sided
  EXPECT_LT(std::abs(z_of(beta)), z_critical) << "first-position acceptance vs beta_1 " << beta;
  EXPECT_GT(std::abs(z_of(beta_deterministic)), z_critical) << "power of the acceptance test";
  std::printf(
      "  x_1 accepted %.4f vs beta_1 %.4f: z %.2f (critical %.2f); against the "
      "deterministic rule's %.4f: z %.1f\n",
      static_cast<double>(draws.first_accepted) / kSamples, beta, z_of(beta), z_critical,
      beta_deterministic, z_of(beta_deterministic));
}

TEST_F(TinySpeculation, SampledFirstTwoTokensFollowTargetAtTemperature1) {
  expect_target_law(sampling(1.0f, 0, 1.0f, 0), 1'000'000);
}

TEST_F(TinySpeculation, SampledFirstTwoTokensFollowTargetAtTemperature07TopK20) {
  expect_target_law(sampling(0.7f, 20, 1.0f, 0), 2'000'000);
}

TEST_F(TinySpeculation, SampledFirstTwoTokensFollowTargetWithTopP09) {
  expect_target_law(sampling(1.0f, 0, 0.9f, 0), 3'000'000);
}

// ---- 3. seeded replay ---------------------------------------------------------

TEST_F(TinySpeculation, SeededRequestReplaysAloneAndInsideABatch) {
  SpeculationRequest probe;
  probe.prompt = tokenizer->encode("The old man looked at the sea and");
  probe.max_new_tokens = 48;
  probe.sampling = sampling(0.8f, 40, 0.95f, 31337);
  probe.gamma = GammaPolicy{false, 4};
  ModelDrafter drafter(draft->model, draft->cache);
  const std::vector<int32_t> alone = run_batch(*target, drafter, {probe})[0].tokens;
  ASSERT_EQ(alone.size(), 48u);

  // 16 other sessions with other prompts, lengths, settings (greedy among
  // them) and γ (automatic among them), so that the batch around the probe
  // changes shape at every step; the probe sits in the middle, and its twin
  // (the identical request) at the end.
  const auto prompts = greedy_prompts(*tokenizer);
  std::vector<SpeculationRequest> batch;
  for (int i = 0; i < 16; ++i) {
    SpeculationRequest other;
    other.prompt = prompts[static_cast<size_t>(3 * i)];
    other.max_new_tokens = 20 + 5 * i;
    other.sampling = i % 4 == 0 ? sampling(0, 0, 1, 0)
                                : sampling(0.6f + 0.1f * (i % 5), 20 * (i % 3), i % 2 ? 0.9f : 1.0f,
                                           1000u + static_cast<uint64_t>(i));
    other.gamma = GammaPolicy{i % 5 == 0, 1 + i % 6};
    batch.push_back(other);
    if (i == 7) batch.push_back(probe);
  }
  batch.push_back(probe);
  const auto results = run_batch(*target, drafter, batch);
  EXPECT_TRUE(results[8].tokens == alone)
      << "first difference at token " << first_difference(results[8].tokens, alone);
  EXPECT_TRUE(results.back().tokens == alone)
      << "twin: first difference at token " << first_difference(results.back().tokens, alone);
}

}  // namespace
}  // namespace tandem
