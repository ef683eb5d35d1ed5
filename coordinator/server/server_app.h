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

#include "coordinator/config/deployment_config.h"

namespace tandem {

class ServerApp {
 public:
  explicit ServerApp(DeploymentConfig config, std::ostream& log);
  ~ServerApp();

  void start();
  int port() const;  // the bound port (server.port 0 picks one)
  void shutdown();

 private:
  struct Parts;
  DeploymentConfig config_;
  std::ostream& log_;
  std::unique_ptr<Parts> parts_;
};

// `tandem serve`: runs until SIGTERM or SIGINT, then shuts down gracefully.
int run_until_signalled(DeploymentConfig config);

}  // namespace tandem
