// `tandem serve [--config FILE] [--host H] [--port N] [--log-format F]`: run a
// YAML deployment until SIGTERM or SIGINT. `--check-config FILE` only checks it (no models
// are loaded, nothing is bound) and prints what it would run. Both run the
// same checks: the file's own (load_deployment), then what this machine
// must provide (check_deployment_can_serve), overrides included.
// `tandem serve --model DIR [--draft DIR] [--gamma G]` serves a checkpoint
// without a file (model_deployment.h), printing the deployment as YAML first.
#include <iostream>
#include <memory>
#include <optional>

#include "common/error.h"
#include "coordinator/cli/commands.h"
#include "coordinator/config/deployment_config.h"
#include "coordinator/config/model_deployment.h"
#include "coordinator/config/serve_checks.h"
#include "coordinator/deployment/serve_in_role.h"

namespace tandem::cli {
namespace {

struct ServeFlags {
  std::string config = "configs/local.yaml";
  std::string check_config;
  std::optional<std::string> host;
  std::optional<std::int64_t> port;
  // --model and what only it takes.
  std::optional<std::string> model;
  std::optional<std::string> draft;
  std::optional<std::string> gamma;
  std::optional<std::string> log_format;
};

// The deployment of --config FILE, or of --model DIR and its flags.
DeploymentConfig chosen_deployment(const std::string& path, const ServeFlags& flags) {
  if (!flags.model) {
    require(!flags.draft && !flags.gamma, ErrorKind::invalid_argument,
            std::string(flags.draft ? "--draft" : "--gamma") +
                " needs --model DIR (a deployment file sets them as models.draft.path and "
                "speculation.gamma)");
    return load_deployment(path);
  }
  ModelDeploymentFlags model_flags{.model = *flags.model, .draft = flags.draft};
  if (flags.gamma) model_flags.gamma = *flags.gamma;
  return model_deployment(model_flags);
}

DeploymentConfig deployment_with_overrides(const std::string& path, const ServeFlags& flags) {
  DeploymentConfig config = chosen_deployment(path, flags);
  // Overrides for scripts and tests (port 0: any free port, printed at start).
  if (flags.host) override_host(config, *flags.host);
  if (flags.port) override_port(config, *flags.port);
  if (flags.log_format) {
    require(*flags.log_format == "text" || *flags.log_format == "json", ErrorKind::invalid_argument,
            "--log-format: expected text or json, got \"" + *flags.log_format + "\"");
    config.server.log_format = *flags.log_format;
  }
  check_deployment_can_serve(config);
  return config;
}

}  // namespace

Run define_serve(Command& command) {
  auto flags = std::make_shared<ServeFlags>();
  Flag config_flag =
      add_value(command, "--config", flags->config, "the deployment to serve").type_name("FILE");
  Flag check_flag =
      add_value(command, "--check-config", flags->check_config,
                "check this deployment (and --host/--port) as serve would, print what it would "
                "run, and exit; loads no model")
          .type_name("FILE")
          .excludes(config_flag);
  add_value(command, "--host", flags->host,
            "listen on this IP address instead of server.host")
      .type_name("IP");
  add_value(command, "--port", flags->port,
            "listen on this port instead of server.port (0: any free port, printed at start)")
      .type_name("N");
  add_value(command, "--model", flags->model,
            "serve this Hugging Face checkpoint without a deployment file, every setting at its "
            "default; prints the deployment as YAML to grow into a file")
      .type_name("DIR")
      .excludes(config_flag)
      .excludes(check_flag);
  add_value(command, "--draft", flags->draft,
            "with --model: the draft model's checkpoint (without it the n-gram drafter "
            "proposes tokens)")
      .type_name("DIR");
  add_value(command, "--gamma", flags->gamma,
            "with --model: tokens drafted per step, auto (chosen from measured acceptance and "
            "costs) or 0..64 (0: plain decoding); default auto")
      .type_name("auto|N");
  add_value(command, "--log-format", flags->log_format,
            "the request log's lines, text or json, instead of server.log_format")
      .type_name("FORMAT");
  return [flags] {
    if (!flags->check_config.empty()) {
      const DeploymentConfig config = deployment_with_overrides(flags->check_config, *flags);
      std::cout << flags->check_config << ": OK\n" << describe(config);
      return 0;
    }
    const DeploymentConfig config = deployment_with_overrides(flags->config, *flags);
    if (flags->model) std::cout << model_deployment_yaml(config) << std::flush;
    return serve_in_role(config);
  };
}

}  // namespace tandem::cli
