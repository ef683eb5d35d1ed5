#include "kernels/sampling_params.h"

#include <cmath>
#include <cstdio>

namespace tandem {
namespace {

// A number as a person would write it (std::to_string prints 1e-9 as 0.000000).
std::string show(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace

std::optional<SamplingProblem> find_sampling_problem(const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f)
    return SamplingProblem{"temperature", "temperature must be finite and >= 0, got " +
                                              show(p.temperature) + "; use 0 for greedy decoding"};
  if (p.top_k < 0)
    return SamplingProblem{"top_k", "top_k must be >= 0, got " + std::to_string(p.top_k) +
                                        "; use 0 to disable top-k"};
  // Written so that NaN fails too.
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    return SamplingProblem{"top_p", "top_p must be in (0, 1], got " + show(p.top_p) +
                                        "; use 1 to disable top-p"};
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    return SamplingProblem{"min_p", "min_p must be in [0, 1], got " + show(p.min_p) +
                                        "; use 0 to disable min-p"};
  if (p.coupling != Coupling::rejection && p.coupling != Coupling::gumbel)
    return SamplingProblem{"coupling", "coupling must be rejection (0) or gumbel (1), got " +
                                           std::to_string(static_cast<int>(p.coupling))};
  return std::nullopt;
}

const char* coupling_name(Coupling coupling) {
  return coupling == Coupling::gumbel ? "gumbel" : "rejection";
}

}  // namespace tandem
