// The engine loop's attribution of failures, on the tiny target: a
// request's own fault (here a sampling parameter the engine refuses,
// handed to the loop without the API's checks) ends that request alone
// with a 400 naming the field, unlogged, while the others finish as they
// would alone; a step that throws (the backend fails) ends every request
// in flight with a 500 and is logged, and the loop serves new requests
// afterwards; a step that never returns leaves abandon_all() to answer
// every request in flight from another thread.
#include "coordinator/engine_loop/engine_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "tests/support/forwarding_backend.h"
#include "tests/support/tiny_models.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem {
namespace {

using test_support::kTinyTarget;

// A backend whose matmuls throw while `broken` is set: a failure of the
// step itself, nobody's request's.
class BreakableBackend final : public test_support::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::atomic<bool> broken{false};
  // While held, a matmul waits (a step stuck where it cannot time out, as
  // a thread held inside MPI); `holding` says one is waiting.
  std::atomic<bool> held{false};
  std::atomic<bool> holding{false};
  void matmul(const float* x, WeightView w, const float* bias, int T, int Kin, int N,
              float* y) override {
    if (broken.load()) throw Error(ErrorKind::internal, "test backend: the device fell over");
    while (held.load()) {
      holding = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    holding = false;
    ForwardingBackend::matmul(x, w, bias, T, Kin, N, y);
  }
};

class EngineLoopFailures : public ::testing::Test {
 protected:
  CompletionJob job(std::vector<int32_t> prompt, SamplingParams sampling) {
    CompletionJob job;
    job.request.prompt = std::move(prompt);
    job.request.max_new_tokens = 12;
    job.request.sampling = sampling;
    job.request.drafter = "none";
    job.received = SteadyClock::now();
    job.deadline = job.received + std::chrono::minutes(5);
    job.stream = std::make_shared<CompletionStream>([] {});
    return job;
  }

