// SessionFault: a fault that belongs to one session, found inside a step
// where its rows are drafted or verified (in this process or on another
// rank, whence it travels in DraftReply and TargetResult). It ends that
// session alone, with an error naming the cause; the step goes on for the
// others, whose outputs stay exactly what they would have been without it
// (the forward pass is batch-invariant and every draw is keyed by the
// session's own seed and positions). A failure of the step itself (the
// backend, a lost rank) is an exception instead, and fails every session.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "kernels/sampling_params.h"

namespace tandem {

enum class SessionFault : uint8_t {
  none = 0,
  bad_sampling = 1,             // its sampling parameters are outside what the ops take
  nonfinite_target_logits = 2,  // the target's logits for its block hold NaN or infinity
  nonfinite_draft_logits = 3,   // the draft model's logits for it hold NaN or infinity
  invalid_token = 4,            // verification returned a token outside the vocabulary
};
// The largest value a SessionFault takes (the wire checks against it).
inline constexpr uint8_t kLastSessionFault = 4;

}  // namespace tandem

namespace tandem {

// The error a faulted session ends with, for its client: bad sampling
// parameters are the caller's (invalid_argument, naming the field of
// `sampling`), the rest internal. Each message says that this request
// alone ended.
Error session_fault_error(SessionFault fault, const SamplingParams& sampling);

}  // namespace tandem
