// SpeculativeEngine::calibrate(): the target cost model's first points,
// timed before serving so that γ is chosen with v(k) from the first step.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/error.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

constexpr int kRepeats = 3;  // the median of three passes per size

}  // namespace

// One target pass over `tokens` new tokens spread evenly over as few
// scratch sequences as the model's context allows, every token asking for
// logits (as a verification pass does). Returns its seconds, or a negative
// number when the cache cannot hold it; the sequences are released either way.
double SpeculativeEngine::timed_pass(int tokens) {
  const int context = config_.max_position_embeddings;
  const int V = config_.vocab_size;
  const int sequences = (tokens + context - 1) / context;
  TargetStep step;
  bool fits = true;
  for (int i = 0; i < sequences; ++i) {
    const int count = tokens / sequences + (i < tokens % sequences ? 1 : 0);
    TargetStep::Sequence sequence;
    sequence.seq = cache_.create_sequence();
    fits = fits && cache_.reserve(sequence.seq, count);
    sequence.tokens.resize(static_cast<size_t>(count));
    for (int j = 0; j < count; ++j) sequence.tokens[static_cast<size_t>(j)] = (7 + 31 * (i + j)) % V;
    sequence.logit_count = count;
    step.sequences.push_back(std::move(sequence));
  }
  double seconds = -1;
  if (fits) {
    TargetResult result;
    const auto start = std::chrono::steady_clock::now();
    run_target_step(step, {}, result);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (const auto& sequence : step.sequences) release_sequence(sequence.seq);
  return seconds;
}

void SpeculativeEngine::calibrate() {
  require(running_.empty(), ErrorKind::internal,
          "calibrate() times scratch passes over the target cache: call it before serving, "
          "while no session runs");
  std::vector<int> sizes;
  for (int n = 1; n < limits_.step_token_budget; n *= 2) sizes.push_back(n);
  sizes.push_back(limits_.step_token_budget);
  // The first pass at the largest size grows the model's workspace; it is
  // not a measurement. A size the cache cannot hold ends the calibration.
  while (!sizes.empty() && timed_pass(sizes.back()) < 0) sizes.pop_back();
  for (int n : sizes) {
    std::vector<double> times;
    for (int r = 0; r < kRepeats; ++r) {
      const double t = timed_pass(n);
      if (t < 0) break;
      times.push_back(t);
    }
    if (times.empty()) break;
    std::sort(times.begin(), times.end());
    cost_model_.record(n, times[times.size() / 2]);
  }
  cost_model_.mark_calibrated();
}

}  // namespace tandem
