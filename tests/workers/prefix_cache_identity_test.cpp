// Prefix caching changes no output. The shipped tiny pair serves 50 English
// prompts that share prefixes (five stems of several KV blocks with varied
// tails, some repeated; ten that share every block but their first; chat
// turns that continue the previous answer),
// with speculation on (the draft model, γ auto or fixed), greedy and
// seeded, once with both KV caches caching prefixes and once without: the
// outputs must be token for token the same. They can be, because the CPU
// forward pass is batch-invariant: K/V computed in another chunk, batch or
// session are the same bits. The cached runs must also really reuse blocks
// (target and draft hits), share a prompt between the choices of one
// request (n > 1), survive preemption and eviction in a small cache, and
// leave no block held; and every block left cached must hold, bit for bit,
// the K/V a fresh prefill of its prefix computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/workers/tiny_pair.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using test_support::TinyPair;
using Outputs = std::vector<std::vector<int32_t>>;

const char* const kStems[] = {
    "You are a careful assistant. Answer briefly and plainly, and say when you do not know. "
    "The user is a student of history.",
    "Once upon a time, in a small town by the sea, there lived an old fisherman who",
    "The following is a list of facts about the moon, the planets and the stars:",
    "Question: what is the capital of France? Answer: Paris. Question: what is the capital of",
    "def add(a, b):\n    return a + b\n\ndef multiply(a, b):\n    return",
};
const char* const kTails[] = {
    " Tell me about the sea.", " He went out one morning", " and the weather was cold",
    " Why is the sky blue?", " Spain? Answer:", " the first of them", " a story of",
    " Italy? Answer:", " a * b", " every night he",
};

std::vector<std::vector<int32_t>> shared_prompts(const Tokenizer& tokenizer) {
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 40; ++i) {
    const std::string text =
        std::string(kStems[i % 5]) + kTails[(i / 5 + i) % 10];
    prompts.push_back(tokenizer.encode(text));
  }
  // Ten more with the same blocks after different first blocks: one
  // block (16 tokens) of a stem, then the same body. A block's content is
  // its tokens after exactly its prefix, so these must never share past
  // their first block.
  const std::vector<int32_t> body = tokenizer.encode(kStems[3], false);
  for (int i = 40; i < 50; ++i) {
    std::vector<int32_t> prompt = tokenizer.encode(kStems[i % 5]);
    prompt.resize(16);
    prompt.insert(prompt.end(), body.begin(), body.end());
    const std::vector<int32_t> tail = tokenizer.encode(kTails[i % 10], false);
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    prompts.push_back(prompt);
  }
  return prompts;
}

// Requests take turns between three modes, so that one run covers them all.
struct CacheMode {
  const char* name;
  bool greedy;
  Coupling coupling;
  GammaPolicy gamma;  // rejection: fixed, so its seeded draws do not depend on timings
};
const CacheMode kCacheModes[] = {{"greedy", true, Coupling::rejection, GammaPolicy{true, 8}},
                       {"seeded_gumbel", false, Coupling::gumbel, GammaPolicy{true, 8}},
                       {"seeded_rejection", false, Coupling::rejection, GammaPolicy{false, 4}}};

SpeculationRequest request_for(const std::vector<int32_t>& prompt, int index) {
  const CacheMode& mode = kCacheModes[index % 3];
  SpeculationRequest r;
  r.prompt = prompt;
  r.max_new_tokens = 16;
  r.gamma = mode.gamma;
  if (mode.greedy) {
    r.sampling.temperature = 0.0f;
  } else {
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.95f;
    r.sampling.seed = 500 + static_cast<uint64_t>(index);
    r.sampling.coupling = mode.coupling;
  }
  return r;
}

// Every cached block's K/V against a fresh prefill of its whole prefix, bit
// for bit: what a session attaching the block reads is what it would have
// computed itself. Checks the chains of the cached blocks nobody caches a
// child of (their prefill covers every block on the way).
struct Audit {
  int blocks = 0;     // blocks compared
  int differing = 0;  // of those, with other bits than the fresh prefill's
};

