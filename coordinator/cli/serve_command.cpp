// `tandem serve [--config FILE] [--host H] [--port N]`: run a YAML deployment
// until SIGTERM or SIGINT. `--check-config FILE` only validates the file (no
// models are loaded) and prints what it would run.
#include <iostream>

#include "common/error.h"
#include "coordinator/cli/args.h"
#include "coordinator/cli/commands.h"
#include "coordinator/config/deployment_config.h"
#include "coordinator/deployment/serve_in_role.h"

namespace tandem::cli {

int serve_command(const Words& words) {
  const Args args(words, {"config", "check-config", "host", "port"}, {});
  if (args.has("check-config")) {
    const std::string path = args.get("check-config");
    const DeploymentConfig config = load_deployment(path);
    std::cout << path << ": OK\n" << describe(config);
    return 0;
  }
  DeploymentConfig config = load_deployment(args.get("config", "configs/local.yaml"));
  // Overrides for scripts and tests (port 0: any free port, printed at start).
  if (args.has("host")) config.server.host = args.get("host");
  if (args.has("port")) {
    const int64_t port = args.get_int("port", 0);
    require(port >= 0 && port <= 65535, ErrorKind::invalid_argument, "--port must be in [0, 65535]");
    config.server.port = static_cast<int>(port);
  }
  return serve_in_role(std::move(config));
}

}  // namespace tandem::cli
