#include "workers/speculation/session_fault.h"

#include <optional>
#include <string>

namespace tandem {

Error session_fault_error(SessionFault fault, const SamplingParams& sampling) {
  const std::string alone = "; this request ended, the others in flight go on";
  switch (fault) {
    case SessionFault::bad_sampling:
      if (const std::optional<SamplingProblem> problem = find_sampling_problem(sampling))
        return Error(ErrorKind::invalid_argument, problem->field + ": " + problem->message);
      return Error(ErrorKind::invalid_argument,
                   "sampling parameters refused where this request's rows were sampled" + alone);
    case SessionFault::nonfinite_target_logits:
      return Error(ErrorKind::internal,
                   "non-finite logits for this request: the target model's logits for its "
                   "tokens hold NaN or infinity, so no token can be chosen from them" + alone);
    case SessionFault::nonfinite_draft_logits:
      return Error(ErrorKind::internal,
                   "non-finite logits for this request: the draft model's logits for its "
                   "tokens hold NaN or infinity, so no draft can be sampled from them" + alone);
    case SessionFault::invalid_token:
      return Error(ErrorKind::internal,
                   "verification returned a token outside the vocabulary for this request" + alone);
    case SessionFault::none:
      break;
  }
  return Error(ErrorKind::internal, "session_fault_error called without a fault");
}

}  // namespace tandem
