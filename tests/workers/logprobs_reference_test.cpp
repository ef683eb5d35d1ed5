// The engine's logprobs against an independent float64 computation:
// tests/reference/logprobs_reference.py runs the NumPy forward pass of
// llama_reference.py over each output of the shipped tiny target (prompt,
// then the generated tokens) and scores them under the law each token was
// sampled from; prompt scores under the raw log-softmax. Greedy and seeded
// sampled outputs (temperature 0.8, top-k, top-p), speculative (model
// drafter, γ = 4), with prompt scores.
//
// Tolerance 1e-5 (the brief's), which float32 meets here with room: the
// engine's forward pass is float32 (bf16 weights widened exactly), the
// reference float64, and a logprob is a logit minus a log-sum-exp, so it
// carries the logits' float32 rounding (llama_forward_test allows 1e-4 of
// the row's largest logit for random weights); on the tiny target the
// largest difference seen was 1.7e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/support/tiny_models.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using test_support::kTinyPair;
using test_support::kTinyDraft;
using test_support::kTinyTarget;

namespace fs = std::filesystem;
constexpr double kTolerance = 1e-5;

// One TokenLogprob against the reference's [logprob, [[id, logprob], ...]].
double difference(const TokenLogprob& got, const nlohmann::json& want, const std::string& where) {
  double largest = std::abs(got.logprob - want[0].get<double>());
  const auto& top = want[1];
  EXPECT_EQ(got.top.size(), top.size()) << where;
  for (size_t i = 0; i < std::min(got.top.size(), top.size()); ++i) {
    const double reference = top[i][1].get<double>();
    // Two tokens within rounding of each other may trade places.
    if (got.top[i].first != top[i][0].get<int32_t>()) {
      EXPECT_NEAR(got.top[i].second, reference, kTolerance) << where << " top " << i;
    }
    largest = std::max(largest, std::abs(got.top[i].second - reference));
  }
  return largest;
}

TEST(LogprobsReference, EngineScoresMatchTheNumpyReference) {
  auto backend = make_cpu_backend();
  const ModelConfig target_config = load_model_config(kTinyTarget);
  const ModelConfig draft_config = load_model_config(kTinyDraft);
  LlamaModel target(target_config, load_llama_weights(kTinyTarget, target_config, *backend),
                    *backend);
  LlamaModel draft(draft_config, load_llama_weights(kTinyDraft, draft_config, *backend),
                   *backend);
  PagedKvCache target_cache(target_config, 64, 16, *backend);
  PagedKvCache draft_cache(draft_config, 64, 16, *backend);
  ModelDrafter drafter(draft, draft_cache);
  std::ifstream windows_file(kTinyPair / "eval_reference.json");
  const auto windows = nlohmann::json::parse(windows_file)
                           .at("windows").get<std::vector<std::vector<int32_t>>>();

  const SamplingParams settings[] = {{.temperature = 0.0f},
                                     {.temperature = 0.8f, .seed = 11},
                                     {.temperature = 0.8f, .top_k = 40, .seed = 12},
                                     {.temperature = 0.8f, .top_p = 0.9f, .seed = 13}};
  SpeculativeEngine engine(target, target_cache, drafter);
  std::vector<SpeculationRequest> requests;
  std::vector<SessionKey> keys;
  for (size_t i = 0; i < std::size(settings); ++i) {
    SpeculationRequest r;
    r.prompt.assign(windows[i].begin(), windows[i].begin() + 16);
    r.max_new_tokens = 16;
    r.sampling = settings[i];
    r.gamma = GammaPolicy{false, 4};
    r.logprobs = 5;
    r.prompt_logprobs = true;
    requests.push_back(r);
    keys.push_back(engine.add(r));
  }
  engine.run_to_completion();
  std::vector<SpeculationResult> results;
  nlohmann::json cases = nlohmann::json::array();
  for (size_t i = 0; i < keys.size(); ++i) {
    results.push_back(engine.take(keys[i]));
    const SamplingParams& s = requests[i].sampling;
    cases.push_back({{"prompt", requests[i].prompt}, {"tokens", results[i].tokens},
                     {"temperature", s.temperature}, {"top_k", s.top_k}, {"top_p", s.top_p},
                     {"top", requests[i].logprobs}, {"prompt_logprobs", true}});
  }

  const fs::path dir = fs::path(TANDEM_BINARY_DIR) / "test-data" /
                       ("logprobs_reference-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "cases.json") << cases.dump();
  const std::string command = std::string(TANDEM_PYTHON) + " " + TANDEM_SOURCE_DIR +
                              "/tests/reference/logprobs_reference.py " + (kTinyTarget).string() +
                              " " + (dir / "cases.json").string() + " " + (dir / "out.json").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream out_file(dir / "out.json");
  const nlohmann::json reference = nlohmann::json::parse(out_file);
  fs::remove_all(dir);

  ASSERT_EQ(reference.size(), results.size());
  double largest = 0;
  size_t scores = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string name = "session " + std::to_string(i);
    ASSERT_EQ(results[i].logprobs.size(), reference[i]["tokens"].size()) << name;
    ASSERT_EQ(results[i].prompt_logprobs.size(), reference[i]["prompt"].size()) << name;
    for (size_t j = 0; j < results[i].logprobs.size(); ++j)
      largest = std::max(largest, difference(results[i].logprobs[j], reference[i]["tokens"][j],
                                             name + " token " + std::to_string(j)));
    for (size_t j = 0; j < results[i].prompt_logprobs.size(); ++j)
      largest = std::max(largest, difference(results[i].prompt_logprobs[j], reference[i]["prompt"][j],
                                             name + " prompt token " + std::to_string(j + 1)));
    scores += results[i].logprobs.size() + results[i].prompt_logprobs.size();
  }
  EXPECT_EQ(scores, 4u * (16 + 15));
  EXPECT_LT(largest, kTolerance);
  std::printf("%zu scores (top 5 each); largest difference from float64 %.3g (tolerance %.0e)\n",
              scores, largest, kTolerance);
}

}  // namespace
}  // namespace tandem
