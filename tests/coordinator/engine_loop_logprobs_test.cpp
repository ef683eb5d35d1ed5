// The engine loop publishing logprobs with text, on the tiny target with no
// drafter: each token's entry arrives with its text, and the end reports Σ
// logprob (what best_of ranks choices by).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include "coordinator/engine_loop/engine_loop.h"
#include "kernels/backend.h"
#include "tests/support/tiny_models.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem {
namespace {

using test_support::kTinyTarget;

struct Output {
  std::string text;
  std::vector<api::LogprobEntry> logprobs;
  CompletionEnd end;
};

class EngineLoopLogprobs : public ::testing::Test {
 protected:
  Output run(int logprobs, std::vector<std::string> stop_strings = {}) {
    CompletionJob job;
    job.request.prompt = {1, 40, 50, 60};
    job.request.max_new_tokens = 12;
    job.request.sampling = SamplingParams{.temperature = 0.0f};
    job.request.drafter = "none";
    job.request.logprobs = logprobs;
    job.logprobs = logprobs >= 0;
    job.stop_strings = std::move(stop_strings);
    job.received = SteadyClock::now();
    job.deadline = job.received + std::chrono::minutes(5);
    job.stream = std::make_shared<CompletionStream>([] {});
    const std::shared_ptr<CompletionStream> stream = job.stream;
    EXPECT_TRUE(loop.submit(job));
    Output out;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < give_up) {
      CompletionStream::Drained drained = stream->drain();
      out.text += drained.text;
      for (api::LogprobEntry& entry : drained.logprobs) out.logprobs.push_back(std::move(entry));
      if (drained.end) {
        out.end = std::move(*drained.end);
        return out;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "the job did not end within 60 s";
    return out;
  }

  void SetUp() override { loop.start(); }

  std::unique_ptr<Backend> backend = make_cpu_backend();
  ModelConfig config = load_model_config(kTinyTarget);
  LlamaModel model{config, load_llama_weights(kTinyTarget, config, *backend), *backend};
  PagedKvCache cache{config, 64, 16, *backend};
  NoDrafter none;
  SpeculativeEngine engine{model, cache, std::vector<Drafter*>{&none}};
  metrics::ServerMetrics metrics;
  std::ostringstream log;
  EngineLoop loop{engine, cache, nullptr, Tokenizer::load(kTinyTarget), metrics,
                  EngineLoopOptions{.max_queued = 8, .on_lost = {}, .log = &log, .drafters = {}}};
};

TEST_F(EngineLoopLogprobs, EachTokenHasItsEntryAndTheEndItsSum) {
  const Output plain = run(-1);
  EXPECT_TRUE(plain.logprobs.empty());
  EXPECT_FALSE(plain.end.cumulative_logprob.has_value());

  const Output scored = run(3);
  ASSERT_FALSE(scored.end.error) << scored.end.error->message;
  EXPECT_EQ(scored.text, plain.text);  // asking for logprobs changes no token
  ASSERT_EQ(scored.logprobs.size(), 12u);
  ASSERT_TRUE(scored.end.cumulative_logprob.has_value());
  EXPECT_NEAR(*scored.end.cumulative_logprob, api::sum_logprobs(scored.logprobs), 1e-9);
  for (const api::LogprobEntry& entry : scored.logprobs) {
    ASSERT_TRUE(entry.logprob.has_value());
    EXPECT_LE(*entry.logprob, 0.0);
    ASSERT_EQ(entry.top.size(), 3u);
    EXPECT_EQ(entry.top.front().first, entry.token);  // greedy: the likeliest was taken
  }
}

TEST_F(EngineLoopLogprobs, AStopStringDropsTheEntriesOfTheTextItCuts) {
  const Output whole = run(0);
  ASSERT_FALSE(whole.end.error) << whole.end.error->message;
  ASSERT_EQ(whole.logprobs.size(), 12u);
  // A stop string that is the text from the fourth token on: it completes
  // with the last token and cuts the text where the fourth token starts.
  const std::size_t cut_at = whole.logprobs[3].text_offset;
  ASSERT_GT(cut_at, 0u);
  const Output cut = run(0, {whole.text.substr(cut_at)});
  EXPECT_EQ(cut.end.finish_reason, "stop");
  EXPECT_EQ(cut.text, whole.text.substr(0, cut_at));
  const auto kept = std::count_if(whole.logprobs.begin(), whole.logprobs.end(),
                                  [&](const api::LogprobEntry& entry) { return entry.text_offset < cut_at; });
  ASSERT_EQ(cut.logprobs.size(), static_cast<std::size_t>(kept));
  for (std::size_t i = 0; i < cut.logprobs.size(); ++i) EXPECT_EQ(cut.logprobs[i].token, whole.logprobs[i].token);
  EXPECT_EQ(cut.end.usage.completion_tokens, 12);  // every token generated still counts
  ASSERT_TRUE(cut.end.cumulative_logprob.has_value());
  EXPECT_NEAR(*cut.end.cumulative_logprob, api::sum_logprobs(cut.logprobs), 1e-9);
}

}  // namespace
}  // namespace tandem
