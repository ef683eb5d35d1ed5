// `tandem serve --config FILE`: run a YAML deployment.
//
// The HTTP server arrives with the coordinator issue; until then serve loads
// the deployment's target (and draft) model and streams a short demo
// completion with speculative decoding, so that `make serve` already
// exercises loading, tokenizing, drafting and verification end to end.
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

  Words demo{"--model", target.as<std::string>(), "--prompt",
             args.get("prompt", "The history of the city"), "--max-tokens",
             args.get("max-tokens", "48"), "--stats"};
  const YAML::Node draft = root["models"]["draft"]["path"];
  if (draft && draft.IsScalar()) demo.insert(demo.end(), {"--draft", draft.as<std::string>(), "--gamma", "auto"});
  std::cerr << "tandem serve: the HTTP server is not built yet; running a demo completion on "
            << target.as<std::string>() << (draft ? " with draft " + draft.as<std::string>() : "")
            << "\n";
  return generate_command(demo);
}

}  // namespace tandem::cli
