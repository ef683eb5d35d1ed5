// ServerApp: one deployment, run.
//
// start() listens first (so /health answers at once), then has its
// EngineHost load the models (engine_host.h: local, or proxies for other
// ranks of an MPI job, decided by coordinator/deployment/),
// calibrates the speculation cost model and starts the engine thread; /ready
// turns 200 when that is done. shutdown() is the graceful stop that SIGTERM
// and SIGINT trigger: refuse new work, let in-flight completions finish for
// up to server.shutdown_grace_seconds, cancel the rest, stop.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "coordinator/config/deployment_config.h"
#include "coordinator/server/engine_host.h"

namespace tandem {

class ServerApp {
 public:
  // host: where the models are loaded (coordinator/deployment/engine_hosts.h).
  ServerApp(DeploymentConfig config, std::ostream& log, std::unique_ptr<EngineHost> host);
  ~ServerApp();

  void start();
  int port() const;  // the bound port (server.port 0 picks one)
  void shutdown();
  // Set once another rank is lost (the server then answers 503): why.
  std::string lost() const;

 private:
  struct Parts;
  void note_lost(const std::string& why);
  // While another rank can be lost: a watchdog for a wait for one that is
  // stuck past its step timeout; it ends the process (end_with_stuck_wait).
  void watch_for_stuck_waits();
  [[noreturn]] void end_with_stuck_wait(const std::string& why);

  DeploymentConfig config_;
  std::ostream& log_;
  std::unique_ptr<EngineHost> host_;
  std::unique_ptr<Parts> parts_;
};

// `tandem serve` on the coordinator: runs until SIGTERM or SIGINT, then shuts
// down gracefully and returns 0. When another rank is lost it fails what is
// in flight with 503, stops, and returns kLostRankExit (the caller ends the
// job: the lost rank cannot be waited for).
constexpr int kLostRankExit = 3;
int run_until_signalled(DeploymentConfig config, std::unique_ptr<EngineHost> host);

}  // namespace tandem
