// step_seconds: the median time of one forward step in which each of `batch`
// sequences, already holding `context` tokens, adds k tokens. Shared by
// `bench steps` (v(k) tables) and `bench speculative` (the cost model).
#pragma once

#include "coordinator/cli/model_options.h"

namespace tandem::cli {

double step_seconds(LoadedModel& m, int batch, int context, int k, int repeats);

}  // namespace tandem::cli
