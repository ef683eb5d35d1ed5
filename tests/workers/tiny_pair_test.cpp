// The shipped tiny target/draft pair (models/tiny) through the C++ runtime:
// the held-out cross-entropy and the acceptance rate α that the training
// scripts computed in PyTorch (models/tiny/eval_reference.json, made by
// tools/train/eval.py) must come out of our loader + forward pass too,
// and greedy decoding of English prompts must give English words.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/tokenizer/tokenizer.h"
#include "tests/support/tiny_models.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"

namespace tandem {
namespace {

using test_support::kTinyPair;
using test_support::kTinyDraft;
using test_support::kTinyTarget;

namespace fs = std::filesystem;

struct Loaded {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<PagedKvCache> cache;
  explicit Loaded(const fs::path& dir) {
    ModelConfig config = load_model_config(dir);
    LlamaWeights weights = load_llama_weights(dir, config, *backend);
    cache = std::make_unique<PagedKvCache>(config, 64, 16, *backend);
    model = std::make_unique<LlamaModel>(std::move(config), std::move(weights), *backend);
  }
  // Logits (n, V) of every position of one window, from position 0.
  std::vector<float> window_logits(const std::vector<int32_t>& window) {
    const SequenceId seq = cache->create_sequence();
    EXPECT_TRUE(cache->reserve(seq, static_cast<int>(window.size())));
    SequenceStep step{seq, window, static_cast<int>(window.size())};
    const float* logits = model->forward(std::span(&step, 1), *cache);
    std::vector<float> out(logits, logits + window.size() * model->config().vocab_size);
    cache->release(seq);
    return out;
  }
};

std::vector<double> softmax(const float* row, int V) {
  std::vector<double> p(row, row + V);
  const double max = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& x : p) sum += (x = std::exp(x - max));
  for (double& x : p) x /= sum;
  return p;
}

nlohmann::json eval_reference() {
  std::ifstream file(kTinyPair / "eval_reference.json");
  EXPECT_TRUE(file.good()) << "models/tiny/eval_reference.json is missing (tools/train/eval.py)";
  return nlohmann::json::parse(file);
}

TEST(TinyPair, HeldOutCrossEntropyAndAlphaMatchPython) {
  const nlohmann::json ref = eval_reference();
  Loaded target(kTinyTarget), draft(kTinyDraft);
  const int V = target.model->config().vocab_size;
  ASSERT_EQ(V, draft.model->config().vocab_size);

  double ce_sum = 0, agree_sum = 0, overlap_sum = 0;
  long ce_count = 0, positions = 0;
  for (const auto& w : ref["windows"]) {
    const auto window = w.get<std::vector<int32_t>>();
    const auto p_logits = target.window_logits(window);
    const auto q_logits = draft.window_logits(window);
    for (size_t t = 0; t < window.size(); ++t) {
      const float* p_row = p_logits.data() + t * V;
      const float* q_row = q_logits.data() + t * V;
      const auto p = softmax(p_row, V);
      const auto q = softmax(q_row, V);
      if (t + 1 < window.size()) {
        ce_sum -= std::log(p[static_cast<size_t>(window[t + 1])]);
        ++ce_count;
      }
      agree_sum += std::max_element(p_row, p_row + V) - p_row ==
                   std::max_element(q_row, q_row + V) - q_row;
      for (int x = 0; x < V; ++x) overlap_sum += std::min(p[x], q[x]);
      ++positions;
    }
  }
  const double ce = ce_sum / ce_count;
  const double alpha_t0 = agree_sum / positions, alpha_t1 = overlap_sum / positions;
  const double ref_ce = ref["target_mean_ce"].get<double>();
  EXPECT_NEAR(ce, ref_ce, 0.01 * ref_ce) << "cross-entropy within 1% of PyTorch's";
  EXPECT_NEAR(alpha_t0, ref["alpha_T0"].get<double>(), 0.01);
  EXPECT_NEAR(alpha_t1, ref["alpha_T1"].get<double>(), 0.01);
  std::printf("C++: target CE %.4f (python %.4f), alpha T0 %.4f, T1 %.4f\n", ce, ref_ce, alpha_t0,
              alpha_t1);
}

// Words of the held-out text: a vocabulary the models never trained on.
std::set<std::string> held_out_words(const Tokenizer& tokenizer, const nlohmann::json& ref) {
  std::set<std::string> words;
  for (const auto& w : ref["windows"]) {
    std::istringstream text(tokenizer.decode(w.get<std::vector<int32_t>>()));
    for (std::string word; text >> word;) words.insert(word);
  }
  return words;
}

TEST(TinyPair, GreedyTargetContinuesEnglishWithEnglishWords) {
  const Tokenizer tokenizer = Tokenizer::load(kTinyTarget);
  const std::set<std::string> known = held_out_words(tokenizer, eval_reference());
  Loaded target(kTinyTarget);
  int words = 0, known_words = 0;
  for (const char* prompt : {"The house was", "In the morning, the", "He said that the"}) {
    DecodeRequest request;
    request.prompt = tokenizer.encode(prompt);
    request.max_new_tokens = 24;
    request.sampling.temperature = 0;
    std::vector<int32_t> out;
    decode_plain(*target.model, *target.cache, request, [&](int32_t t) {
      out.push_back(t);
      return true;
    });
    const std::string text = tokenizer.decode(out);
    std::printf("%s|%s\n", prompt, text.c_str());
    std::istringstream stream(text);
    for (std::string word; stream >> word; ++words) known_words += known.count(word);
  }
  ASSERT_GE(words, 15) << "greedy continuations should be made of words";
  EXPECT_GE(known_words, words * 6 / 10) << "most words should be English words";
}

}  // namespace
}  // namespace tandem
