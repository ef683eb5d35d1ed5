#include "coordinator/config/model_deployment.h"

#include <yaml-cpp/yaml.h>

#include <sstream>

#include "common/error.h"
#include "coordinator/config/speculation_section.h"

namespace tandem {
namespace {

// The keys a --model deployment names. server is absent in the YAML that
// builds the deployment (its --host/--port are applied afterwards as the
// overrides they are with --config) and present in the one printed.
struct ImpliedKeys {
  std::optional<std::pair<std::string, int>> server;  // host, port
  std::string target;
  std::optional<std::string> draft;
  std::string drafter;
  std::optional<int> gamma;  // nullopt: auto
};

// The emitter quotes what needs quoting (a path holding ": " or "#").
std::string keys_yaml(const ImpliedKeys& keys) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (keys.server) {
    out << YAML::Key << "server" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "host" << YAML::Value << keys.server->first;
    out << YAML::Key << "port" << YAML::Value << keys.server->second;
    out << YAML::EndMap;
  }
  out << YAML::Key << "models" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "target" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << keys.target << YAML::EndMap;
  if (keys.draft) {
    out << YAML::Key << "draft" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "path" << YAML::Value << *keys.draft << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "speculation" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "drafter" << YAML::Value << keys.drafter;
  out << YAML::Key << "gamma" << YAML::Value;
  if (keys.gamma) {
    out << *keys.gamma;
  } else {
    out << "auto";
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// --gamma: "auto" (nullopt) or an integer in [0, kMaxGamma], digits only as
// the YAML key takes it.
std::optional<int> read_gamma_flag(const std::string& text) {
  if (text == "auto") return std::nullopt;
  const std::string problem = "--gamma: expected \"auto\" or an integer in [0, " +
                              std::to_string(config::kMaxGamma) + "], got \"" + text + "\"";
  const bool digits = !text.empty() && text.size() <= 3 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  require(digits, ErrorKind::invalid_argument, problem);
  const int gamma = std::stoi(text);
  require(gamma <= config::kMaxGamma, ErrorKind::invalid_argument, problem);
  return gamma;
}

}  // namespace

DeploymentConfig model_deployment(const ModelDeploymentFlags& flags) {
  ImpliedKeys keys;
  keys.target = flags.model;
  keys.draft = flags.draft;
  keys.drafter = flags.draft ? "model" : "ngram";
  keys.gamma = read_gamma_flag(flags.gamma);
  DeploymentConfig config = parse_deployment(keys_yaml(keys), "tandem serve --model");
  // The start-up checks name the flag that gave each path.
  config.origins.flags["models.target.path"] = "--model";
  if (flags.draft) config.origins.flags["models.draft.path"] = "--draft";
  return config;
}

std::string model_deployment_yaml(const DeploymentConfig& config) {
  ImpliedKeys keys;
  keys.server = std::pair(config.server.host, config.server.port);
  keys.target = config.target.path.string();
  if (config.draft) keys.draft = config.draft->path.string();
  keys.drafter = drafter_name(config.speculation.drafter);
  if (!config.speculation.gamma_auto) keys.gamma = config.speculation.gamma;

  std::ostringstream out;
  out << "# The deployment `tandem serve --model` runs. Saved as a file, `tandem serve\n"
         "# --config FILE` serves the same; configs/README.md documents every other key.\n"
      << keys_yaml(keys) << "# With every other key at its default:\n";
  std::istringstream summary(describe(config));
  for (std::string line; std::getline(summary, line);) out << "#   " << line << "\n";
  return out.str();
}

}  // namespace tandem