Audit audit_cached_blocks(test_support::TinyModel& m, Backend& backend) {
  const KvBlockPool& pool = m.cache.pool();
  const int n = pool.num_blocks(), bs = pool.block_size();
  auto live_parent = [&](int32_t b) {
    const KvBlockPool::Parent p = pool.parent(b);
    return p.block >= 0 && pool.is_cached(p.block) && pool.generation(p.block) == p.generation
               ? p.block : -1;
  };
  std::vector<bool> has_child(static_cast<size_t>(n));
  for (int32_t b = 0; b < n; ++b)
    if (pool.is_cached(b) && live_parent(b) >= 0) has_child[static_cast<size_t>(live_parent(b))] = true;
  Audit audit;
  const size_t stride = static_cast<size_t>(bs) * m.cache.kv_heads() * m.config.head_dim;
  for (int32_t leaf = 0; leaf < n; ++leaf) {
    if (!pool.is_cached(leaf) || has_child[static_cast<size_t>(leaf)]) continue;
    std::vector<int32_t> chain{leaf};  // leaf to root, then reversed
    while (live_parent(chain.back()) >= 0) chain.push_back(live_parent(chain.back()));
    if (pool.parent(chain.back()).block >= 0) continue;  // an ancestor was evicted: unreachable
    std::reverse(chain.begin(), chain.end());
    std::vector<int32_t> tokens;
    for (int32_t b : chain) tokens.insert(tokens.end(), pool.tokens(b).begin(), pool.tokens(b).end());
    PagedKvCache fresh(m.config, static_cast<int>(chain.size()), bs, backend);
    const SequenceId seq = fresh.create_sequence();
    EXPECT_TRUE(fresh.reserve(seq, static_cast<int>(tokens.size())));
    const SequenceStep step{seq, tokens, 1};
    m.model.forward(std::span(&step, 1), fresh);
    for (size_t i = 0; i < chain.size(); ++i) {
      bool same = true;
      for (int l = 0; l < m.config.num_layers; ++l) {
        const PagedKvView cached = m.cache.layer(l), computed = fresh.layer(l);
        const size_t at = static_cast<size_t>(chain[i]) * stride;
        const size_t fresh_at = static_cast<size_t>(fresh.block_table(seq)[i]) * stride;
        same = same && std::memcmp(cached.k + at, computed.k + fresh_at, stride * 4) == 0 &&
               std::memcmp(cached.v + at, computed.v + fresh_at, stride * 4) == 0;
      }
      ++audit.blocks;
      if (!same) ++audit.differing;
    }
  }
  return audit;
}

struct CachedEngineRun {
  Outputs outputs;
  std::vector<int> cached_tokens;  // per request, as reported
  std::vector<std::vector<TokenLogprob>> prompt_scores;  // per request, when it asked
  PrefixCacheCounters target, draft;
  uint64_t preemptions = 0;
};

// The requests through one engine, `batch` at a time (a group runs to
// completion before the next joins).
CachedEngineRun run(int blocks, bool caching, const std::vector<SpeculationRequest>& requests, size_t batch,
        int max_running = 64) {
  TinyPair pair(blocks);
  if (caching) {
    pair.target.cache.enable_prefix_caching(blocks);
    pair.draft.cache.enable_prefix_caching(blocks);
  }
  ModelDrafter drafter(pair.draft.model, pair.draft.cache);
  EngineOptions options;
  options.max_running = max_running;
  options.step_token_budget = 96;  // long prompts are prefilled in chunks
  SpeculativeEngine engine(pair.target.model, pair.target.cache, drafter, options);
  CachedEngineRun out;
  for (size_t from = 0; from < requests.size(); from += batch) {
    std::vector<SessionKey> keys;
    for (size_t i = from; i < std::min(requests.size(), from + batch); ++i)
      keys.push_back(engine.add(requests[i]));
    engine.run_to_completion();
    for (SessionKey key : keys) {
      SpeculationResult r = engine.take(key);
      EXPECT_NE(r.finish, FinishReason::failed) << (r.error ? r.error->what() : "");
      out.outputs.push_back(r.tokens);
      out.cached_tokens.push_back(r.stats.cached_tokens);
      out.prompt_scores.push_back(r.prompt_logprobs);
    }
  }
  out.target = engine.target_prefix_counters();
  out.draft = drafter.prefix_counters();
  out.preemptions = engine.preemptions();
  if (caching) {
    for (test_support::TinyModel* m : {&pair.target, &pair.draft}) {
      const Audit audit = audit_cached_blocks(*m, *pair.backend);
      EXPECT_GT(audit.blocks, 0);
      EXPECT_EQ(audit.differing, 0) << "of " << audit.blocks << " cached blocks, "
                                    << (m == &pair.target ? "target" : "draft");
    }
  }
  EXPECT_EQ(pair.target.cache.used_blocks(), 0) << "a target block is still held";
  EXPECT_EQ(pair.draft.cache.used_blocks(), 0) << "a draft block is still held";
  if (!caching) {
    EXPECT_EQ(pair.target.cache.cached_blocks(), 0);
  }
  return out;
}

class PrefixCacheIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TinyPair::present()) GTEST_FAIL() << "models/tiny is missing: restore it from git";
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(test_support::kTinyTarget));
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(PrefixCacheIdentity, FiftySharedPrefixPromptsGiveTheSameTokensCachedOrNot) {
  std::vector<SpeculationRequest> requests;
  const auto prompts = shared_prompts(*tokenizer_);
  for (size_t i = 0; i < prompts.size(); ++i)
    requests.push_back(request_for(prompts[i], static_cast<int>(i)));
  // Eight at a time: sessions share blocks while they run, and later groups
  // reuse what earlier ones left.
  const CachedEngineRun off = run(640, false, requests, 8);
  const CachedEngineRun on = run(640, true, requests, 8);
  ASSERT_EQ(on.outputs.size(), off.outputs.size());
  for (size_t i = 0; i < off.outputs.size(); ++i)
    EXPECT_EQ(on.outputs[i], off.outputs[i]) << kCacheModes[i % 3].name << ", prompt " << i;
  EXPECT_EQ(off.target.hits, 0u);
  EXPECT_GT(on.target.hits, 0u) << "the stems were never reused";
  EXPECT_GT(on.draft.hits, 0u) << "the draft never reused a stem";
  int reported = 0;
  for (int c : on.cached_tokens) reported += c;
  EXPECT_EQ(static_cast<uint64_t>(reported), on.target.hits)
      << "cached_tokens are the admissions' hits (no preemption here)";
}

TEST_F(PrefixCacheIdentity, ASecondChatTurnReusesTheFirstAnswerAndKeepsItsTokens) {
  const auto prompts = shared_prompts(*tokenizer_);
  std::vector<SpeculationRequest> first;
  for (int i = 0; i < 10; ++i) first.push_back(request_for(prompts[static_cast<size_t>(i)], i));
  const CachedEngineRun turn1 = run(640, false, first, 10);
  // Turn two: the whole first exchange, then more text.
  std::vector<SpeculationRequest> both = first;
  for (int i = 0; i < 10; ++i) {
    std::vector<int32_t> prompt = prompts[static_cast<size_t>(i)];
    const auto& answer = turn1.outputs[static_cast<size_t>(i)];
    prompt.insert(prompt.end(), answer.begin(), answer.end());
    const std::vector<int32_t> more = tokenizer_->encode(" And then?", false);
    prompt.insert(prompt.end(), more.begin(), more.end());
    both.push_back(request_for(prompt, 100 + i));
  }
  const CachedEngineRun off = run(640, false, both, 10);
  const CachedEngineRun on = run(640, true, both, 10);
  for (size_t i = 0; i < both.size(); ++i)
    EXPECT_EQ(on.outputs[i], off.outputs[i]) << "request " << i;
  for (size_t i = 10; i < both.size(); ++i) {
    // Everything of turn one but its answer's last token (never fed) and
    // the partial block is reusable: at least the prompt's whole blocks.
    const int prompt_blocks = static_cast<int>(first[i - 10].prompt.size()) / 16;
    EXPECT_GE(on.cached_tokens[i], prompt_blocks * 16) << "turn two of conversation " << i - 10;
  }
}

