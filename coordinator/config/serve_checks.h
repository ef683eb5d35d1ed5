// check_deployment_can_serve: what `tandem serve` would reject at start,
// checked before anything is loaded or bound, so that `--check-config`
// catches it too: the host must be an IP literal the HTTP server can bind
// (it does not resolve names: `localhost` fails at bind), the port in range,
// each model directory present with its config.json and tokenizer.json (a
// dummy model needs its shape file instead), and the API key variable set.
// Each failure is Error(invalid_argument) naming the key and line, or the
// flag that overrode the key.
#pragma once

#include <cstdint>
#include <string>

#include "coordinator/config/deployment_config.h"

namespace tandem {

// `tandem serve --host H` / `--port N`: the override, remembered as the flag's.
// A port outside [0, 65535] is an error naming --port.
void override_host(DeploymentConfig& config, const std::string& host);
void override_port(DeploymentConfig& config, std::int64_t port);

// Throws the first problem found; paths are relative to the current directory.
void check_deployment_can_serve(const DeploymentConfig& config);

}  // namespace tandem
