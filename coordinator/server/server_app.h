// ServerApp: one deployment, assembled and run.
//
// start() listens first (so /health answers at once), then loads the models,
// calibrates the speculation cost model and starts the engine thread; /ready
// turns 200 when that is done. shutdown() is the graceful stop that SIGTERM
// and SIGINT trigger: refuse new work, let in-flight completions finish for
// up to server.shutdown_grace_seconds, cancel the rest, stop.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "coordinator/config/deployment_config.h"

namespace tandem {

class PeerChannel;

class ServerApp {
 public:
  // cluster: the coordinator's channel to the other ranks of an MPI job
  // (null in a single process); the models placement puts on other ranks
  // are used through it and told to stop at shutdown.
  explicit ServerApp(DeploymentConfig config, std::ostream& log, PeerChannel* cluster = nullptr);
  ~ServerApp();

  void start();
  int port() const;  // the bound port (server.port 0 picks one)
  void shutdown();
  // Set once another rank is lost (the server then answers 503): why.
  std::string lost() const;

 private:
  struct Parts;
  void load_models();
  void wait_for_workers();
  void stop_workers();  // Shutdown to every other rank
  DeploymentConfig config_;
  std::ostream& log_;
  PeerChannel* cluster_;
  std::unique_ptr<Parts> parts_;
};

// `tandem serve` on the coordinator: runs until SIGTERM or SIGINT, then shuts
// down gracefully and returns 0. When another rank is lost it fails what is
// in flight with 503, stops, and returns kLostRankExit (the caller ends the
// job: the lost rank cannot be waited for).
constexpr int kLostRankExit = 3;
int run_until_signalled(DeploymentConfig config, PeerChannel* cluster = nullptr);

}  // namespace tandem
