// The `speculation:` section of a deployment: who drafts, γ, the n-gram
// drafter's range, pipelined drafting and the tuning constants of the γ
// controller (SpeculationTuning). Read by parse_deployment.
#pragma once

#include <string>
#include <vector>

#include "coordinator/config/config_section.h"
#include "coordinator/config/deployment_config.h"

namespace tandem::config {

// The largest fixed γ (speculation.gamma) and the largest ceiling for auto.
inline constexpr int kMaxGamma = 64;

// The keys it takes, in schema order.
const std::vector<std::string>& speculation_keys();

// has_draft: whether models.draft is configured (the default drafter is
// then the draft model).
SpeculationConfig read_speculation(const ConfigSection& section, bool has_draft);

}  // namespace tandem::config
