// A request's `speculation.coupling` and the one rule that turns it, with
// the deployment's `sampling.coupling`, into the coupling a request runs
// (SamplingParams::coupling, kernels/sampling_params.h).
//
// The rule (docs/serving.md, "Seeds and the coupling"):
//   - an explicit "rejection" or "gumbel" in the request wins;
//   - "auto" (or no choice) takes the deployment's setting;
//   - the deployment's "auto" is gumbel for a request that carries a seed
//     (its text then repeats whatever γ, drafter or batch; with n > 1 every
//     choice's derived seed counts as seeded) and rejection otherwise (it
//     accepts the most drafted tokens);
//   - lenience below 1 loosens Algorithm 1's test, which only rejection has:
//     auto resolves to rejection there, and an explicit gumbel is refused.
// Greedy requests (temperature 0) resolve by the same rule; their tokens are
// the argmax whichever coupling is reported. Pure functions: thread-safe.
#pragma once

#include "coordinator/api/json_fields.h"
#include "coordinator/config/coupling_setting.h"
#include "kernels/sampling_params.h"               // Coupling

namespace tandem::api {

// "rejection", "gumbel" or "auto"; anything else is a 400 naming
// speculation.coupling.
CouplingSetting read_coupling(const Json& value);

// What the resolution depends on.
struct CouplingInputs {
  CouplingSetting requested = CouplingSetting::automatic;  // the request's speculation.coupling
  CouplingSetting deployed = CouplingSetting::automatic;   // the deployment's sampling.coupling
  bool seeded = false;                                     // the request has a `seed`
  float lenience = 1.0f;                                   // the deployment's speculation.lenience
};

// The coupling the request runs. Throws ApiError (400 naming
// speculation.coupling) for an explicit gumbel under lenience below 1;
// Error(invalid_argument) for a deployed gumbel under it (the config loader
// refuses that deployment, so only a hand-built one gets here).
Coupling resolve_coupling(const CouplingInputs& inputs);

}  // namespace tandem::api
