#include "workers/speculation/pipeline_policy.h"

#include <algorithm>

namespace tandem {

const char* pipeline_mode_name(PipelineMode mode) {
  switch (mode) {
    case PipelineMode::off: return "off";
    case PipelineMode::automatic: return "auto";
    case PipelineMode::ahead: return "ahead";
    case PipelineMode::pingpong: return "pingpong";
  }
  return "?";
}

const char* step_shape_name(StepShape shape) {
  switch (shape) {
    case StepShape::plain: return "plain";
    case StepShape::ahead: return "ahead";
    case StepShape::pingpong: return "pingpong";
  }
  return "?";
}

double plain_block_seconds(const PipelineCosts& c) { return c.draft_all + c.target_all; }

double ahead_block_seconds(const PipelineCosts& c) {
  const double ahead = c.ahead_draft > 0 ? c.ahead_draft : c.ahead_factor * c.draft_all;
  return (1.0 - c.hit_rate) * c.draft_all + std::max(c.target_all, ahead);
}

double pingpong_block_seconds(const PipelineCosts& c) {
  return std::max(c.draft_group_a, c.target_group_b) + std::max(c.draft_group_b, c.target_group_a);
}

int pingpong_split(int n, const std::function<double(int)>& draft,
                   const std::function<double(int)>& target) {
  const int even = n / 2;
  if (n < 2) return 0;
  const auto cycle = [&](int a) {
    return std::max(draft(a), target(n - a)) + std::max(draft(n - a), target(a));
  };
  if (!(draft(1) > 0) || !(target(1) > 0)) return even;
  int best = even;
  double best_seconds = cycle(even);
  for (int a = 1; a < n; ++a) {
    const double seconds = cycle(a);
    if (seconds < best_seconds * (1 - 1e-9)) {  // strictly better than the even split
      best = a;
      best_seconds = seconds;
    }
  }
  return best;
}

StepShape choose_shape(const PipelinePolicy& policy, const PipelineCosts& costs, bool overlaps,
                       int decoding_sessions) {
  if (policy.mode == PipelineMode::off || !overlaps || decoding_sessions == 0) return StepShape::plain;
  if (policy.mode == PipelineMode::ahead) return StepShape::ahead;
  if (policy.mode == PipelineMode::pingpong)
    return decoding_sessions >= 2 ? StepShape::pingpong : StepShape::ahead;
  // Automatic: plain steps measure D and T first.
  if (!(costs.draft_all > 0) || !(costs.target_all > 0)) return StepShape::plain;
  StepShape best = StepShape::plain;
  double best_seconds = plain_block_seconds(costs);
  // A shape must beat plain by a margin: the estimates are noisy, and
  // switching back and forth costs catch-up drafting.
  constexpr double kMargin = 0.95;
  if (const double ahead = ahead_block_seconds(costs); ahead < kMargin * best_seconds) {
    best = StepShape::ahead;
    best_seconds = ahead;
  }
  if (decoding_sessions >= 2 && costs.draft_group_a > 0 && costs.target_group_a > 0) {
    if (const double pingpong = pingpong_block_seconds(costs); pingpong < kMargin * best_seconds)
      best = StepShape::pingpong;
  }
  return best;
}

}  // namespace tandem
