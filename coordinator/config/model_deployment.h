// The deployment `tandem serve --model DIR [--draft DIR] [--gamma G]` serves
// without a file: the one a YAML naming only those keys describes, every
// other key at its default. It is built by writing that YAML and reading it
// with parse_deployment, so it cannot drift from what the same file would
// give; and it is printed as YAML at start, so that a user can save it and
// grow it into a deployment file.
//
// Without --draft the drafter is the n-gram one (prompt lookup): it needs no
// second model, it is lossless like any drafter, and with γ auto the γ
// controller drafts only when measured acceptance pays for it (γ = 0, plain
// decoding, otherwise), so it can only help. --gamma 0 asks for plain decoding.
#pragma once

#include <optional>
#include <string>

#include "coordinator/config/deployment_config.h"

namespace tandem {

struct ModelDeploymentFlags {
  std::string model;                 // --model DIR: the target's checkpoint
  std::optional<std::string> draft = std::nullopt;  // --draft DIR: the draft model's checkpoint
  std::string gamma = "auto";        // --gamma: "auto" or an integer in [0, 64]
};

// The deployment those flags imply. Errors name the flag: --gamma out of
// range or not a number is Error(invalid_argument); the later start-up checks
// (check_deployment_can_serve) name --model and --draft for their paths.
DeploymentConfig model_deployment(const ModelDeploymentFlags& flags);

// The YAML of a deployment made by model_deployment (after any --host/--port
// override): the keys the flags set and server.host and server.port, then,
// as comments, describe()'s summary of what the defaults fill in. Read back
// by `tandem serve --config`, it gives the same deployment.
std::string model_deployment_yaml(const DeploymentConfig& config);

}  // namespace tandem
