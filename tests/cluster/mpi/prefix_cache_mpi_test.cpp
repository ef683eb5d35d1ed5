// Prefix caching under MPI: the coordinator, the draft on rank 1, the
// target at TP 2 on ranks 2 and 3 (4 ranks). 50 prompts sharing prefixes
// (four stems of three blocks with distinct tails, some prompts repeated,
// and chat turns: an earlier prompt, its output and a few more tokens),
// greedy and seeded (temperature 0.8, both couplings), drafted by the
// draft model, then the first prompt twice under a cache_salt of its own:
// every output token for token the same with prefix caching on as off. The on job must hit in both caches: the coordinator's account
// of the target (whose block numbers the target ranks' caches adopt,
// TargetStep tables, wire format 8) and the draft rank's own (its counters
// come back in DraftReply); and the target's referenced blocks must return
// to 0. The salt's first request hits nothing in either cache, its second
// does.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster/layout/cluster_layout.h"
#include "cluster/links/peer_channel.h"
#include "cluster/links/q_rows_link.h"
#include "cluster/links/tp_group.h"
#include "cluster/ranks/worker_rank.h"
#include "coordinator/config/deployment_config.h"
#include "coordinator/deployment/engine_assembly.h"
#include "coordinator/deployment/engine_hosts.h"
#include "coordinator/deployment/serve_in_role.h"
#include "tests/support/mpi/mpi_world.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using Tokens = std::vector<int32_t>;
const fs::path kSource = TANDEM_SOURCE_DIR;
constexpr int kFirstWave = 35;   // prompts on stems (and repeats)
constexpr int kChatTurns = 15;   // then turns on earlier prompts and their outputs
constexpr int kStemTokens = 48;  // three blocks of 16
constexpr int kKvBlocks = 96;    // the same on every rank

DeploymentConfig config_for(bool caching) {
  fs::current_path(kSource);  // the config's model paths are relative to the checkout
  DeploymentConfig config = load_deployment(kSource / "configs" / "cluster-cpu.yaml");
  config.scheduler.kv_blocks = kKvBlocks;
  config.scheduler.draft_kv_blocks = 160;
  config.scheduler.prefix_cache.enabled = caching;  // scheduler.prefix_caching
  config.placement.draft_rank = 1;
  config.placement.target_ranks = {2, 3};
  config.placement.target_devices.clear();
  return config;
}

std::vector<Tokens> windows() {
  std::ifstream file(kSource / "models" / "tiny" / "eval_reference.json");
  return nlohmann::json::parse(file).at("windows").get<std::vector<Tokens>>();
}

// Even: greedy; odd: temperature 0.8, seeded, the rejection and gumbel
// couplings in turn. γ auto for every third, except under the rejection
// coupling, where which sample comes depends on the γ sequence (which
// depends on timings) and so only a fixed γ replays.
SpeculationRequest request(int i, Tokens prompt) {
  SpeculationRequest r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = 10;
  r.sampling.temperature = 0.0f;
  if (i % 2 == 1)
    r.sampling = {.temperature = 0.8f, .seed = 900 + static_cast<uint64_t>(i),
                  .coupling = i % 4 == 1 ? Coupling::rejection : Coupling::gumbel};
  r.drafter = "model";
  const bool replays_any_gamma = r.sampling.greedy() || r.sampling.coupling == Coupling::gumbel;
  r.gamma = i % 3 == 0 && replays_any_gamma ? GammaPolicy{true, 6} : GammaPolicy{false, 1 + i % 4};
  return r;
}

// Four stems of three blocks, each with a distinct tail; every fifth prompt
// repeats the one two before it.
std::vector<SpeculationRequest> first_wave(const std::vector<Tokens>& w) {
  std::vector<SpeculationRequest> out;
  for (int i = 0; i < kFirstWave; ++i) {
    if (i % 5 == 4) {
      out.push_back(request(i, out[static_cast<size_t>(i - 2)].prompt));
      continue;
    }
    Tokens prompt(w[static_cast<size_t>(i % 4)].begin(),
                  w[static_cast<size_t>(i % 4)].begin() + kStemTokens);
    const Tokens& tail = w[static_cast<size_t>(4 + i % 28)];
    const auto from = tail.begin() + (i * 7) % 60;
    prompt.insert(prompt.end(), from, from + 3 + (i % 7) * 3);
    out.push_back(request(i, std::move(prompt)));
  }
  return out;
}

// Chat turns: an earlier prompt, its output, then a few tokens more.
std::vector<SpeculationRequest> chat_turns(const std::vector<SpeculationRequest>& first,
                                           const std::vector<Tokens>& outputs,
                                           const std::vector<Tokens>& w) {
  std::vector<SpeculationRequest> out;
  for (int j = 0; j < kChatTurns; ++j) {
    const size_t k = static_cast<size_t>(j * 2 + 1);
    Tokens prompt = first[k].prompt;
    prompt.insert(prompt.end(), outputs[k].begin(), outputs[k].end());
    const Tokens& more = w[static_cast<size_t>(j % 32)];
    prompt.insert(prompt.end(), more.begin() + 100, more.begin() + 104 + j % 5);
    out.push_back(request(kFirstWave + j, std::move(prompt)));
  }
  return out;
}

struct JobRun {
  std::vector<Tokens> tokens;
  PrefixCacheCounters target, draft;
  int cached_tokens = 0;  // Σ SpeculationStats::cached_tokens
  int used_blocks = -1;   // the target's referenced blocks after every session ended
  // The first prompt again under a cache_salt nobody used, twice: target
  // tokens found cached, draft rank tokens found cached.
  struct Salted {
    int cached_tokens = 0;
    uint64_t draft_hits = 0;
  } salted[2];
};

