// The gumbel coupling under MPI: seeded requests give exactly the single
// process's plain seeded output (the engine with no drafter), token for
// token, whatever the placement. The tiny pair of configs/cluster-cpu.yaml,
// one batch of 12 sessions per job at temperature 0.7 and 1.0 with top_p
// 0.9, γ 1, 3, 6 or auto, the draft model or n-gram lookup, and half the
// sessions pipelined (the others lockstep: SpeculationRequest::pipeline).
// The coupling travels to the draft rank in DraftStep and to the target
// ranks in TargetStep (wire format 7).
//
// One binary, run at 2, 3 and 4 ranks; every rank runs the same jobs in
// turn, each with its own placement:
//   2 ranks: the draft on rank 1 drafting ahead, the target in the
//            coordinator's process (the q rows come to it, unread by gumbel
//            blocks, and must still be taken).
//   3 ranks: TP 1 (draft on rank 1, target on rank 2), drafting ahead, then
//            ping-pong; then the draft in the coordinator's process with
//            the target at TP 2 on ranks 1 and 2 (its q rows go over the link).
//   4 ranks: TP 2 (draft on rank 1, target on ranks 2 and 3), drafting
//            ahead, then ping-pong.
// Rank 0 computes the single-process reference first.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "tests/support/mpi/mpi_world.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = TANDEM_SOURCE_DIR;
constexpr int kSessions = 12;

struct Shape {
  std::string name;
  int draft_rank;
  std::vector<int> target_ranks;
  PipelineMode pipeline;
};

std::vector<Shape> shapes(int world) {
  if (world == 2)
    return {{"TP 1 in the coordinator, draft apart, ahead", 1, {0}, PipelineMode::ahead}};
  if (world == 3)
    return {{"TP 1, draft apart, ahead", 1, {2}, PipelineMode::ahead},
            {"TP 1, draft apart, ping-pong", 1, {2}, PipelineMode::pingpong},
            {"TP 2, draft in the coordinator", 0, {1, 2}, PipelineMode::automatic}};
  if (world == 4)
    return {{"TP 2, draft apart, ahead", 1, {2, 3}, PipelineMode::ahead},
            {"TP 2, draft apart, ping-pong", 1, {2, 3}, PipelineMode::pingpong}};
  return {};
}

DeploymentConfig config_for(const Shape& shape) {
  fs::current_path(kSource);  // the config's model paths are relative to the checkout
  DeploymentConfig config = load_deployment(kSource / "configs" / "cluster-cpu.yaml");
  config.scheduler.kv_blocks = 96;  // the same on every rank: the coordinator's
  config.scheduler.draft_kv_blocks = 160;  // account is replayed by each target rank
  config.placement.draft_rank = shape.draft_rank;
  config.placement.target_ranks = shape.target_ranks;
  config.placement.target_devices.clear();
  config.speculation.pipeline = {shape.pipeline, 0.0};
  return config;
}

std::vector<SpeculationRequest> requests(bool plain) {
  std::ifstream file(kSource / "models" / "tiny" / "eval_reference.json");
  const auto windows =
      nlohmann::json::parse(file).at("windows").get<std::vector<std::vector<int32_t>>>();
  std::vector<SpeculationRequest> out;
  for (int i = 0; i < kSessions; ++i) {
    SpeculationRequest r;
    const auto& window = windows[static_cast<size_t>(i)];
    r.prompt.assign(window.begin(), window.begin() + 8 + 3 * i);
    r.max_new_tokens = 16;
    r.sampling = {.temperature = i % 2 ? 1.0f : 0.7f, .top_p = 0.9f,
                  .seed = 700 + static_cast<uint64_t>(i), .coupling = Coupling::gumbel};
    r.drafter = plain ? "none" : i % 6 == 5 ? "ngram" : "model";
    constexpr int kFixedGamma[] = {1, 3, 6};
    r.gamma = i % 4 == 3 ? GammaPolicy{true, 8} : GammaPolicy{false, kFixedGamma[i % 4]};
    r.pipeline = (i / 2) % 2 == 0;
    out.push_back(r);
  }
  return out;
}

struct JobRun {
  std::vector<std::vector<int32_t>> tokens;
  int accepted = 0, pipelined_steps = 0;
};

JobRun run(const DeploymentConfig& config, EngineParts& parts, bool plain) {
  // The model drafter first: pipelined drafting is the first drafter's.
  std::vector<Drafter*> drafters{parts.model_drafter.get(), parts.ngram_drafter.get(),
                                 &parts.no_drafter};
  SpeculativeEngine engine(parts.target.config, *parts.target.cache, *parts.target_executor,
                           drafters, EngineOptions{});
  engine.set_pipeline(config.speculation.pipeline);
  std::vector<SessionKey> keys;
  for (const SpeculationRequest& r : requests(plain)) keys.push_back(engine.add(r));
  JobRun out;
  while (engine.waiting() + engine.running() > 0) {
    engine.step();
    if (engine.last_step().shape != StepShape::plain) ++out.pipelined_steps;
  }
  for (SessionKey key : keys) {
    SpeculationResult r = engine.take(key);
    EXPECT_EQ(r.finish, FinishReason::length) << (r.error ? r.error->what() : "");
    out.accepted += r.stats.accepted_tokens;
    out.tokens.push_back(std::move(r.tokens));
  }
  return out;
}

// Every rank: one job with this shape. The coordinator's outputs, or
// nothing on the other ranks.
std::optional<JobRun> run_job(const Shape& shape) {
  Communicator& world = test_support::mpi_world();
  const DeploymentConfig config = config_for(shape);
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
    EXPECT_EQ(serve_worker(channel, tp_group.get(), load), 0) << shape.name;
    return std::nullopt;
  }
  std::unique_ptr<EngineHost> host = cluster_engine_host(config, channel);
  EngineParts parts;
  host->load(parts, std::cerr);
  JobRun job = run(config, parts, false);
  host->stop();
  host->drain(std::cerr);
  return job;
}

TEST(ClusterGumbelCoupling, SeededOutputsAreThePlainSingleProcessOutputs) {
  Communicator& world = test_support::mpi_world();
  ASSERT_FALSE(shapes(world.size()).empty()) << "run under mpiexec -n 2, 3 or 4";
  std::vector<std::vector<int32_t>> expected;
  if (world.rank() == 0) {
    const DeploymentConfig config = config_for(shapes(world.size()).front());
    EngineParts parts;
    assemble_engine(config, nullptr, parts);  // every model in this process
    expected = run(config, parts, true).tokens;
  }
  for (const Shape& shape : shapes(world.size())) {
    const std::optional<JobRun> job = run_job(shape);
    if (!job) continue;
    EXPECT_EQ(job->tokens.size(), expected.size());
    for (size_t i = 0; i < std::min(expected.size(), job->tokens.size()); ++i)
      EXPECT_EQ(job->tokens[i], expected[i]) << shape.name << ", session " << i;
    EXPECT_GT(job->accepted, 0) << shape.name << ": no draft was kept";
    if (shape.pipeline != PipelineMode::automatic) {
      EXPECT_GT(job->pipelined_steps, 0) << shape.name << ": the forced shape never ran";
    }
    std::printf("%s: %d sessions compared with one process's plain decoding, %d drafts kept, "
                "%d pipelined steps\n", shape.name.c_str(), kSessions, job->accepted,
                job->pipelined_steps);
  }
}

}  // namespace
}  // namespace tandem
