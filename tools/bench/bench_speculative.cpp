// `tandem-bench speculative`: the shape of the paper's Tables 2 and 4 on our
// own models. For each drafter, temperature and γ: measured α and c, tokens
// per target step, the speed-up over plain decoding of the same target
// measured in the same run, and the speed-up Theorem 3.8 predicts from the
// measured α and c. Sessions run one at a time (batch 1), as in the paper.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_suites.h"
#include "tools/bench/step_timer.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kDefaultPrompts[] = {
    "The history of the city",
    "In the morning, the committee",
    "She looked at the letter and",
    "The results of the study show that",
    "When the war was over, the",
    "He said that the new law",
    "The church stood on the hill",
    "After dinner we walked down to the",
};

struct SpeculativeFlags {
  ModelFlags model;
  int max_tokens = 64;
  int max_gamma = 8;
  std::string temperatures = "0,1";
  std::string prompts_file;
  bool no_ngram = false;
};

std::vector<std::vector<int32_t>> load_prompts(const SpeculativeFlags& flags,
                                               const OpenModel& open) {
  std::vector<std::vector<int32_t>> prompts;
  if (!open.target.tokenizer) {  // dummy weights: random token prompts
    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> pick(0, open.target.model->config().vocab_size - 1);
    for (int i = 0; i < 8; ++i) {
      std::vector<int32_t> prompt(16);
      for (auto& t : prompt) t = pick(rng);
      prompts.push_back(prompt);
    }
    return prompts;
  }
  std::vector<std::string> texts(std::begin(kDefaultPrompts), std::end(kDefaultPrompts));
  if (!flags.prompts_file.empty()) {
    std::ifstream file(flags.prompts_file);
    require(file.good(), ErrorKind::not_found, "cannot open --prompts-file " + flags.prompts_file);
    texts.clear();
    for (std::string line; std::getline(file, line);)
      if (!line.empty()) texts.push_back(line);
  }
  for (const auto& text : texts) prompts.push_back(open.target.tokenizer->encode(text));
  return prompts;
}

struct Measured {
  double seconds = 0;
  long tokens = 0;
  SpeculationStats stats;  // summed over prompts
  double c = 0;
};

Measured run_plain(OpenModel& open, const std::vector<std::vector<int32_t>>& prompts, int n,
                   SamplingParams sampling) {
  Measured m;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sampling.seed = i + 1;
    const auto start = Clock::now();
    const DecodeStats stats = decode_plain(*open.target.model, *open.target.cache,
                                           {prompts[i], n, sampling, {}}, [](int32_t) { return true; });
    m.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    m.tokens += stats.new_tokens;
  }
  return m;
}

Measured run_speculative(OpenModel& open, Drafter& drafter,
                         const std::vector<std::vector<int32_t>>& prompts, int n,
                         SamplingParams sampling, GammaPolicy gamma) {
  Measured m;
  SpeculativeEngine engine(*open.target.model, *open.target.cache, drafter);
  for (size_t i = 0; i < prompts.size(); ++i) {
    SpeculationRequest request;
    request.prompt = prompts[i];
    request.max_new_tokens = n;
    request.sampling = sampling;
    request.sampling.seed = i + 1;
    request.gamma = gamma;
    const auto start = Clock::now();
    const SessionKey key = engine.add(std::move(request));
    engine.run_to_completion();
    m.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    const SpeculationResult result = engine.take(key);
    m.tokens += static_cast<long>(result.tokens.size());
    m.stats.target_steps += result.stats.target_steps;
    m.stats.draft_tokens += result.stats.draft_tokens;
    m.stats.accepted_tokens += result.stats.accepted_tokens;
    m.stats.beta_sum += result.stats.beta_sum;
    m.stats.beta_count += result.stats.beta_count;
  }
  m.c = engine.cost_ratio(drafter.name());
  return m;
}

