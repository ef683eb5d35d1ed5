// `tandem-bench coupling`: what the Gumbel coupling costs against rejection
// sampling (kernels/sampling_params.h). For each temperature and γ, the same
// seeded sessions decode with speculation off, with rejection and with the
// Gumbel coupling: measured α (the mean β over verified drafts: 1 − TV for
// rejection, the fraction of drafts equal to the target's own token for
// gumbel), the bound the coupling guarantees beside it, tokens/s and the
// speed-up over "off" measured in the same run, and how many outputs equal
// the plain seeded output token for token (the coupling's promise; what
// rejection does not keep). Sessions run one at a time (batch 1), each
// policy through an engine of its own, interleaved; the median run is shown.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_sessions.h"
#include "tools/bench/bench_suites.h"
#include "tools/bench/coupling_bound.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::bench {
namespace {

struct CouplingFlags {
  ModelFlags model;
  std::string temperatures = "0.7,1";
  double top_p = 1.0;
  std::string gammas = "1,2,3,4,5,6,7,8";
  bool no_auto = false;
  int sessions = 8;
  int max_tokens = 32;  // the whole default table in ~3 minutes on 2 cores
  int repeats = 3;
};

// What one policy's engine runs: the sessions' sampling, drafter and γ.
struct Policy {
  SpeculativeEngine* engine = nullptr;
  Coupling coupling = Coupling::rejection;
  std::string drafter;
  GammaPolicy gamma;
};

// One run of every session through one engine.
struct Run {
  double tokens_per_second = 0;
  SpeculationStats stats;  // summed over the sessions
  std::vector<std::vector<int32_t>> outputs;
};

Run run_sessions(const OpenModel& open, const CouplingFlags& flags, float temperature,
                 const Policy& policy) {
  Run run;
  double seconds = 0;
  long tokens = 0;
  for (int i = 0; i < flags.sessions; ++i) {
    SpeculationRequest request = bench_session(open, i, flags.max_tokens, temperature, policy.gamma);
    request.sampling.top_p = static_cast<float>(flags.top_p);
    request.sampling.coupling = policy.coupling;
    request.drafter = policy.drafter;
    const auto start = std::chrono::steady_clock::now();
    const SessionKey key = policy.engine->add(std::move(request));
    policy.engine->run_to_completion();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    SpeculationResult result = policy.engine->take(key);
    require(result.finish != FinishReason::failed, ErrorKind::internal,
            "a bench session failed: " + (result.error ? std::string(result.error->what()) : std::string()));
    tokens += static_cast<long>(result.tokens.size());
    run.stats.target_steps += result.stats.target_steps;
    run.stats.draft_tokens += result.stats.draft_tokens;
    run.stats.beta_sum += result.stats.beta_sum;
    run.stats.beta_count += result.stats.beta_count;
    run.outputs.push_back(std::move(result.tokens));
  }
  run.tokens_per_second = tokens / seconds;
  return run;
}

// The measured runs of one policy at one row: the median throughput, α and
// mean drafted tokens per step over all of them, and how many of their
// outputs equal the plain ones.
struct Row {
  std::vector<double> throughputs;
  SpeculationStats stats;
  int identical = 0, outputs = 0;

