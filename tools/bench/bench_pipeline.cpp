// `tandem-bench pipeline`: pipelined drafting against lockstep drafting, side
// by side in one run, in one process: the draft model drafts on a thread of
// its own (ModelDrafter::run_apart) while the engine thread runs the target.
// Run with --threads 1 so the two each keep one core: on a 2-core
// machine that is "the draft and the target on separate cores". For each
// batch size it runs the same sessions with pipeline off (lockstep), ahead,
// pingpong and auto, each on an engine of its own warmed up once, and
// prints tokens/s, milliseconds per output token of a session, the ratio to
// lockstep, how busy each side was, and the draft-ahead hit rate. The bound
// column is what the lockstep run's measured times allow: hiding the
// shorter of draft and verify entirely gives (D + T) / max(D, T).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_sessions.h"
#include "tools/bench/bench_suites.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::bench {
namespace {


struct Measured {
  double tokens_per_second = 0;
  double ms_per_token = 0;  // of one session: its decode time over its tokens
  double draft_ms = 0, target_ms = 0, step_ms = 0;  // per step
  double draft_busy = 0, target_busy = 0;           // of step time
  int ahead = 0, hits = 0, pipelined = 0, steps = 0;
};

Measured run_batch(SpeculativeEngine& engine, const OpenModel& open, int batch, int max_tokens,
                   int gamma) {
  for (int i = 0; i < batch; ++i)
    engine.add(bench_session(open, i, max_tokens, /*temperature=*/0, GammaPolicy{false, gamma}));
  Measured m;
  double draft = 0, target = 0, steps_seconds = 0;
  const DecodeRun run = decode_all(engine, [&](const StepReport& step) {
    draft += step.draft_busy_seconds;
    target += step.target_seconds;
    steps_seconds += step.step_seconds;
    m.ahead += step.ahead_drafts;
    m.hits += step.ahead_hits;
    if (step.shape != StepShape::plain) ++m.pipelined;
  });
  m.steps = run.steps;
  m.tokens_per_second = run.tokens / run.seconds;
  m.ms_per_token = 1e3 * run.seconds / (static_cast<double>(run.tokens) / batch);
  m.draft_ms = 1e3 * draft / m.steps;
  m.target_ms = 1e3 * target / m.steps;
  m.step_ms = 1e3 * steps_seconds / m.steps;
  m.draft_busy = draft / steps_seconds;
  m.target_busy = target / steps_seconds;
  return m;
}

struct PipelineFlags {
  ModelFlags model;
  std::string batches = "1,8";
  int max_tokens = 64;
  int gamma = 4;
  int repeats = 3;
};

int bench_pipeline(const PipelineFlags& flags) {
  OpenModel open = open_model(flags.model);
  require(open.draft.has_value() && open.target.tokenizer.has_value(), ErrorKind::invalid_argument,
          "bench pipeline needs --model DIR and --draft DIR (checkpoints with a tokenizer)");
  const std::vector<double> batches = cli::parse_number_list("--batches", flags.batches);
  const int max_tokens = flags.max_tokens;
  const int gamma = flags.gamma;
  const int repeats = flags.repeats;
  require(repeats >= 1 && gamma >= 1, ErrorKind::invalid_argument,
          "--repeats and --gamma must be >= 1");
  ModelDrafter drafter(*open.draft->model, *open.draft->cache);
  drafter.run_apart(true);

  const PipelineMode modes[] = {PipelineMode::off, PipelineMode::ahead, PipelineMode::pingpong,
                                PipelineMode::automatic};
  std::printf("greedy, gamma %d, %d new tokens per session; the draft on its own thread; per "
              "mode one engine, one warm-up run, then the median of %d interleaved runs\n\n",
              gamma, max_tokens, repeats);
  std::printf("| batch | pipeline | tokens/s | vs lockstep | ms/token | vs lockstep | ms/step "
              "(draft; target) | draft busy | target busy | pipelined steps | ahead hits | "
              "bound |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (double b : batches) {
    const int batch = static_cast<int>(b);
    std::vector<std::unique_ptr<SpeculativeEngine>> engines;
    for (PipelineMode mode : modes) {
      engines.push_back(std::make_unique<SpeculativeEngine>(*open.target.model,
                                                            *open.target.cache, drafter));
      engines.back()->set_pipeline({mode, 0.2});
      engines.back()->calibrate();
    }
    std::vector<std::vector<Measured>> runs(std::size(modes));
    for (int r = 0; r <= repeats; ++r) {
      for (size_t m = 0; m < std::size(modes); ++m) {
        Measured one = run_batch(*engines[m], open, batch, max_tokens, gamma);
        if (r > 0) runs[m].push_back(one);  // r = 0 warms up
      }
    }
    std::vector<Measured> median(std::size(modes));
    for (size_t m = 0; m < std::size(modes); ++m) {
      std::sort(runs[m].begin(), runs[m].end(), [](const Measured& x, const Measured& y) {
        return x.tokens_per_second < y.tokens_per_second;
      });
      median[m] = runs[m][runs[m].size() / 2];
    }
    const Measured& lockstep = median[0];
    const double bound = (lockstep.draft_ms + lockstep.target_ms) /
                         std::max(lockstep.draft_ms, lockstep.target_ms);
    for (size_t m = 0; m < std::size(modes); ++m) {
      const Measured& x = median[m];
      std::printf("| %d | %s | %.0f | %.2fx | %.2f | %.2fx | %.2f (%.2f; %.2f) | %.2f | %.2f | "
                  "%d of %d | %d of %d | %.2fx |\n",
                  batch, m == 0 ? "off (lockstep)" : pipeline_mode_name(modes[m]),
                  x.tokens_per_second, x.tokens_per_second / lockstep.tokens_per_second,
                  x.ms_per_token, lockstep.ms_per_token / x.ms_per_token, x.step_ms, x.draft_ms,
                  x.target_ms, x.draft_busy, x.target_busy, x.pipelined, x.steps, x.hits, x.ahead,
                  bound);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

cli::Run define_pipeline(cli::Command& command) {
  auto flags = std::make_shared<PipelineFlags>();
  add_model_flags(command, flags->model);
  cli::add_number_list(command, "--batches", flags->batches, "the batch sizes to run");
  cli::add_value(command, "--max-tokens", flags->max_tokens, "new tokens per session");
  cli::add_value(command, "--gamma", flags->gamma, "the fixed gamma of every mode (>= 1)");
  cli::add_value(command, "--repeats", flags->repeats,
                 "measured runs per mode after one warm-up; the median is shown");
  return [flags] { return bench_pipeline(*flags); };
}

}  // namespace tandem::bench
