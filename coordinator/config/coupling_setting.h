// CouplingSetting: how sampled tokens are drawn and drafts checked
// (SamplingParams::coupling, kernels/sampling_params.h), as a deployment's
// `sampling.coupling` or a request's `speculation.coupling` asks for it: one
// of the two couplings, or automatic (gumbel for seeded requests, rejection
// otherwise; coordinator/api/coupling_choice.h resolves it).
#pragma once

namespace tandem {

enum class CouplingSetting { rejection, gumbel, automatic };

// "rejection", "gumbel" or "auto", as the YAML and the request spell them.
inline const char* coupling_setting_name(CouplingSetting coupling) {
  switch (coupling) {
    case CouplingSetting::rejection: return "rejection";
    case CouplingSetting::gumbel: return "gumbel";
    case CouplingSetting::automatic: return "auto";
  }
  return "?";
}

}  // namespace tandem
