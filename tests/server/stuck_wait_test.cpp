// A server that can lose ranks keeps a watchdog on its waits for them
// (ServerApp): a wait still under way past its step timeout means MPI holds
// the waiting thread, which will never time out by itself. The server then
// logs the lost rank, answers what is in flight with 503 (EngineLoop::
// abandon_all, tested in engine_loop_test.cpp) and ends the process with
// kLostRankExit, so that mpirun ends the job. Here the tiny pair runs in
// this process behind a host that reports such a wait on demand.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;

// The local engine, presented as a job's: it can lose ranks, and its wait
// for rank 3 is overdue once `held` is set.
class HeldWaitHost final : public EngineHost {
 public:
  HeldWaitHost(const DeploymentConfig& config, const std::atomic<bool>& held)
      : inner_(local_engine_host(config)), held_(held) {}
  void load(EngineParts& parts, std::ostream& log) override { inner_->load(parts, log); }
  bool can_lose_ranks() const override { return true; }
  std::string overdue_wait(double) const override {
    if (!held_.load()) return {};
    return "rank 3 (target shard 1 of 2, on host node-d) did not return the result of target "
           "step 7 within 3 s (placement.step_timeout_seconds): it is lost";
  }

 private:
  std::unique_ptr<EngineHost> inner_;
  const std::atomic<bool>& held_;
};

void serve_until_a_wait_is_held() {
  const std::filesystem::path tiny = std::filesystem::path(TANDEM_SOURCE_DIR) / "models" / "tiny";
  std::ostringstream yaml;
  yaml << "server:\n  host: 127.0.0.1\n  port: 0\nmodels:\n  target:\n    path: "
       << (tiny / "target").string() << "\n  draft:\n    path: " << (tiny / "draft").string()
       << "\n";
  DeploymentConfig config = parse_deployment(yaml.str(), "test.yaml");
  std::atomic<bool> held{false};
  auto host = std::make_unique<HeldWaitHost>(config, held);
  ServerApp app(std::move(config), std::cerr, std::move(host));
  app.start();
  std::this_thread::sleep_for(300ms);  // serving, and nothing overdue yet
  std::cerr << "holding the wait" << std::endl;
  held = true;
  std::this_thread::sleep_for(60s);  // the watchdog ends the process long before
  std::exit(0);
}

TEST(StuckWaitDeathTest, AWaitHeldPastItsTimeoutEndsTheProcessNamingTheLostRank) {
  if (test_support::mpi_test_ranks() > 0 || std::getenv("TANDEM_TEST_BACKEND") != nullptr)
    GTEST_SKIP() << "one in-process CPU case is enough";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(serve_until_a_wait_is_held(), ::testing::ExitedWithCode(kLostRankExit),
              "holding the wait\n(.|\n)*rank 3 \\(target shard 1 of 2, on host node-d\\) did "
              "not return the result of target step 7 within 3 s \\(placement.step_timeout_"
              "seconds\\): it is lost; the thread waiting for it is held inside MPI: failing "
              "requests with 503 and ending the job");
}

}  // namespace
}  // namespace tandem
