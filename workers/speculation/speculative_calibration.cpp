// SpeculativeEngine::calibrate(): the target cost model's first points,
// timed before serving so that γ is chosen with v(k) from the first step.
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

// The median of up to three passes per size. A size stops early once its
// passes have taken kEnoughSeconds: a long pass (a large prefill) varies
// little, and three at every size were most of a small deployment's start
// (the tiny pair under mpirun: 0.88 s of 1.7 s to ready, 0.50 s of it the
// second and third passes of 256 and 512 tokens, which differed by 3%).
constexpr int kRepeats = 3;
constexpr double kEnoughSeconds = 0.05;

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
    double spent = 0;
    for (int r = 0; r < kRepeats && spent < kEnoughSeconds; ++r) {
      const double t = target_.timed_pass(n);
      if (t < 0) break;
      times.push_back(t);
      spent += t;
    }
    if (times.empty()) break;
    std::sort(times.begin(), times.end());
    gamma_.cost_model().record(n, times[times.size() / 2]);
  }
  gamma_.cost_model().mark_calibrated();
}

}  // namespace tandem
