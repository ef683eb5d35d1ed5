// `tandem-bench batching`: does speculation still pay when many sessions
// share each target pass? For each batch size B, B sessions decode together
// through one engine (as the server batches them) with speculation off, with
// a fixed γ, and with the automatic policy; it prints throughput and the
// ratio to "off" measured in the same run, plus the mean γ the automatic
// policy chose. The cost model (DESIGN.md) predicts that once the target is
// compute-bound, v(k) ≈ k, verification stops being free and auto must fall
// back towards γ = 0, never running slower than "off".
#include <algorithm>
#include <chrono>
#include <memory>
#include <cstdio>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_sessions.h"
#include "tools/bench/bench_suites.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::bench {
namespace {


struct Run {
  double tokens_per_second = 0;
  double mean_gamma = 0;  // over steps, of the γ chosen per verifying session
  double c = 0;           // the draft model's cost ratio at the end
  double v2 = 0, v5 = 0;  // v(B, 2) and v(B, 5) from the cost model
  // Mean milliseconds per step: all of it, drafting, the target pass.
  double step_ms = 0, draft_ms = 0, target_ms = 0;
};

// One batch through `engine` (kept across runs, as a server keeps it: what
// its cost model and guard learned carries over).
Run run_batch(SpeculativeEngine& engine, const OpenModel& open, int batch, int max_tokens,
              float temperature, const std::string& drafter, GammaPolicy gamma) {
  for (int i = 0; i < batch; ++i) {
    SpeculationRequest request = bench_session(open, i, max_tokens, temperature, gamma);
    request.drafter = drafter;
    engine.add(std::move(request));
  }
  double gamma_sum = 0, draft_seconds = 0, target_seconds = 0;
  const DecodeRun decoded = decode_all(engine, [&](const StepReport& step) {
    gamma_sum += step.mean_gamma;
    draft_seconds += step.draft_seconds;
    target_seconds += step.target_seconds;
  });
  const int steps = decoded.steps;
  const double seconds = decoded.seconds;
  Run run;
  run.tokens_per_second = decoded.tokens / seconds;
  run.mean_gamma = gamma_sum / steps;
  run.c = engine.cost_ratio("model");
  run.v2 = engine.cost_model().relative_cost(batch, 2);
  run.v5 = engine.cost_model().relative_cost(batch, 5);
  run.step_ms = 1e3 * seconds / steps;
  run.draft_ms = 1e3 * draft_seconds / steps;
  run.target_ms = 1e3 * target_seconds / steps;
  return run;
}

Run median_run(std::vector<Run> runs) {
  std::sort(runs.begin(), runs.end(),
            [](const Run& a, const Run& b) { return a.tokens_per_second < b.tokens_per_second; });
  return runs[runs.size() / 2];
}

struct BatchingFlags {
  ModelFlags model;
  std::string batches = "1,4,16,32";
  int max_tokens = 64;
  std::string temperature = "0";  // a list, of which the first is used
  int gamma = 4;
  int repeats = 3;
};

int bench_batching(const BatchingFlags& flags) {
  OpenModel open = open_model(flags.model);
  require(open.draft.has_value() && open.target.tokenizer.has_value(), ErrorKind::invalid_argument,
          "bench batching needs --model DIR and --draft DIR (checkpoints with a tokenizer)");
  const std::vector<double> batches = cli::parse_number_list("--batches", flags.batches);
  const int max_tokens = flags.max_tokens;
  const float temperature =
      static_cast<float>(cli::parse_number_list("--temperature", flags.temperature).front());
  const int fixed_gamma = flags.gamma;
  const int repeats = flags.repeats;
  require(repeats >= 1, ErrorKind::invalid_argument, "--repeats must be >= 1");
  ModelDrafter model_drafter(*open.draft->model, *open.draft->cache);

  std::printf("%d new tokens per session, temperature %.1f, drafter: the draft model; per policy "
              "one engine (as a server keeps one), one warm-up run, then the median of %d "
              "interleaved runs\n\n",
              max_tokens, temperature, repeats);
  std::printf("| batch | off: tokens/s | gamma=%d: tokens/s | vs off | auto: tokens/s | vs off | "
              "auto mean gamma | c | v(2) | v(5) | ms/step off; gamma=%d (draft + target) |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|\n",
              fixed_gamma, fixed_gamma);
  for (double b : batches) {
    const int batch = static_cast<int>(b);
    // One engine per policy, warmed up by one unmeasured run; then
    // interleaved repeats, the median run of each (this machine is noisy).
    NoDrafter none;
    auto make_engine = [&] {
      auto engine = std::make_unique<SpeculativeEngine>(
          *open.target.model, *open.target.cache, std::vector<Drafter*>{&model_drafter, &none});
      engine->calibrate();
      return engine;
    };
    auto off_engine = make_engine(), fixed_engine = make_engine(), auto_engine = make_engine();
    std::vector<Run> offs, fixeds, automatics;
    for (int r = 0; r <= repeats; ++r) {
      Run off_run = run_batch(*off_engine, open, batch, max_tokens, temperature, "none",
                              GammaPolicy{false, 0});
      Run fixed_run = run_batch(*fixed_engine, open, batch, max_tokens, temperature, "model",
                                GammaPolicy{false, fixed_gamma});
      Run auto_run = run_batch(*auto_engine, open, batch, max_tokens, temperature, "model",
                               GammaPolicy{true, 8});
      if (r == 0) continue;  // warm-up
      offs.push_back(off_run);
      fixeds.push_back(fixed_run);
      automatics.push_back(auto_run);
    }
    const Run off = median_run(offs), fixed = median_run(fixeds), automatic = median_run(automatics);
    std::printf(
        "| %d | %.0f | %.0f | %.2fx | %.0f | %.2fx | %.2f | %.2f | %.2f | %.2f | %.1f (%.1f); %.1f "
        "(%.1f + %.1f) |\n",
        batch, off.tokens_per_second, fixed.tokens_per_second,
        fixed.tokens_per_second / off.tokens_per_second, automatic.tokens_per_second,
        automatic.tokens_per_second / off.tokens_per_second, automatic.mean_gamma, automatic.c,
        automatic.v2, automatic.v5, off.step_ms, off.target_ms, fixed.step_ms, fixed.draft_ms,
        fixed.target_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

cli::Run define_batching(cli::Command& command) {
  auto flags = std::make_shared<BatchingFlags>();
  add_model_flags(command, flags->model);
  cli::add_number_list(command, "--batches", flags->batches, "the batch sizes to run");
  cli::add_value(command, "--max-tokens", flags->max_tokens, "new tokens per session");
  cli::add_number_list(command, "--temperature", flags->temperature, "sampling temperature");
  cli::add_value(command, "--gamma", flags->gamma, "the fixed gamma compared with off and auto");
  cli::add_value(command, "--repeats", flags->repeats,
                 "measured runs per policy after one warm-up; the median is shown");
  return [flags] { return bench_batching(*flags); };
}

}  // namespace tandem::bench
