// Logprobs under MPI: the tiny pair as configs/cluster-cpu.yaml places it
// (coordinator on rank 0, the draft on rank 1, the target tensor-parallel
// over ranks 2 and 3) scores the same tokens as one process does. Greedy
// and seeded sampled sessions (q rows from the draft rank), prompt scores
// in chunked prefill, a prompt scored with max_tokens 0, and blocks the
// draft rank drafted ahead: the scores travel in TargetResult from target
// rank 0, where verification runs.
//
// Rank 0 runs both engines: first every model in its own process, then the
// job's proxies; ranks 1..3 serve the job until the coordinator's Shutdown.
// Tolerance 1e-5: the two target shards sum their halves of each matmul
// apart, then all-reduce, so the job's logits differ from one process's by
// float32 rounding (2.2e-6 at most in a logprob when written; the tokens
// themselves are the same).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
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
#include "tests/support/mpi/mpi_world.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = TANDEM_SOURCE_DIR;
constexpr double kTolerance = 1e-5;

DeploymentConfig job_config() {
  fs::current_path(kSource);  // the config's model paths are relative to the checkout
  DeploymentConfig config = load_deployment(kSource / "configs" / "cluster-cpu.yaml");
  config.scheduler.kv_blocks = 64;         // the same on every rank: the coordinator's
  config.scheduler.draft_kv_blocks = 128;  // account is replayed by each target rank
  config.scheduler.step_token_budget = 16;  // long prompts are prefilled in chunks
  // The draft rank drafts each block ahead of the one under verification,
  // so scored blocks come from ready blocks too (one process drafts in
  // lockstep: its draft cannot work apart).
  config.speculation.pipeline = {PipelineMode::ahead, 0.0};
  return config;
}

std::vector<SpeculationRequest> requests() {
  std::ifstream file(kSource / "models" / "tiny" / "eval_reference.json");
  const auto windows =
      nlohmann::json::parse(file).at("windows").get<std::vector<std::vector<int32_t>>>();
  std::vector<SpeculationRequest> out;
  for (size_t i = 0; i < 6; ++i) {
    SpeculationRequest r;
    r.prompt.assign(windows[i].begin(), windows[i].begin() + static_cast<long>(12 + 5 * i));
    r.max_new_tokens = 24;
    r.drafter = "model";
    r.gamma = GammaPolicy{false, 4};
    r.logprobs = static_cast<int>(i) % 3 + 1;
    r.prompt_logprobs = i % 2 == 1;
    if (i >= 2) r.sampling = {.temperature = 0.8f, .top_k = i == 3 ? 40 : 0,
                              .top_p = i == 4 ? 0.9f : 1.0f, .seed = 500 + i};
    else r.sampling.temperature = 0.0f;
    out.push_back(r);
  }
  out.back().max_new_tokens = 0;  // echo only: score the prompt, generate nothing
  out.back().prompt_logprobs = true;
  return out;
}

// Runs every request as one batch on the parts' engine.
std::vector<SpeculationResult> run(const DeploymentConfig& config, EngineParts& parts) {
  std::vector<Drafter*> drafters{parts.model_drafter.get(), &parts.no_drafter};
  EngineOptions options;
  options.step_token_budget = config.scheduler.step_token_budget;
  SpeculativeEngine engine(parts.target.config, *parts.target.cache, *parts.target_executor,
                           drafters, options);
  engine.set_pipeline(config.speculation.pipeline);
  std::vector<SessionKey> keys;
  for (const SpeculationRequest& r : requests()) keys.push_back(engine.add(r));
  engine.run_to_completion();
  std::vector<SpeculationResult> results;
  for (SessionKey key : keys) results.push_back(engine.take(key));
  return results;
}