int bench_speculative(const SpeculativeFlags& flags) {
  OpenModel open = open_model(flags.model);
  require(open.draft.has_value(), ErrorKind::invalid_argument,
          "bench speculative needs a draft: --draft DIR or --dummy-draft CONFIG_JSON");
  const auto prompts = load_prompts(flags, open);
  const int n = flags.max_tokens;
  const int max_gamma = flags.max_gamma;
  const std::vector<double> temperatures =
      cli::parse_number_list("--temperatures", flags.temperatures);

  ModelDrafter model_drafter(*open.draft->model, *open.draft->cache);
  NgramDrafter ngram;
  std::vector<Drafter*> drafters{&model_drafter};
  if (!flags.no_ngram) drafters.push_back(&ngram);

  // v(k): a target step over k new tokens relative to one (Theorem 3.8
  // assumes 1); the DESIGN cost model divides by γc + v(γ+1) instead of γc + 1.
  std::vector<double> v{0.0, 1.0};
  const double t1 = step_seconds(open.target, 1, 32, 1, 15);
  for (int k = 2; k <= max_gamma + 1; ++k) v.push_back(step_seconds(open.target, 1, 32, k, 15) / t1);
  std::printf("%zu prompts x %d new tokens each, batch 1, no stop tokens; v(k) =", prompts.size(), n);
  for (int k = 2; k <= max_gamma + 1; ++k) std::printf(" %.2f", v[static_cast<size_t>(k)]);
  std::printf(" for k = 2..%d\n\n", max_gamma + 1);
  std::printf("| drafter | T | gamma | drafted/step | alpha | c | tokens/step | speed-up measured | "
              "predicted (Thm 3.8) | predicted with v(gamma+1) |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  for (double temperature : temperatures) {
    SamplingParams sampling;
    sampling.temperature = static_cast<float>(temperature);
    const Measured base = run_plain(open, prompts, n, sampling);
    const double base_per_token = base.seconds / base.tokens;
    for (Drafter* drafter : drafters) {
      for (int gamma = 1; gamma <= max_gamma + 1; ++gamma) {
        const bool automatic = gamma == max_gamma + 1;
        GammaPolicy policy{automatic, automatic ? max_gamma : gamma};
        const Measured m = run_speculative(open, *drafter, prompts, n, sampling, policy);
        const double alpha = m.stats.beta_count ? m.stats.beta_sum / m.stats.beta_count : 0;
        const double measured = base_per_token / (m.seconds / m.tokens);
        const std::string gamma_text = automatic ? "auto" : std::to_string(gamma);
        auto show = [&](double x) { return automatic ? std::string("-") : std::to_string(x).substr(0, 4) + "x"; };
        const double theorem = expected_speedup(alpha, m.c, gamma);
        const double with_v = expected_tokens_per_step(alpha, gamma) /
                              (gamma * m.c + v[static_cast<size_t>(std::min(gamma + 1, max_gamma + 1))]);
        std::printf("| %s | %.1f | %s | %.2f | %.3f | %.3f | %.2f | %.2fx | %s | %s |\n",
                    drafter->name().c_str(), temperature, gamma_text.c_str(),
                    static_cast<double>(m.stats.draft_tokens) / m.stats.target_steps, alpha, m.c,
                    static_cast<double>(m.tokens) / m.stats.target_steps, measured,
                    show(theorem).c_str(), show(with_v).c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace

cli::Run define_speculative(cli::Command& command) {
  auto flags = std::make_shared<SpeculativeFlags>();
  add_model_flags(command, flags->model);
  cli::add_value(command, "--max-tokens", flags->max_tokens, "new tokens per prompt");
  cli::add_value(command, "--max-gamma", flags->max_gamma,
                 "gamma runs 1..this, then auto with this ceiling");
  cli::add_number_list(command, "--temperatures", flags->temperatures, "the temperatures to run");
  cli::add_value(command, "--prompts-file", flags->prompts_file,
                 "prompts, one per line (default: eight English openings)")
      .type_name("FILE");
  cli::add_switch(command, "--no-ngram", flags->no_ngram, "the draft model only, no n-gram runs");
  return [flags] { return bench_speculative(*flags); };
}

}  // namespace tandem::bench
