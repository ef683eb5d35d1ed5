// TestServer: a whole deployment of the tiny model pair, started in this
// process on a free loopback port, shut down gracefully when the test ends.
#pragma once

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "coordinator/config/deployment_config.h"
#include "coordinator/server/server_app.h"
#include "tests/server/http_client.h"

namespace tandem::test_support {

// Sections of a test deployment; each is YAML placed under its key.
struct TinyDeployment {
  std::string server;       // extra lines under server:
  std::string scheduler;    // lines under scheduler:
  std::string speculation;  // lines under speculation:
  bool draft = true;

  std::string yaml() const {
    const std::string tiny = std::string(TANDEM_SOURCE_DIR) + "/models/tiny";
    std::ostringstream out;
    out << "server:\n  host: 127.0.0.1\n  port: 0\n" << server
        << "models:\n  target:\n    path: " << tiny << "/target\n";
    if (draft) out << "  draft:\n    path: " << tiny << "/draft\n";
    if (!scheduler.empty()) out << "scheduler:\n" << scheduler;
    if (!speculation.empty()) out << "speculation:\n" << speculation;
    return out.str();
  }
};

class TestServer {
 public:
  explicit TestServer(const TinyDeployment& deployment = {})
      : app_(parse_deployment(deployment.yaml(), "test.yaml"), log_) {
    app_.start();
  }
  ~TestServer() { app_.shutdown(); }

  int port() const { return app_.port(); }
  ServerApp& app() { return app_; }
  HttpClient client() const { return HttpClient(port()); }

  // POST /v1/completions on a fresh connection; the parsed JSON body.
  nlohmann::json complete(const nlohmann::json& body, int expect_status = 200) const {
    HttpClient http(port());
    const HttpReply reply = http.post_json("/v1/completions", body.dump());
    if (reply.status != expect_status)
      throw std::runtime_error("status " + std::to_string(reply.status) + ": " + reply.body);
    return nlohmann::json::parse(reply.body);
  }

  // The value of one sample in GET /metrics, e.g.
  // metric("tandem_kv_cache_blocks_used{model=\"target\"}"); -1 if absent.
  double metric(const std::string& series) const {
    HttpClient http(port());
    const std::string text = http.send("GET", "/metrics").body;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return -1;
  }

 private:
  std::ostringstream log_;
  ServerApp app_;
};

}  // namespace tandem::test_support
