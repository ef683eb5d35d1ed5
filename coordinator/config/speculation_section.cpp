#include "coordinator/config/speculation_section.h"

#include <cstdint>
#include <optional>

namespace tandem::config {
namespace {

constexpr int kMaxNgram = 32;
// The tuning intervals count steps; a million is far past any useful one
// and keeps the probe interval's doubling clear of int overflow.
constexpr std::int64_t kMaxSteps = 1000000;

DrafterKind to_drafter(const std::string& word) {
  if (word == "model") return DrafterKind::model;
  if (word == "ngram") return DrafterKind::ngram;
  return DrafterKind::none;
}

// The γ controller's and pipelining's constants (speculation_tuning.h).
SpeculationTuning read_tuning(const ConfigSection& section) {
  SpeculationTuning tuning;
  const auto steps = [&](const char* key, int fallback, std::int64_t low) {
    return static_cast<int>(section.integer(key, fallback, low, kMaxSteps));
  };
  tuning.prior_alpha = section.number("prior_alpha", tuning.prior_alpha,
                                      Interval{.low = 0, .high = 1, .low_open = true, .high_open = true});
  tuning.prior_weight =
      section.number("prior_weight", tuning.prior_weight, Interval{.low = 0, .low_open = true});
  tuning.probe_every = steps("probe_every", tuning.probe_every, 1);
  tuning.max_probe_every = steps("max_probe_every", tuning.max_probe_every, 1);
  if (tuning.max_probe_every < tuning.probe_every) {
    // Name the key that was given: only a given one can break the order.
    if (section.has("max_probe_every")) {
      section.fail("max_probe_every", "must be >= speculation.probe_every (" +
                                          std::to_string(tuning.probe_every) + "), got " +
                                          std::to_string(tuning.max_probe_every));
    }
    section.fail("probe_every", "must be <= speculation.max_probe_every (" +
                                    std::to_string(tuning.max_probe_every) + "), got " +
                                    std::to_string(tuning.probe_every));
  }
  tuning.guard_explore_every = steps("guard_explore_every", tuning.guard_explore_every, 2);
  tuning.guard_min_steps = steps("guard_min_steps", tuning.guard_min_steps, 1);
  tuning.ahead_probe_every = steps("ahead_probe_every", tuning.ahead_probe_every, 1);
  return tuning;
}

PipelineMode to_pipeline_mode(const std::string& word) {
  return word == "off"        ? PipelineMode::off
         : word == "ahead"    ? PipelineMode::ahead
         : word == "pingpong" ? PipelineMode::pingpong
                              : PipelineMode::automatic;
}

}  // namespace

const std::vector<std::string>& speculation_keys() {
  static const std::vector<std::string> keys = {
      "drafter",          "gamma",           "max_gamma",          "prior_alpha",
      "prior_weight",     "probe_every",     "max_probe_every",    "guard_explore_every",
      "guard_min_steps",  "ngram_min",       "ngram_max",          "lenience",
      "pipeline",         "ahead_min_hit_rate", "ahead_probe_every"};
  return keys;
}

SpeculationConfig read_speculation(const ConfigSection& section, bool has_draft) {
  section.allow_only(speculation_keys());
  SpeculationConfig speculation;
  speculation.drafter =
      to_drafter(section.word("drafter", has_draft ? "model" : "none", {"model", "ngram", "none"}));
  if (speculation.drafter == DrafterKind::model && !has_draft) {
    section.fail("drafter",
                 "is model, but models.draft is not configured; add a models.draft section "
                 "or use ngram or none");
  }
  const char* gamma_forms = "\"auto\" or an integer";
  const std::optional<std::string> gamma = section.scalar("gamma", gamma_forms);
  speculation.gamma_auto = !gamma || *gamma == "auto";
  if (!speculation.gamma_auto) {
    speculation.gamma =
        static_cast<int>(section.to_integer("gamma", *gamma, 0, kMaxGamma, gamma_forms));
    if (speculation.drafter == DrafterKind::none && speculation.gamma > 0) {
      section.fail("gamma", "must be 0 or auto when speculation.drafter is none, got " + *gamma);
    }
  }
  speculation.max_gamma =
      static_cast<int>(section.integer("max_gamma", speculation.max_gamma, 1, kMaxGamma));
  speculation.tuning = read_tuning(section);
  speculation.ngram_min =
      static_cast<int>(section.integer("ngram_min", speculation.ngram_min, 1, kMaxNgram));
  speculation.ngram_max =
      static_cast<int>(section.integer("ngram_max", speculation.ngram_max, 1, kMaxNgram));
  if (speculation.ngram_min > speculation.ngram_max) {  // only a given ngram_min can exceed 1
    section.fail("ngram_min", "must be <= speculation.ngram_max (" +
                                  std::to_string(speculation.ngram_max) + "), got " +
                                  std::to_string(speculation.ngram_min));
  }
  speculation.lenience = section.number("lenience", speculation.lenience,
                                        Interval{.low = 0, .high = 1, .low_open = true});
  speculation.pipeline.mode =
      to_pipeline_mode(section.word("pipeline", "auto", {"auto", "off", "ahead", "pingpong"}));
  speculation.pipeline.min_hit_rate =
      section.number("ahead_min_hit_rate", speculation.pipeline.min_hit_rate,
                     Interval{.low = 0, .high = 1});
  return speculation;
}

}  // namespace tandem::config