  void add(const Run& run, const std::vector<std::vector<int32_t>>& plain) {
    throughputs.push_back(run.tokens_per_second);
    stats.target_steps += run.stats.target_steps;
    stats.draft_tokens += run.stats.draft_tokens;
    stats.beta_sum += run.stats.beta_sum;
    stats.beta_count += run.stats.beta_count;
    for (size_t i = 0; i < run.outputs.size(); ++i, ++outputs)
      identical += run.outputs[i] == plain[i] ? 1 : 0;
  }
  double median() const {
    std::vector<double> sorted = throughputs;
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  }
  double drafted_per_step() const {
    return stats.target_steps ? double(stats.draft_tokens) / stats.target_steps : 0;
  }
};

std::string gamma_text(const GammaPolicy& gamma, const Row& rejection, const Row& gumbel) {
  if (!gamma.automatic) return std::to_string(gamma.gamma);
  char text[64];
  std::snprintf(text, sizeof text, "auto (%.1f, %.1f)", rejection.drafted_per_step(),
                gumbel.drafted_per_step());
  return text;
}

int bench_coupling(const CouplingFlags& flags) {
  // The flags first: a bad one is refused before any model loads.
  require(flags.sessions >= 1 && flags.repeats >= 1 && flags.max_tokens >= 1,
          ErrorKind::invalid_argument, "--sessions, --repeats and --max-tokens must be >= 1");
  require(flags.top_p > 0 && flags.top_p <= 1, ErrorKind::invalid_argument,
          "--top-p must be in (0, 1]");
  const std::vector<double> temperatures =
      cli::parse_number_list("--temperatures", flags.temperatures);
  std::vector<GammaPolicy> gammas;
  int max_gamma = 1;
  for (double gamma : cli::parse_number_list("--gammas", flags.gammas)) {
    require(gamma >= 1, ErrorKind::invalid_argument, "--gammas: each must be >= 1");
    gammas.push_back(GammaPolicy{false, static_cast<int>(gamma)});
    max_gamma = std::max(max_gamma, static_cast<int>(gamma));
  }
  if (!flags.no_auto) gammas.push_back(GammaPolicy{true, max_gamma});
  for (double t : temperatures)
    require(t > 0, ErrorKind::invalid_argument, "--temperatures: each must be > 0 (greedy has no coupling)");
  OpenModel open = open_model(flags.model);
  require(open.draft.has_value() && open.target.tokenizer.has_value(), ErrorKind::invalid_argument,
          "bench coupling needs --model DIR and --draft DIR (checkpoints with a tokenizer)");

  // One engine per policy, as a server keeps one: what its cost model and
  // γ controller learn carries over from row to row. Only automatic γ reads
  // the calibrated cost model, so only then do the speculating engines pay
  // for calibration.
  ModelDrafter model_drafter(*open.draft->model, *open.draft->cache);
  NoDrafter none;
  auto make_engine = [&](bool calibrated) {
    auto engine = std::make_unique<SpeculativeEngine>(
        *open.target.model, *open.target.cache, std::vector<Drafter*>{&model_drafter, &none});
    if (calibrated) engine->calibrate();
    return engine;
  };
  auto off_engine = make_engine(false);
  auto rejection_engine = make_engine(!flags.no_auto), gumbel_engine = make_engine(!flags.no_auto);

  std::printf("%d sessions x %d new tokens, top-p %.2f, batch 1, drafter: the draft model; "
              "per policy one engine, the median of %d interleaved runs. alpha: mean beta over "
              "verified drafts; bound: the Gumbel coupling's guaranteed rate, mean of "
              "beta/(2-beta) over the plain outputs' positions, and f(alpha rejection) = "
              "alpha/(2-alpha) of this row; \"= plain\": outputs equal to the plain seeded output "
              "(off, gumbel coupling), of all runs; auto (mean drafted per step, rejection, gumbel)\n",
              flags.sessions, flags.max_tokens, flags.top_p, flags.repeats);
  for (double temperature : temperatures) {
    const float t = static_cast<float>(temperature);
    const Policy off{off_engine.get(), Coupling::gumbel, "none", GammaPolicy{false, 0}};
    // The plain seeded outputs (also the off engine's warm-up), and the
    // bound scored along them.
    const Run plain = run_sessions(open, flags, t, off);
    std::vector<PlainOutput> outputs;
    for (int i = 0; i < flags.sessions; ++i) {
      const SpeculationRequest session = bench_session(open, i, flags.max_tokens, t, {});
      outputs.push_back({session.prompt, plain.outputs[static_cast<size_t>(i)], session.sampling.seed});
    }
    SamplingParams sampling;
    sampling.temperature = t;
    sampling.top_p = static_cast<float>(flags.top_p);
    const PlainPathBound bound = score_plain_path(open, outputs, sampling);
    std::printf("\nT %.1f, along the %ld positions of the plain outputs: mean beta (1 - TV) %.3f; "
                "bound mean beta/(2-beta) %.3f >= f(mean beta) %.3f; exact Gumbel agreement %.3f; "
                "positions below the bound: %ld; plain tokens the race on these p rows gives: "
                "%ld/%ld; one row drawn on the host: race %.0f us, inverse CDF %.0f us\n\n",
                temperature, bound.positions, bound.mean_beta(), bound.mean_bound(),
                gumbel_bound(bound.mean_beta()), bound.mean_agreement(), bound.below_bound,
                bound.reproduced, bound.positions, bound.race_us(), bound.inverse_cdf_us());
    std::printf("| T | gamma | alpha rejection | alpha gumbel | bound: mean f(beta) | "
                "f(alpha rejection) | off tokens/s | rejection tokens/s | vs off | "
                "gumbel tokens/s | vs off | = plain: rejection | gumbel |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
    for (const GammaPolicy& gamma : gammas) {
      const Policy rejection{rejection_engine.get(), Coupling::rejection, "model", gamma};
      const Policy gumbel{gumbel_engine.get(), Coupling::gumbel, "model", gamma};
      if (&gamma == &gammas.front()) {  // warm-up at this temperature, unmeasured
        run_sessions(open, flags, t, rejection);
        run_sessions(open, flags, t, gumbel);
      }
      Row off_row, rejection_row, gumbel_row;
      for (int r = 0; r < flags.repeats; ++r) {
        off_row.add(run_sessions(open, flags, t, off), plain.outputs);
        rejection_row.add(run_sessions(open, flags, t, rejection), plain.outputs);
        gumbel_row.add(run_sessions(open, flags, t, gumbel), plain.outputs);
      }
      const double alpha_rejection = rejection_row.stats.alpha();
      std::printf("| %.1f | %s | %.3f | %.3f | %.3f | %.3f | %.0f | %.0f | %.2fx | %.0f | %.2fx | "
                  "%d/%d | %d/%d |\n",
                  temperature, gamma_text(gamma, rejection_row, gumbel_row).c_str(),
                  alpha_rejection, gumbel_row.stats.alpha(), bound.mean_bound(),
                  gumbel_bound(alpha_rejection), off_row.median(), rejection_row.median(),
                  rejection_row.median() / off_row.median(), gumbel_row.median(),
                  gumbel_row.median() / off_row.median(), rejection_row.identical,
                  rejection_row.outputs, gumbel_row.identical, gumbel_row.outputs);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

cli::Run define_coupling(cli::Command& command) {
  auto flags = std::make_shared<CouplingFlags>();
  add_model_flags(command, flags->model);
  cli::add_number_list(command, "--temperatures", flags->temperatures,
                       "the temperatures to run (each > 0)");
  cli::add_value(command, "--top-p", flags->top_p, "nucleus filter of every session, in (0, 1]");
  cli::add_number_list(command, "--gammas", flags->gammas, "the fixed gammas to run (each >= 1)");
  cli::add_switch(command, "--no-auto", flags->no_auto,
                  "no automatic-gamma row (else one, with the largest fixed gamma as its ceiling)");
  cli::add_value(command, "--sessions", flags->sessions,
                 "seeded sessions per run (the built-in English openings, cycled)");
  cli::add_value(command, "--max-tokens", flags->max_tokens, "new tokens per session");
  cli::add_value(command, "--repeats", flags->repeats,
                 "measured runs per policy and row; the median throughput is shown");
  return [flags] { return bench_coupling(*flags); };
}

}  // namespace tandem::bench
