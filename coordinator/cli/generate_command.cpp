// `tandem generate`: stream a completion of one prompt to stdout.
//
// Without a drafter this is plain autoregressive decoding (the baseline).
// With --draft DIR (a draft model) or --ngram (prompt lookup) it runs the
// speculative engine, whose output is exactly the target's, and --stats
// prints what speculation did.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "common/error.h"
#include "coordinator/cli/commands.h"
#include "coordinator/models/model_flags.h"
#include "workers/plain_decoder.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::cli {
namespace {

struct GenerateFlags {
  ModelFlags model;
  std::string prompt;
  int max_tokens = 64;
  double temperature = 0;
  int top_k = 0;
  double top_p = 1;
  std::int64_t seed = 0;
  std::string gamma = "4";
  std::string coupling = "auto";
  int max_gamma = 8;
  double lenience = 1;
  bool stats = false, no_special = false, ngram = false;
};

GammaPolicy parse_gamma(const GenerateFlags& flags) {
  GammaPolicy policy;
  const std::string& text = flags.gamma;
  if (text == "auto") {
    policy.automatic = true;
    policy.gamma = flags.max_gamma;
  } else {
    char* end = nullptr;
    policy.gamma = static_cast<int>(std::strtol(text.c_str(), &end, 10));
    require(!text.empty() && *end == '\0' && policy.gamma >= 0, ErrorKind::invalid_argument,
            "--gamma wants a draft length >= 0 or 'auto', got '" + text + "'");
  }
  return policy;
}

// --coupling: the CLI always draws with a seed (--seed, 0 by default), so
// auto is the gumbel coupling, as it is for a seeded request to the server,
// except under lenience below 1, which only Algorithm 1 (rejection) has.
Coupling parse_coupling(const GenerateFlags& flags) {
  const bool lenient = flags.lenience < 1;
  if (flags.coupling == "rejection") return Coupling::rejection;
  if (flags.coupling == "gumbel") {
    require(!lenient, ErrorKind::invalid_argument,
            "--coupling gumbel cannot be lenient: --lenience below 1 is Algorithm 1's "
            "(use --coupling rejection or auto)");
    return Coupling::gumbel;
  }
  require(flags.coupling == "auto", ErrorKind::invalid_argument,
          "--coupling wants rejection, gumbel or auto, got '" + flags.coupling + "'");
  return lenient ? Coupling::rejection : Coupling::gumbel;
}

int run_plain(OpenModel& open, const DecodeRequest& request, StreamingDecoder& text, bool stats_wanted) {
  const DecodeStats stats =
      decode_plain(*open.target.model, *open.target.cache, request, [&](int32_t token) {
        std::cout << text.push(token) << std::flush;
        return true;
      });
  std::cout << text.flush() << std::endl;
  if (stats_wanted) {
    const int later = stats.new_tokens - 1;
    std::fprintf(stderr,
                 "plain: prompt %d tokens, %d new; first token after %.1f ms; %.1f tokens/s "
                 "after it\n",
                 stats.prompt_tokens, stats.new_tokens, stats.prefill_seconds * 1e3,
                 later > 0 && stats.decode_seconds > 0 ? later / stats.decode_seconds : 0.0);
  }
  return 0;
}

int run_speculative(OpenModel& open, Drafter& drafter, SpeculationRequest request,
                    StreamingDecoder& text, bool stats_wanted) {
  SpeculativeEngine engine(*open.target.model, *open.target.cache, drafter);
  // An automatic γ is chosen with the target's measured v(k); a fixed one
  // does not need the second of timing passes.
  if (request.gamma.automatic) engine.calibrate();
  const int prompt_tokens = static_cast<int>(request.prompt.size());
  const float lenience = request.lenience;
  const SessionKey session = engine.add(std::move(request));
  const auto start = std::chrono::steady_clock::now();
  size_t shown = 0;
  while (!engine.finished(session)) {
    engine.step();
    const auto& out = engine.output(session);
    for (; shown < out.size(); ++shown) std::cout << text.push(out[shown]);
    std::cout << std::flush;
  }
  std::cout << text.flush() << std::endl;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const SpeculationResult result = engine.take(session);
  if (result.error) throw *result.error;  // its own fault (non-finite logits): the CLI reports it
  if (stats_wanted) {
    const SpeculationStats& s = result.stats;
    std::fprintf(stderr,
                 "speculative (%s drafter%s): prompt %d tokens, %zu new in %.3f s (%.1f tokens/s), "
                 "finish %s\n"
                 "  target steps %d, draft tokens %d, accepted %d, mean tokens per step %.2f\n"
                 "  alpha %.3f (mean beta), c %.3f, last gamma %d\n",
                 drafter.name().c_str(), lenience < 1.0f ? ", LOSSY: lenience < 1" : "",
                 prompt_tokens, result.tokens.size(), seconds, result.tokens.size() / seconds,
                 finish_reason_name(result.finish), s.target_steps, s.draft_tokens,
                 s.accepted_tokens,
                 s.target_steps ? static_cast<double>(result.tokens.size()) / s.target_steps : 0.0,
                 s.alpha(), engine.cost_ratio(drafter.name()),
                 s.last_gamma);
  }
  return 0;
}

int generate(const GenerateFlags& flags) {
  require(!flags.model.model.empty(), ErrorKind::invalid_argument,
          "generate needs --model DIR (a checkpoint with tokenizer.json)");
  require(!(flags.ngram && (!flags.model.draft.empty() || !flags.model.dummy_draft.empty())),
          ErrorKind::invalid_argument, "give at most one drafter: --draft DIR or --ngram");
  OpenModel open = open_model(flags.model);
  const Tokenizer& tokenizer = *open.target.tokenizer;

  SamplingParams sampling;
  sampling.temperature = static_cast<float>(flags.temperature);
  sampling.top_k = flags.top_k;
  sampling.top_p = static_cast<float>(flags.top_p);
  sampling.seed = static_cast<uint64_t>(flags.seed);
  sampling.coupling = parse_coupling(flags);
  require(sampling.temperature >= 0, ErrorKind::invalid_argument,
          "--temperature must be >= 0 (0 = greedy)");
  std::vector<int32_t> stop_ids = open.target.model->config().eos_token_ids;
  if (auto eos = tokenizer.eos_id(); eos && stop_ids.empty()) stop_ids = {*eos};
  const std::vector<int32_t> prompt = tokenizer.encode(flags.prompt, !flags.no_special);
  const int max_tokens = flags.max_tokens;
  StreamingDecoder text(tokenizer, /*skip_special=*/true);

  std::unique_ptr<Drafter> drafter;
  if (open.draft) drafter = std::make_unique<ModelDrafter>(*open.draft->model, *open.draft->cache);
  if (flags.ngram) drafter = std::make_unique<NgramDrafter>();
  if (!drafter) return run_plain(open, {prompt, max_tokens, sampling, stop_ids}, text, flags.stats);

  SpeculationRequest request;
  request.prompt = prompt;
  request.max_new_tokens = max_tokens;
  request.sampling = sampling;
  request.stop_ids = stop_ids;
  request.gamma = parse_gamma(flags);
  request.lenience = static_cast<float>(flags.lenience);
  return run_speculative(open, *drafter, std::move(request), text, flags.stats);
}

}  // namespace