  // Submits the jobs (all before the loop starts when it has not, so that
  // the first step holds them all) and waits for each one's end.
  std::vector<std::pair<std::string, CompletionEnd>> run(std::vector<CompletionJob> jobs) {
    std::vector<std::shared_ptr<CompletionStream>> streams;
    for (CompletionJob& j : jobs) {
      streams.push_back(j.stream);
      EXPECT_TRUE(loop.submit(j));
    }
    if (!started) loop.start();
    started = true;
    std::vector<std::pair<std::string, CompletionEnd>> ends;
    for (const auto& stream : streams) {
      std::string text;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      bool ended = false;
      while (!ended && std::chrono::steady_clock::now() < give_up) {
        CompletionStream::Drained drained = stream->drain();
        text += drained.text;
        if (drained.end) {
          ends.emplace_back(text, std::move(*drained.end));
          ended = true;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      if (!ended) ADD_FAILURE() << "a job did not end within 60 s";
    }
    return ends;
  }

  std::unique_ptr<Backend> cpu = make_cpu_backend();
  BreakableBackend backend{*cpu};
  ModelConfig config = load_model_config(kTinyTarget);
  LlamaModel model{config, load_llama_weights(kTinyTarget, config, backend), backend};
  PagedKvCache cache{config, 64, 16, backend};
  NoDrafter none;
  SpeculativeEngine engine{model, cache, std::vector<Drafter*>{&none}};
  metrics::ServerMetrics metrics;
  std::ostringstream log;
  EngineLoop loop{engine, cache, nullptr, Tokenizer::load(kTinyTarget), metrics,
                  EngineLoopOptions{.max_queued = 64, .on_lost = {}, .log = &log, .drafters = {}}};
  bool started = false;
  const SamplingParams greedy{.temperature = 0.0f};
  const SamplingParams seeded{.temperature = 0.8f, .top_k = 40, .top_p = 0.9f, .seed = 77};
};

TEST_F(EngineLoopFailures, ARequestsOwnBadParameterEndsItAloneUnlogged) {
  const std::vector<int32_t> a = {1, 40, 50, 60}, b = {1, 70, 80};
  const auto expected = run({job(a, greedy), job(b, seeded)});
  SamplingParams bad = seeded;
  bad.top_p = 0.0f;  // what a request's 1e-300 becomes as a float
  const auto got = run({job(a, greedy), job(b, bad), job(b, seeded)});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].first, expected[0].first);
  EXPECT_EQ(got[0].second.finish_reason, "length");
  EXPECT_FALSE(got[0].second.error);
  EXPECT_EQ(got[2].first, expected[1].first);
  EXPECT_FALSE(got[2].second.error);
  const CompletionEnd& poisoned = got[1].second;
  EXPECT_EQ(poisoned.finish_reason, "error");
  ASSERT_TRUE(poisoned.error.has_value());
  EXPECT_EQ(poisoned.error->status, 400);
  EXPECT_EQ(poisoned.error->param, "top_p");
  EXPECT_NE(poisoned.error->message.find("top_p must be in (0, 1]"), std::string::npos)
      << poisoned.error->message;
  EXPECT_EQ(log.str(), "");  // a request's own fault is its client's, not the log's
  EXPECT_EQ(cache.used_blocks(), 0);
}

TEST_F(EngineLoopFailures, AStepThatFailsEndsEveryRequestIsLoggedAndTheLoopServesOn) {
  const std::vector<int32_t> prompt = {1, 40, 50, 60};
  backend.broken = true;  // before the loop starts: its first step holds all three
  const auto failed = run({job(prompt, greedy), job(prompt, seeded), job({1, 9}, greedy)});
  backend.broken = false;
  ASSERT_EQ(failed.size(), 3u);
  for (const auto& [text, end] : failed) {
    EXPECT_EQ(end.finish_reason, "error");
    ASSERT_TRUE(end.error.has_value());
    EXPECT_EQ(end.error->status, 500);
    EXPECT_NE(end.error->message.find("engine step failed: test backend: the device fell over"),
              std::string::npos)
        << end.error->message;
  }
  EXPECT_NE(log.str().find("engine step failed, ending all 3 requests in flight: test backend: "
                           "the device fell over"),
            std::string::npos)
      << log.str();
  const auto after = run({job(prompt, greedy)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_FALSE(after[0].second.error);
  EXPECT_EQ(after[0].second.finish_reason, "length");
  EXPECT_EQ(after[0].second.usage.completion_tokens, 12);
}

TEST_F(EngineLoopFailures, AStepThatNeverReturnsLeavesAbandonAllToAnswerEveryRequest) {
  // One request ends before the step that holds; two are in that step.
  const auto done = run({job({1, 40, 50}, greedy)});
  ASSERT_EQ(done.size(), 1u);
  backend.held = true;
  // Released however the test ends, so that the loop can stop.
  const std::unique_ptr<std::atomic<bool>, void (*)(std::atomic<bool>*)> release(
      &backend.held, [](std::atomic<bool>* held) { held->store(false); });
  std::vector<CompletionJob> jobs = {job({1, 40, 50, 60}, greedy), job({1, 9}, seeded)};
  std::vector<std::shared_ptr<CompletionStream>> streams;
  for (CompletionJob& j : jobs) {
    streams.push_back(j.stream);
    ASSERT_TRUE(loop.submit(j));
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!backend.holding.load() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(backend.holding.load()) << "the step never reached the held matmul";

  loop.abandon_all(api::unavailable("rank 3 (target shard 1 of 2) is lost"));
  const int prompt_sizes[] = {4, 2};  // what each end's usage (and so the request log) reports
  for (size_t i = 0; i < streams.size(); ++i) {
    const CompletionStream::Drained drained = streams[i]->drain();
    ASSERT_TRUE(drained.end.has_value()) << "abandon_all did not end a request in flight";
    EXPECT_EQ(drained.end->finish_reason, "error");
    ASSERT_TRUE(drained.end->error.has_value());
    EXPECT_EQ(drained.end->error->status, 503);
    EXPECT_EQ(drained.end->error->message, "rank 3 (target shard 1 of 2) is lost");
    EXPECT_EQ(drained.end->usage.prompt_tokens, prompt_sizes[i]);
  }
  EXPECT_EQ(loop.in_flight(), 2u);  // the engine's own count is left as it is

  // Should the step come back after all, its sessions end as usual, and
  // the ends given already stand.
  backend.held = false;
  const auto after = run({job({1, 40, 50}, greedy)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].first, done[0].first);
  const auto drained_again = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (loop.in_flight() > 0 && std::chrono::steady_clock::now() < drained_again)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(loop.in_flight(), 0u);
  for (const auto& stream : streams) EXPECT_FALSE(stream->drain().end.has_value());
}

}  // namespace
}  // namespace tandem
