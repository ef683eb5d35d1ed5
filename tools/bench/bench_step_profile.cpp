// `tandem-bench step-profile`: where one engine step's time goes, for plain
// decoding and for speculation at fixed γ, with the engine's own timers
// (StepReport). Decode steps only (steps that prefill are left out), so
// that a γ = 4 step can be set beside a 1-token step part by part: the
// draft (catch-up included), the target's forward pass, verification on
// the target, the rest of the target pass (building the step, the KV
// account) and the rest of the engine step (planning, γ, commit, prefix
// publishing). `plain` is decode_plain, the floor a γ = 0 step must meet.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_suites.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kPrompts[] = {
    "The history of the city",      "In the morning, the committee",
    "She looked at the letter and", "The results of the study show that",
    "When the war was over, the",   "He said that the new law",
    "The church stood on the hill", "After dinner we walked down to the",
};

struct ProfileFlags {
  ModelFlags model;
  int max_tokens = 64;
  std::string gammas = "0,1,4";
  std::string temperatures = "0,1";
  int batch = 1;
  int rounds = 2;
};

// Seconds summed over decode steps, and what they made.
struct Profile {
  long steps = 0;
  long tokens = 0;
  double step = 0, draft = 0, forward = 0, verify = 0, target = 0;
};

std::vector<std::vector<int32_t>> prompts_of(const OpenModel& open, int count) {
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < count; ++i) {
    const std::string text = kPrompts[static_cast<size_t>(i) % std::size(kPrompts)];
    if (open.target.tokenizer) {
      prompts.push_back(open.target.tokenizer->encode(text));
    } else {  // dummy weights: a few fixed ids
      prompts.push_back({static_cast<int32_t>(1 + i), 7, 11, 13});
    }
  }
  return prompts;
}

Profile profile_engine(OpenModel& open, Drafter& drafter, const ProfileFlags& flags,
                       SamplingParams sampling, int gamma) {
  Profile p;
  SpeculativeEngine engine(*open.target.model, *open.target.cache, drafter);
  const auto prompts = prompts_of(open, flags.batch);
  for (int round = 0; round < flags.rounds; ++round) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      SpeculationRequest request;
      request.prompt = prompts[i];
      request.max_new_tokens = flags.max_tokens;
      request.sampling = sampling;
      request.sampling.seed = i + 1;
      request.gamma = GammaPolicy{false, gamma};
      engine.add(std::move(request));
    }
    while (engine.running() > 0 || engine.waiting() > 0) {
      engine.step();
      const StepReport& r = engine.last_step();
      bool decode = !r.sessions.empty();
      int emitted = 0;
      for (const StepSessionReport& s : r.sessions) {
        decode = decode && s.prefill_tokens == 0 && s.verified;
        emitted += s.emitted;
      }
      if (!decode) continue;
      ++p.steps;
      p.tokens += emitted;
      p.step += r.step_seconds;
      p.draft += r.draft_seconds;
      p.forward += r.forward_seconds;
      p.verify += r.verify_seconds;
      p.target += r.target_seconds;
    }
  }
  return p;
}

Profile profile_plain(OpenModel& open, const ProfileFlags& flags, SamplingParams sampling) {
  Profile p;
  const auto prompts = prompts_of(open, flags.batch);
  for (int round = 0; round < flags.rounds; ++round) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      sampling.seed = i + 1;
      const DecodeStats stats = decode_plain(*open.target.model, *open.target.cache,
                                             {prompts[i], flags.max_tokens, sampling, {}},
                                             [](int32_t) { return true; });
      // The first token comes with the prefill; the rest are decode steps.
      p.steps += stats.new_tokens - 1;
      p.tokens += stats.new_tokens - 1;
      p.step += stats.decode_seconds;
    }
  }
  return p;
}

void print_row(const char* what, double temperature, const Profile& p, double plain_per_token) {
  const double ms = 1e3 / static_cast<double>(std::max(p.steps, 1L));
  const double per_token = p.step / static_cast<double>(std::max(p.tokens, 1L));
  const double target_rest = p.target - p.forward - p.verify;
  const double engine_rest = p.step - p.target - p.draft;
  std::printf("| %s | %.1f | %ld | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2fx |\n",
              what, temperature, p.steps,
              static_cast<double>(p.tokens) / static_cast<double>(std::max(p.steps, 1L)),
              p.step * ms, p.draft * ms, p.forward * ms, p.verify * ms, target_rest * ms,
              engine_rest * ms, per_token * 1e3, plain_per_token / per_token);
  std::fflush(stdout);
}

int bench_step_profile(const ProfileFlags& flags) {
  require(flags.batch >= 1 && flags.rounds >= 1 && flags.max_tokens >= 2,
          ErrorKind::invalid_argument, "--batch and --rounds must be >= 1, --max-tokens >= 2");
  OpenModel open = open_model(flags.model);
  require(open.draft.has_value(), ErrorKind::invalid_argument,
          "bench step-profile needs a draft: --draft DIR or --dummy-draft CONFIG_JSON");
  ModelDrafter model_drafter(*open.draft->model, *open.draft->cache);
  NoDrafter none;
  std::printf("%d sessions at once x %d new tokens, %d rounds; decode steps only; ms per step "
              "(draft includes the draft cache's catch-up; 'target rest' = the target pass "
              "beyond forward and verify; 'engine rest' = the step beyond draft and target "
              "pass)\n\n",
              flags.batch, flags.max_tokens, flags.rounds);
  std::printf("| run | T | steps | tokens/step | step | draft | forward | verify | target rest | "
              "engine rest | ms/token | vs plain |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (double temperature : cli::parse_number_list("--temperatures", flags.temperatures)) {
    SamplingParams sampling;
    sampling.temperature = static_cast<float>(temperature);
    double plain_per_token = 0;
    if (flags.batch == 1) {
      const Profile plain = profile_plain(open, flags, sampling);
      plain_per_token = plain.step / static_cast<double>(plain.tokens);
      print_row("plain (decode_plain)", temperature, plain, plain_per_token);
    }
    const Profile off = profile_engine(open, none, flags, sampling, 0);
    if (plain_per_token == 0) plain_per_token = off.step / static_cast<double>(off.tokens);
    print_row("engine, no drafter", temperature, off, plain_per_token);
    for (double g : cli::parse_number_list("--gammas", flags.gammas)) {
      const int gamma = static_cast<int>(g);
      const Profile p = profile_engine(open, model_drafter, flags, sampling, gamma);
      const std::string what = "engine, model drafter, gamma " + std::to_string(gamma);
      print_row(what.c_str(), temperature, p, plain_per_token);
    }
  }
  return 0;
}

}  // namespace

cli::Run define_step_profile(cli::Command& command) {
  auto flags = std::make_shared<ProfileFlags>();
  add_model_flags(command, flags->model);
  cli::add_value(command, "--max-tokens", flags->max_tokens, "new tokens per session");
  cli::add_number_list(command, "--gammas", flags->gammas, "the fixed gammas to profile");
  cli::add_number_list(command, "--temperatures", flags->temperatures, "the temperatures to run");
  cli::add_value(command, "--batch", flags->batch, "sessions decoding at once");
  cli::add_value(command, "--rounds", flags->rounds, "times the batch of sessions is run");
  return [flags] { return bench_step_profile(*flags); };
}

}  // namespace tandem::bench