Run define_generate(Command& command) {
  auto flags = std::make_shared<GenerateFlags>();
  add_model_flags(command, flags->model);
  add_value(command, "--prompt", flags->prompt, "the text to continue").required();
  add_value(command, "--max-tokens", flags->max_tokens, "new tokens at most");
  add_value(command, "--temperature", flags->temperature, "0 = greedy");
  add_value(command, "--top-k", flags->top_k, "keep the k most likely tokens; 0 = off");
  add_value(command, "--top-p", flags->top_p, "nucleus mass kept; 1 = off");
  add_value(command, "--seed", flags->seed, "seed of the sampling draws");
  add_value(command, "--gamma", flags->gamma,
            "tokens drafted per step (>= 0), or auto (chosen from measured alpha and costs)")
      .type_name("N|auto");
  add_value(command, "--max-gamma", flags->max_gamma, "the largest gamma auto may choose");
  add_value(command, "--coupling", flags->coupling,
            "how samples are drawn and drafts checked: gumbel (the output is the plain "
            "seeded output whatever the drafter and gamma), rejection (Algorithm 1, accepts "
            "more), or auto (gumbel unless --lenience < 1)")
      .type_name("rejection|gumbel|auto");
  add_value(command, "--lenience", flags->lenience,
            "1 = lossless; < 1 accepts more drafted tokens, no longer exactly the target's "
            "distribution");
  add_switch(command, "--stats", flags->stats, "print what decoding did to stderr");
  add_switch(command, "--no-special", flags->no_special,
                   "add no BOS/EOS from the tokenizer's template to the prompt");
  add_switch(command, "--ngram", flags->ngram, "draft by prompt lookup (n-grams of the text so far)");
  return [flags] { return generate(*flags); };
}

}  // namespace tandem::cli
