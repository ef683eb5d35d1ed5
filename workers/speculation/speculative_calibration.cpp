// SpeculativeEngine::calibrate(): the target cost model's first points,
// timed before serving so that γ is chosen with v(k) from the first step.
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

constexpr int kRepeats = 3;  // the median of three passes per size

}  // namespace

void SpeculativeEngine::calibrate() {
  require(planner_.running().empty(), ErrorKind::internal,
          "calibrate() times scratch passes over the target cache: call it before serving, "
          "while no session runs");
  std::vector<int> sizes;
  for (int n = 1; n < options_.step_token_budget; n *= 2) sizes.push_back(n);
  sizes.push_back(options_.step_token_budget);
  // The first pass at the largest size grows the model's workspace; it is
  // not a measurement. A size the cache cannot hold ends the calibration.
  while (!sizes.empty() && target_.timed_pass(sizes.back()) < 0) sizes.pop_back();
  for (int n : sizes) {
    std::vector<double> times;
    for (int r = 0; r < kRepeats; ++r) {
      const double t = target_.timed_pass(n);
      if (t < 0) break;
      times.push_back(t);
    }
    if (times.empty()) break;
    std::sort(times.begin(), times.end());
    gamma_.cost_model().record(n, times[times.size() / 2]);
  }
  gamma_.cost_model().mark_calibrated();
}

}  // namespace tandem
