// `tandem serve --config FILE`: run a YAML deployment.
//
// The HTTP server arrives with the coordinator issue; until then serve loads
// the deployment's target model and streams a short demo completion, so that
// `make serve` already exercises loading, tokenizing and decoding end to end.
#include <yaml-cpp/yaml.h>

#include <iostream>

#include "common/error.h"
#include "coordinator/cli/args.h"
#include "coordinator/cli/commands.h"

namespace tandem::cli {

int serve_command(const Words& words) {
  const Args args(words, {"config", "prompt", "max-tokens"}, {});
  const std::string config_path = args.get("config", "configs/local.yaml");
  YAML::Node root;
  try {
    root = YAML::LoadFile(config_path);
  } catch (const YAML::Exception& error) {
    throw Error(ErrorKind::invalid_argument, config_path + ": " + error.what());
  }
  const YAML::Node target = root["models"]["target"]["path"];
  require(target && target.IsScalar(), ErrorKind::invalid_argument,
          config_path + ": missing key models.target.path (the target checkpoint directory)");

  std::cerr << "tandem serve: the HTTP server is not built yet; running a demo completion on "
            << target.as<std::string>() << "\n";
  return generate_command({"--model", target.as<std::string>(), "--prompt",
                           args.get("prompt", "The history of the city"), "--max-tokens",
                           args.get("max-tokens", "48"), "--stats"});
}

}  // namespace tandem::cli