TEST_F(PrefixCacheIdentity, ASmallCacheThatPreemptsAndEvictsStillGivesTheSameTokens) {
  std::vector<SpeculationRequest> requests;
  const auto prompts = shared_prompts(*tokenizer_);
  for (size_t i = 0; i < 24; ++i) {
    requests.push_back(request_for(prompts[i], static_cast<int>(i)));
    requests.back().max_new_tokens = 48;  // grows by three blocks after admission
  }
  // 14 blocks of 16 hold about three of these sessions: sessions are
  // preempted as they grow, and cached blocks are evicted to make room.
  const CachedEngineRun off = run(14, false, requests, 24);
  const CachedEngineRun on = run(14, true, requests, 24);
  for (size_t i = 0; i < off.outputs.size(); ++i)
    EXPECT_EQ(on.outputs[i], off.outputs[i]) << kCacheModes[i % 3].name << ", prompt " << i;
  EXPECT_GT(on.preemptions, 0u) << "the cache was meant to be too small";
  EXPECT_GT(on.target.hits, 0u);
}

TEST_F(PrefixCacheIdentity, TheChoicesOfOnePromptShareItsBlocks) {
  // One long prompt asked four times together (n = 4, or best_of), each
  // with its own seed (seeded modes only): the first prefills it, the
  // others wait for that prefill and reuse its blocks.
  const auto prompts = shared_prompts(*tokenizer_);
  std::vector<int32_t> prompt = prompts[0];
  prompt.insert(prompt.end(), prompts[1].begin(), prompts[1].end());
  std::vector<SpeculationRequest> choices;
  for (int i = 0; i < 4; ++i) choices.push_back(request_for(prompt, 1 + (i % 2) + 3 * i));
  const CachedEngineRun off = run(640, false, choices, 4);
  const CachedEngineRun on = run(640, true, choices, 4);
  EXPECT_EQ(on.outputs, off.outputs);
  const int reusable = (static_cast<int>(prompt.size()) - 1) / 16 * 16;
  EXPECT_EQ(on.cached_tokens[0], 0);
  for (size_t i = 1; i < choices.size(); ++i)
    EXPECT_EQ(on.cached_tokens[i], reusable) << "choice " << i << " prefilled the prompt again";
}

TEST_F(PrefixCacheIdentity, SaltsKeepTenantsApartAndPromptScoresAreComputed) {
  const auto prompts = shared_prompts(*tokenizer_);
  std::vector<SpeculationRequest> requests;
  for (uint64_t salt : {0ull, 0ull, 7ull, 7ull, 8ull}) {
    requests.push_back(request_for(prompts[0], 0));
    requests.back().cache_salt = salt;
  }
  // Echo: prompt tokens it must score are fed, not reused, the first time.
  for (int i = 0; i < 2; ++i) {
    requests.push_back(request_for(prompts[0], 0));
    requests.back().prompt_logprobs = true;
  }
  const CachedEngineRun on = run(640, true, requests, 1);
  const int reusable = (static_cast<int>(prompts[0].size()) - 1) / 16 * 16;
  EXPECT_EQ(on.cached_tokens, (std::vector<int>{0, reusable, 0, reusable, 0, 0, 0}))
      << "salts 0, 0, 7, 7, 8, then two echoes";
  for (size_t i = 1; i < requests.size(); ++i) EXPECT_EQ(on.outputs[i], on.outputs[0]);
  for (size_t i = 5; i < 7; ++i) {
    ASSERT_EQ(on.prompt_scores[i].size(), prompts[0].size() - 1) << "echo " << i - 5;
    for (size_t j = 0; j < prompts[0].size() - 1; ++j) {
      EXPECT_EQ(on.prompt_scores[i][j].token, prompts[0][j + 1]);
      EXPECT_EQ(on.prompt_scores[i][j].logprob, on.prompt_scores[5][j].logprob);
    }
  }
}

}  // namespace
}  // namespace tandem