// Runs the wave to its end; returns the last request's cached tokens.
int run_wave(SpeculativeEngine& engine, const std::vector<SpeculationRequest>& wave,
             JobRun& out) {
  std::vector<SessionKey> keys;
  for (const SpeculationRequest& r : wave) keys.push_back(engine.add(r));
  engine.run_to_completion();
  int cached = 0;
  for (SessionKey key : keys) {
    SpeculationResult r = engine.take(key);
    EXPECT_EQ(r.finish, FinishReason::length) << (r.error ? r.error->what() : "");
    cached = r.stats.cached_tokens;
    out.cached_tokens += cached;
    out.tokens.push_back(std::move(r.tokens));
  }
  return cached;
}

JobRun run(EngineParts& parts) {
  std::vector<Drafter*> drafters{parts.model_drafter.get(), parts.ngram_drafter.get(),
                                 &parts.no_drafter};
  SpeculativeEngine engine(parts.target.config, *parts.target.cache, *parts.target_executor,
                           drafters, EngineOptions{});
  const std::vector<Tokens> w = windows();
  const std::vector<SpeculationRequest> first = first_wave(w);
  JobRun out;
  run_wave(engine, first, out);
  run_wave(engine, chat_turns(first, out.tokens, w), out);
  // The salt travels to the draft rank (DraftStep) and its hits come back
  // (DraftReply): a salt's first request finds nothing in either cache.
  SpeculationRequest salted = first[0];
  salted.cache_salt = 0x5a175a17;
  // A fixed γ, so that the draft rank surely drafts for it (under auto the
  // controller may choose γ = 0 and the draft cache is never looked up).
  salted.gamma = GammaPolicy{false, 4};
  for (JobRun::Salted& turn : out.salted) {
    const uint64_t draft_hits = parts.model_drafter->prefix_counters().hits;
    turn.cached_tokens = run_wave(engine, {salted}, out);
    turn.draft_hits = parts.model_drafter->prefix_counters().hits - draft_hits;
  }
  out.target = engine.target_prefix_counters();
  out.draft = parts.model_drafter->prefix_counters();
  out.used_blocks = parts.target.cache->used_blocks();
  return out;
}

// Every rank: one job. The coordinator's outputs, or nothing elsewhere.
std::optional<JobRun> run_job(bool caching) {
  Communicator& world = test_support::mpi_world();
  const DeploymentConfig config = config_for(caching);
  const ClusterLayout layout = make_cluster_layout(config.placement, world.rank(), world.size());
  std::unique_ptr<Communicator> tp_group = connect_tp_group(world, layout);
  std::unique_ptr<QRowsLink> q_rows_link = QRowsLink::connect(world, layout, true);
  PeerChannel channel(world, layout);
  channel.set_q_rows_link(q_rows_link.get());
  if (layout.role != Role::coordinator) {
    // The worker's model as `tandem serve` loads it (prefix caching on the
    // draft rank's cache as the deployment says; never on a target shard's).
    const WorkerLoader load = [&config](const ClusterLayout& self, Communicator* group) {
      return load_worker_model(config, self, group);
    };
    EXPECT_EQ(serve_worker(channel, tp_group.get(), load), 0);
    return std::nullopt;
  }
  std::unique_ptr<EngineHost> host = cluster_engine_host(config, channel);
  EngineParts parts;
  host->load(parts, std::cerr);
  EXPECT_EQ(parts.target.cache->prefix_caching(), caching);
  JobRun job = run(parts);
  host->stop();
  host->drain(std::cerr);
  return job;
}

TEST(ClusterPrefixCache, OutputsWithTheCacheAreTheOutputsWithout) {
  Communicator& world = test_support::mpi_world();
  ASSERT_EQ(world.size(), 4) << "run under mpiexec -n 4";
  const std::optional<JobRun> off = run_job(false);
  const std::optional<JobRun> on = run_job(true);
  if (!on) return;  // a worker rank
  ASSERT_EQ(on->tokens.size(), static_cast<size_t>(kFirstWave + kChatTurns + 2));
  ASSERT_EQ(off->tokens.size(), on->tokens.size());
  for (size_t i = 0; i < on->tokens.size(); ++i) {
    EXPECT_EQ(on->tokens[i].size(), 10u) << "prompt " << i;
    EXPECT_EQ(on->tokens[i], off->tokens[i]) << "prompt " << i;
  }
  EXPECT_EQ(off->target.hits, 0u);
  EXPECT_EQ(off->draft.queries, 0u);
  EXPECT_GT(on->target.hits, 0u) << "the target's cache never hit";
  EXPECT_GT(on->draft.hits, 0u) << "the draft rank's cache never hit";
  EXPECT_GT(on->cached_tokens, 0);
  EXPECT_EQ(on->used_blocks, 0) << "target blocks still referenced after every session ended";
  EXPECT_EQ(off->used_blocks, 0);
  EXPECT_EQ(on->salted[0].cached_tokens, 0) << "a new salt hit another salt's target blocks";
  EXPECT_EQ(on->salted[0].draft_hits, 0u) << "a new salt hit another salt's draft blocks";
  EXPECT_GT(on->salted[1].cached_tokens, 0) << "the salt's second request found nothing";
  EXPECT_GT(on->salted[1].draft_hits, 0u) << "the salt's second request found nothing drafted";
  std::printf("%d prompts, the same outputs with prefix caching on and off; target %llu of "
              "%llu prompt tokens cached, draft rank %llu of %llu\n",
              kFirstWave + kChatTurns + 2, static_cast<unsigned long long>(on->target.hits),
              static_cast<unsigned long long>(on->target.queries),
              static_cast<unsigned long long>(on->draft.hits),
              static_cast<unsigned long long>(on->draft.queries));
}

}  // namespace
}  // namespace tandem
