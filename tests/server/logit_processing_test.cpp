// Logit processing through the HTTP API, on the tiny pair: a penalized
// greedy request (penalties, logit_bias, min_tokens; model drafter at γ = 4)
// gives exactly the text of plain decoding with the same processing in this
// process (under `server_tests_under_mpirun` the server is a 4-rank MPI job,
// so the processing crossed the wire to the draft rank and target rank 0);
// stop_token_ids end a completion with finish_reason "stop"; min_tokens
// above max_tokens is a 400 naming min_tokens on both endpoints.
#include <gtest/gtest.h>

#include "coordinator/models/load_model.h"
#include "kernels/backend.h"
#include "tests/server/test_server.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::TestServer;

// Plain greedy decoding (γ = 0) of `prompt` by the engine in this process:
// its tokens, and their text.
struct Plain {
  std::vector<int32_t> tokens;
  std::string text;
};

Plain plain_processed(const std::string& prompt, int max_tokens, const LogitProcessing& processing,
                      bool stop_at_eos = true) {
  auto backend = make_cpu_backend();
  ModelSpec spec;
  spec.path = std::string(TANDEM_SOURCE_DIR) + "/models/tiny/target";
  LoadedModel target = load_model(spec, *backend);
  NoDrafter none;
  SpeculativeEngine engine(*target.model, *target.cache, none);
  SpeculationRequest request;
  request.prompt = target.tokenizer->encode(prompt, true);
  request.max_new_tokens = max_tokens;
  request.sampling.temperature = 0;
  if (stop_at_eos) request.stop_ids = {*target.tokenizer->eos_id()};
  request.gamma = GammaPolicy{false, 0};
  request.processing = processing;
  const SessionKey key = engine.add(request);
  engine.run_to_completion();
  Plain plain;
  plain.tokens = engine.take(key).tokens;
  plain.text = target.tokenizer->decode(plain.tokens, /*skip_special=*/true);
  return plain;
}

TEST(LogitProcessingApi, PenalizedGreedyTextIsPlainDecodingsInProcess) {
  TestServer server;
  LogitProcessing processing;
  processing.presence_penalty = 0.8f;
  processing.frequency_penalty = 0.5f;
  processing.repetition_penalty = 1.3f;
  processing.bias_tokens = {17, 42};
  processing.bias_values = {3.0f, -100.0f};
  processing.min_tokens = 8;
  for (const std::string prompt : {"The history of the city", "She said that"}) {
    const json reply = server.complete(
        {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}, {"presence_penalty", 0.8},
         {"frequency_penalty", 0.5}, {"repetition_penalty", 1.3}, {"min_tokens", 8},
         {"logit_bias", {{"17", 3}, {"42", -100}}}, {"speculation", {{"drafter", "model"}, {"gamma", 4}}}});
    const std::string text = reply["choices"][0]["text"];
    EXPECT_EQ(text, plain_processed(prompt, 40, processing).text) << prompt;
    EXPECT_NE(text, plain_processed(prompt, 40, LogitProcessing{}).text) << prompt << ": nothing changed";
    EXPECT_GT(reply["speculation"]["draft_tokens"].get<int>(), 0);
  }
}

TEST(LogitProcessingApi, StopTokenIdsEndTheCompletion) {
  TestServer server;
  // The token plain greedy decoding emits second, as a stop token id: the
  // completion ends right after its first occurrence.
  const Plain plain = plain_processed("She said that", 3, LogitProcessing{}, false);
  ASSERT_EQ(plain.tokens.size(), 3u);
  const int32_t stop = plain.tokens[1];
  const int expected = plain.tokens[0] == stop ? 1 : 2;
  const json reply = server.complete({{"prompt", "She said that"}, {"max_tokens", 3},
                                      {"temperature", 0}, {"ignore_eos", true},
                                      {"stop_token_ids", json::array({stop})}});
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(reply["usage"]["completion_tokens"], expected);
}

TEST(LogitProcessingApi, MinTokensAboveMaxTokensIsA400NamingIt) {
  TestServer server;
  for (const bool chat : {false, true}) {
    json body = {{"max_tokens", 4}, {"min_tokens", 5}};
    if (chat) body["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
    else body["prompt"] = "Hi";
    const json error = chat ? server.chat(body, 400) : server.complete(body, 400);
    EXPECT_EQ(error["error"]["param"], "min_tokens") << error.dump();
  }
  // At max_tokens it is fine.
  const json ok = server.complete({{"prompt", "Hi"}, {"max_tokens", 4}, {"min_tokens", 4},
                                   {"temperature", 0}});
  EXPECT_EQ(ok["usage"]["completion_tokens"], 4);
}

}  // namespace
}  // namespace tandem