double largest_difference(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b,
                          const std::string& name) {
  EXPECT_EQ(a.size(), b.size()) << name;
  double largest = 0;
  for (size_t j = 0; j < std::min(a.size(), b.size()); ++j) {
    EXPECT_EQ(a[j].token, b[j].token) << name << " entry " << j;
    largest = std::max(largest, std::abs(double{a[j].logprob} - b[j].logprob));
    EXPECT_EQ(a[j].top.size(), b[j].top.size()) << name << " entry " << j;
    for (size_t i = 0; i < std::min(a[j].top.size(), b[j].top.size()); ++i) {
      EXPECT_EQ(a[j].top[i].first, b[j].top[i].first) << name << " entry " << j << " top " << i;
      largest = std::max(largest, std::abs(double{a[j].top[i].second} - b[j].top[i].second));
    }
  }
  return largest;
}

TEST(ClusterLogprobs, TheJobScoresWhatOneProcessScores) {
  Communicator& world = test_support::mpi_world();
  ASSERT_EQ(world.size(), 4) << "run under mpiexec -n 4";
  const DeploymentConfig config = job_config();
  const ClusterLayout layout = make_cluster_layout(config.placement, world.rank(), world.size());
  std::unique_ptr<Communicator> tp_group = connect_tp_group(world, layout);
  std::unique_ptr<QRowsLink> q_rows_link = QRowsLink::connect(world, layout, true);
  PeerChannel channel(world, layout);
  channel.set_q_rows_link(q_rows_link.get());

  if (layout.role != Role::coordinator) {
    const WorkerLoader load = [&config](const ClusterLayout& self, Communicator* group) {
      const bool draft = self.role == Role::draft;
      WorkerModel loaded;
      loaded.backend = make_cpu_backend();
      ModelSpec spec = draft ? model_spec(*config.draft, config.scheduler.draft_kv_blocks,
                                          config.scheduler.block_size)
                             : model_spec(config.target, config.scheduler.kv_blocks,
                                          config.scheduler.block_size);
      spec.tokenizer_dir.reset();
      if (!draft) spec.shard = TensorShard{self.tp_rank, config.placement.tensor_parallel(), group};
      LoadedModel model = load_model(spec, *loaded.backend);
      loaded.model = std::move(model.model);
      loaded.cache = std::move(model.cache);
      return loaded;
    };
    EXPECT_EQ(serve_worker(channel, tp_group.get(), load), 0);
    return;
  }

  std::vector<SpeculationResult> alone, job;
  {
    EngineParts parts;
    assemble_engine(config, nullptr, parts);  // every model in this process
    alone = run(config, parts);
  }
  std::unique_ptr<EngineHost> host = cluster_engine_host(config, channel);
  {
    EngineParts parts;
    host->load(parts, std::cerr);
    job = run(config, parts);
    host->stop();
    host->drain(std::cerr);
  }
  const auto sent = requests();
  double largest = 0;
  size_t scores = 0;
  int ahead_hits = 0;
  for (size_t i = 0; i < sent.size(); ++i) {
    const std::string name = "session " + std::to_string(i);
    EXPECT_EQ(job[i].tokens, alone[i].tokens) << name;
    EXPECT_EQ(job[i].finish, alone[i].finish) << name;
    EXPECT_EQ(job[i].logprobs.size(), job[i].tokens.size()) << name;
    EXPECT_EQ(job[i].prompt_logprobs.size(), sent[i].prompt_logprobs ? sent[i].prompt.size() - 1 : 0u)
        << name;
    largest = std::max(largest, largest_difference(job[i].logprobs, alone[i].logprobs, name));
    largest = std::max(largest, largest_difference(job[i].prompt_logprobs, alone[i].prompt_logprobs,
                                                   name + " prompt"));
    scores += job[i].logprobs.size() + job[i].prompt_logprobs.size();
    ahead_hits += job[i].stats.ahead_hits;
  }
  EXPECT_GT(ahead_hits, 0) << "no block drafted ahead was verified";
  EXPECT_TRUE(job.back().tokens.empty());
  EXPECT_EQ(job.back().finish, FinishReason::length);
  EXPECT_LT(largest, kTolerance);
  std::printf("%zu scores, %d ahead hits; largest difference from one process %.3g "
              "(tolerance %.0e)\n", scores, ahead_hits, largest, kTolerance);
}

}  // namespace
}  // namespace tandem
