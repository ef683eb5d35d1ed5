// step_seconds: the median time of one forward step in which each of `batch`
// sequences, already holding `context` tokens, adds k tokens. Shared by
// `tandem-bench steps` (v(k) tables) and `speculative` (the cost model).
#pragma once

#include "coordinator/models/load_model.h"

namespace tandem::bench {

double step_seconds(LoadedModel& m, int batch, int context, int k, int repeats);

}  // namespace tandem::bench
