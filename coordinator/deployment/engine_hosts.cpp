#include "coordinator/deployment/engine_hosts.h"

#include "cluster/ranks/coordinator_rank.h"
#include "common/log_line.h"
#include "coordinator/deployment/engine_assembly.h"

namespace tandem {
namespace {

class LocalEngineHost final : public EngineHost {
 public:
  explicit LocalEngineHost(DeploymentConfig config) : config_(std::move(config)) {}
  void load(EngineParts& parts, std::ostream&) override {
    assemble_engine(config_, nullptr, parts);
  }

 private:
  DeploymentConfig config_;
};

class ClusterEngineHost final : public EngineHost {
 public:
  ClusterEngineHost(DeploymentConfig config, PeerChannel& channel)
      : config_(std::move(config)), channel_(channel) {}

  void load(EngineParts& parts, std::ostream& log) override {
    assemble_engine(config_, &channel_, parts);
    wait_for_workers(channel_, log);
  }
  bool can_lose_ranks() const override { return true; }
  std::string overdue_wait(double grace_seconds) const override {
    return channel_.overdue(grace_seconds);
  }
  std::string stop() override { return stop_workers(channel_); }
  void drain(std::ostream& log) override {
    if (!drain_q_rows(channel_))
      log_line(log, "the draft rank did not end its q rows within the step timeout");
  }

 private:
  DeploymentConfig config_;
  PeerChannel& channel_;
};

}  // namespace

std::unique_ptr<EngineHost> local_engine_host(const DeploymentConfig& config) {
  return std::make_unique<LocalEngineHost>(config);
}

std::unique_ptr<EngineHost> cluster_engine_host(const DeploymentConfig& config,
                                                PeerChannel& channel) {
  return std::make_unique<ClusterEngineHost>(config, channel);
}

}  // namespace tandem
