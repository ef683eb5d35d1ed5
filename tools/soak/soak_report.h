// The soak's reports: a short table for people and one JSON object with
// every figure (counts by kind and status class, the RSS series' summary,
// /health latency, the server's state after the traffic, pass/fail with
// reasons). tools/soak/README.md describes the JSON's keys.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tools/soak/soak_run.h"
#include "tools/soak/soak_verdict.h"

namespace tandem::soak {

// Ends with a newline; the last line says PASS or FAIL.
std::string soak_text(const SoakResult& result, const Verdict& verdict, const SoakLimits& limits);

nlohmann::json soak_json(const SoakResult& result, const Verdict& verdict, const SoakLimits& limits,
                         const SoakOptions& options);

}  // namespace tandem::soak
