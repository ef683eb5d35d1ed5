// `tandem bench batching`: does speculation still pay when many sessions
// share each target pass? For each batch size B, B sessions decode together
// through one engine (as the server batches them) with speculation off, with
// a fixed γ, and with the automatic policy; it prints throughput and the
// ratio to "off" measured in the same run, plus the mean γ the automatic
// policy chose. The cost model (DESIGN.md) predicts that once the target is
// compute-bound, v(k) ≈ k, verification stops being free and auto must fall
// back towards γ = 0, never running slower than "off".
#include <chrono>
#include <cstdio>

#include "common/error.h"
#include "coordinator/cli/commands.h"
#include "coordinator/cli/model_options.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::cli {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kPrompts[] = {
    "The history of the city",       "In the morning, the committee",
    "She looked at the letter and",  "The results of the study show that",
    "When the war was over, the",    "He said that the new law",
    "The church stood on the hill",  "After dinner we walked down to the",
};

struct Run {
  double tokens_per_second = 0;
  double mean_gamma = 0;  // over steps, of the γ chosen per verifying session
};

Run run_batch(OpenModel& open, Drafter& model_drafter, int batch, int max_tokens,
              float temperature, const std::string& drafter, GammaPolicy gamma) {
  NoDrafter none;
  SpeculativeEngine engine(*open.target.model, *open.target.cache, {&model_drafter, &none});
  engine.calibrate();
  for (int i = 0; i < batch; ++i) {
    SpeculationRequest request;
    request.prompt = open.target.tokenizer->encode(kPrompts[i % std::size(kPrompts)]);
    request.max_new_tokens = max_tokens;
    request.sampling.temperature = temperature;
    request.sampling.seed = static_cast<uint64_t>(i + 1);
    request.gamma = gamma;
    request.drafter = drafter;
    engine.add(std::move(request));
  }
  long tokens = 0;
  double gamma_sum = 0;
  int steps = 0;
  const auto start = Clock::now();
  while (engine.running() + engine.waiting() > 0) {
    engine.step();
    for (const auto& session : engine.last_step().sessions) tokens += session.emitted;
    gamma_sum += engine.last_step().mean_gamma;
    ++steps;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {tokens / seconds, steps ? gamma_sum / steps : 0.0};
}

}  // namespace

int bench_batching(const Words& words) {
  auto options = model_option_names();
  options.insert({"batches", "max-tokens", "temperature", "gamma"});
  const Args args(words, options, {});
  OpenModel open = open_model(args);
  require(open.draft.has_value() && open.target.tokenizer.has_value(), ErrorKind::invalid_argument,
          "bench batching needs --model DIR and --draft DIR (checkpoints with a tokenizer)");
  const std::vector<double> batches = args.get_numbers("batches", "1,4,16,32");
  const int max_tokens = static_cast<int>(args.get_int("max-tokens", 64));
  const float temperature = static_cast<float>(args.get_numbers("temperature", "0").front());
  const int fixed_gamma = static_cast<int>(args.get_int("gamma", 4));
  ModelDrafter model_drafter(*open.draft->model, *open.draft->cache);

  std::printf("%d new tokens per session, temperature %.1f, drafter: the draft model\n\n", max_tokens,
              temperature);
  std::printf("| batch | off: tokens/s | gamma=%d: tokens/s | vs off | auto: tokens/s | vs off | "
              "auto mean gamma |\n|---|---|---|---|---|---|---|\n",
              fixed_gamma);
  for (double b : batches) {
    const int batch = static_cast<int>(b);
    const Run off = run_batch(open, model_drafter, batch, max_tokens, temperature, "none",
                              GammaPolicy{false, 0});
    const Run fixed = run_batch(open, model_drafter, batch, max_tokens, temperature, "model",
                                GammaPolicy{false, fixed_gamma});
    const Run automatic = run_batch(open, model_drafter, batch, max_tokens, temperature, "model",
                                    GammaPolicy{true, 8});
    std::printf("| %d | %.0f | %.0f | %.2fx | %.0f | %.2fx | %.2f |\n", batch, off.tokens_per_second,
                fixed.tokens_per_second, fixed.tokens_per_second / off.tokens_per_second,
                automatic.tokens_per_second, automatic.tokens_per_second / off.tokens_per_second,
                automatic.mean_gamma);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace tandem::cli
