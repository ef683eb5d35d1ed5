// TestServer: a whole deployment of the tiny model pair, started in this
// process on a free loopback port, shut down gracefully when the test ends.
// With TANDEM_TEST_MPI_RANKS=N in the environment the same deployment runs
// as an MPI job of N processes instead (mpi_job_server.h): the same tests
// then check the server under mpirun. With TANDEM_TEST_BACKEND=cuda the
// models run on CUDA device 0 (bf16 weights); every case is skipped when the
// machine has no device (cuda_environment_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "coordinator/config/deployment_config.h"
#include "coordinator/deployment/engine_hosts.h"
#include "coordinator/server/server_app.h"
#include "tests/server/http_client.h"
#include "tests/server/locked_log.h"
#include "tests/server/mpi_job_server.h"

namespace tandem::test_support {

// Sections of a test deployment; each is YAML placed under its key.
struct TinyDeployment {
  std::string server;       // extra lines under server:
  std::string scheduler;    // lines under scheduler:
  std::string speculation;  // lines under speculation:
  std::string sampling;     // lines under sampling:
  bool draft = true;
  // On CUDA: every matmul on the batch-invariant kernel, for tests whose
  // claim is that a request's output does not depend on its neighbours
  // (above 64 rows cuBLAS rounds differently; the CPU is always invariant).
  bool batch_invariant = false;
  // The target's tokenizer directory, when not the model's own (and with it
  // the chat template, read from there).
  std::string target_tokenizer;

  std::string yaml() const {
    const std::string tiny = std::string(TANDEM_SOURCE_DIR) + "/models/tiny";
    std::ostringstream out;
    out << "server:\n  host: 127.0.0.1\n  port: 0\n" << server
        << "models:\n  target:\n    path: " << tiny << "/target\n";
    if (!target_tokenizer.empty()) out << "    tokenizer: " << target_tokenizer << "\n";
    if (draft) out << "  draft:\n    path: " << tiny << "/draft\n";
    if (!scheduler.empty()) out << "scheduler:\n" << scheduler;
    if (!speculation.empty()) out << "speculation:\n" << speculation;
    if (!sampling.empty()) out << "sampling:\n" << sampling;
    if (const char* backend = std::getenv("TANDEM_TEST_BACKEND")) {
      out << "placement:\n  backend: " << backend << "\n";
      if (batch_invariant) out << "  batch_invariant: true\n";
    }
    return out.str();
  }
};

class TestServer {
 public:
  explicit TestServer(const TinyDeployment& deployment = {}) {
    if (const int ranks = mpi_test_ranks(); ranks > 0) {
      job_ = std::make_unique<MpiJobServer>(deployment.yaml(), deployment.draft, ranks);
    } else {
      DeploymentConfig config = parse_deployment(deployment.yaml(), "test.yaml");
      std::unique_ptr<EngineHost> host = local_engine_host(config);
      app_ = std::make_unique<ServerApp>(std::move(config), log_, std::move(host));
      app_->start();
    }
  }
  ~TestServer() { shutdown(); }

  int port() const { return job_ ? job_->port() : app_->port(); }
  // The graceful shutdown SIGTERM triggers (in an MPI job: SIGTERM to rank 0,
  // and every rank must exit 0).
  void shutdown() {
    if (app_) app_->shutdown();
    if (job_ && job_->shutdown() != 0) ADD_FAILURE() << "the MPI job did not exit 0";
  }
  HttpClient client() const { return HttpClient(port()); }

  // POST /v1/completions on a fresh connection; the parsed JSON body.
  nlohmann::json complete(const nlohmann::json& body, int expect_status = 200) const {
    HttpClient http(port());
    const HttpReply reply = http.post_json("/v1/completions", body.dump());
    if (reply.status != expect_status)
      throw std::runtime_error("status " + std::to_string(reply.status) + ": " + reply.body);
    return nlohmann::json::parse(reply.body);
  }

  // POST /v1/chat/completions on a fresh connection; the parsed JSON body.
  nlohmann::json chat(const nlohmann::json& body, int expect_status = 200) const {
    HttpClient http(port());
    const HttpReply reply = http.post_json("/v1/chat/completions", body.dump());
    if (reply.status != expect_status)
      throw std::runtime_error("status " + std::to_string(reply.status) + ": " + reply.body);
    return nlohmann::json::parse(reply.body);
  }

  // The value of one sample in GET /metrics, e.g.
  // metric("tandem_kv_cache_blocks_used{model=\"target\"}"); -1 if absent.
  // A model_name label is left out of the name asked for (one model is
  // served): metric("tandem_prompt_tokens_total") finds
  // tandem_prompt_tokens_total{model_name="tandem"}.
  double metric(const std::string& series) const {
    HttpClient http(port());
    const std::string text = http.send("GET", "/metrics").body;
    static const std::regex model_name_label(R"re(model_name="[^"]*",?)re");
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      line = std::regex_replace(line, model_name_label, "", std::regex_constants::format_first_only);
      for (const auto& [from, to] : {std::pair<std::string, std::string>{",}", "}"}, {"{}", ""}}) {
        if (const size_t at = line.find(from); at != std::string::npos && at < line.find(' '))
          line.replace(at, from.size(), to);
      }
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return -1;
  }

  // What the server has logged so far (its stderr: the request log, warnings).
  std::string log_text() const { return job_ ? job_->log_text() : log_.text(); }

 private:
  LockedLog log_;  // declared before app_: outlives the server writing to it
  std::unique_ptr<ServerApp> app_;
  std::unique_ptr<MpiJobServer> job_;
};

}  // namespace tandem::test_support
