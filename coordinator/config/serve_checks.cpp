#include "coordinator/config/serve_checks.h"

#include <boost/asio/ip/address.hpp>
#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "coordinator/config/config_section.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// "FILE:LINE: key.path: what", or "--flag: what" for a key a flag overrode.
[[noreturn]] void fail(const DeploymentConfig& config, const std::string& key,
                       const std::string& what) {
  const ValueOrigins& origins = config.origins;
  if (const auto flag = origins.flags.find(key); flag != origins.flags.end()) {
    throw Error(ErrorKind::invalid_argument, flag->second + ": " + what);
  }
  const auto line = origins.lines.find(key);
  throw Error(ErrorKind::invalid_argument,
              config::located(origins.source, line == origins.lines.end() ? 0 : line->second,
                              key + ": " + what));
}

void check_port(const DeploymentConfig& config, std::int64_t port) {
  if (port < 0 || port > 65535) {
    fail(config, "server.port", "must be in [0, 65535], got " + std::to_string(port));
  }
}

// The server binds with make_address, as here: names are not resolved.
void check_host(const DeploymentConfig& config) {
  boost::system::error_code error;
  boost::asio::ip::make_address(config.server.host, error);
  if (error) {
    fail(config, "server.host",
         "must be an IP address to listen on (IPv4 or IPv6, e.g. 127.0.0.1, 0.0.0.0 or ::1); "
         "host names are not resolved, got \"" + config.server.host + "\"");
  }
}

// A directory that must hold `file`; key names it in the message.
void check_directory_holds(const DeploymentConfig& config, const std::string& key,
                           const fs::path& dir, const char* file, const char* what) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    fail(config, key, dir.string() + " is not a directory (" + what + "; relative paths "
                      "start from the directory tandem runs in)");
  }
  if (!fs::is_regular_file(dir / file, error)) {
    fail(config, key, dir.string() + " holds no " + file + " (" + what + ")");
  }
}

// section: "models.target" or "models.draft".
void check_model(const DeploymentConfig& config, const ModelSource& model,
                 const std::string& section) {
  const std::string tokenizer_key =
      section + (config.origins.lines.count(section + ".tokenizer") ? ".tokenizer" : ".path");
  if (model.load_format == LoadFormat::dummy) {
    // Random weights need only their shape: a config.json, or a directory holding one.
    std::error_code error;
    const bool shape_ok = fs::is_directory(model.shape, error)
                              ? fs::is_regular_file(model.shape / "config.json", error)
                              : fs::is_regular_file(model.shape, error);
    if (!shape_ok) {
      fail(config, section + ".shape",
           model.shape.string() + " is neither a config.json file nor a directory holding one "
                                  "(see configs/shapes/)");
    }
  } else {
    check_directory_holds(config, section + ".path", model.path, "config.json",
                          "a Hugging Face model directory: config.json, *.safetensors");
  }
  if (!model.tokenizer.empty()) {
    check_directory_holds(config, tokenizer_key, model.tokenizer, "tokenizer.json",
                          "the Hugging Face tokenizer file");
  }
}

}  // namespace

void override_host(DeploymentConfig& config, const std::string& host) {
  config.server.host = host;
  config.origins.flags["server.host"] = "--host";
}

void override_port(DeploymentConfig& config, std::int64_t port) {
  config.origins.flags["server.port"] = "--port";
  check_port(config, port);
  config.server.port = static_cast<int>(port);
}

void check_deployment_can_serve(const DeploymentConfig& config) {
  check_host(config);
  check_port(config, config.server.port);
  check_model(config, config.target, "models.target");
  if (config.draft) check_model(config, *config.draft, "models.draft");
  const std::string& key_variable = config.server.api_key_env;
  if (!key_variable.empty()) {
    const char* key = std::getenv(key_variable.c_str());
    if (key == nullptr || *key == '\0') {
      fail(config, "server.api_key_env",
           "names " + key_variable + ", but that environment variable is unset or empty "
                                     "(export it where tandem serve runs)");
    }
  }
}

}  // namespace tandem
